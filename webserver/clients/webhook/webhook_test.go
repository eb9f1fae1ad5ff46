package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func mustKey(t testing.TB) []byte {
	t.Helper()
	k, err := ParseSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The Standard Webhooks reference vector: its secret, id, timestamp and body give this
// signature in every library of the convention.
func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	got := Sign(mustKey(t), "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestParseSecret(t *testing.T) {
	if _, err := ParseSecret("whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
	if _, err := ParseSecret("whsec_not base64!"); err == nil {
		t.Error("a secret that is not base64 was accepted")
	}
	if _, err := ParseSecret(strings.TrimPrefix(testSecret, SecretPrefix)); err != nil {
		t.Errorf("a secret without the prefix: %v", err)
	}
}

type received struct {
	header http.Header
	body   []byte
}

func integrator(t *testing.T, status int) (*httptest.Server, chan received) {
	got := make(chan received, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), b}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestDeliverSignsAndVerifies(t *testing.T) {
	srv, got := integrator(t, http.StatusNoContent)
	now := time.Unix(1_750_000_000, 0)
	s := &Sender{Client: NewClient(testoutbound.Public()), Key: func() []byte { return mustKey(t) }, Now: func() time.Time { return now }}
	body := []byte(`{"type":"lti.notice"}`)
	if err := s.Deliver(context.Background(), srv.URL+"/hook", "msg_1", body); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	r := <-got
	if r.header.Get("Content-Type") != "application/json" || r.header.Get(HeaderID) != "msg_1" {
		t.Errorf("headers = %v", r.header)
	}
	if err := Verify(mustKey(t), r.header, r.body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := Verify(mustKey(t), r.header, append(r.body, ' '), now, 5*time.Minute); err == nil {
		t.Error("a changed body verified")
	}
	if err := Verify([]byte("another key of twenty-four bytes"), r.header, r.body, now, 5*time.Minute); err == nil {
		t.Error("another key verified")
	}
	if err := Verify(mustKey(t), r.header, r.body, now.Add(time.Hour), 5*time.Minute); err == nil {
		t.Error("a stale timestamp verified")
	}
}

func TestDeliverFailures(t *testing.T) {
	key := func() []byte { return mustKey(t) }
	t.Run("non-2xx", func(t *testing.T) {
		srv, _ := integrator(t, http.StatusInternalServerError)
		err := (&Sender{Client: NewClient(testoutbound.Public()), Key: key}).Deliver(context.Background(), srv.URL, "m", []byte(`{}`))
		var se *StatusError
		if !errors.As(err, &se) || se.Status != 500 {
			t.Fatalf("Deliver = %v, want StatusError 500", err)
		}
	})
	t.Run("redirect not followed", func(t *testing.T) {
		srv, got := integrator(t, http.StatusOK)
		redir := testoutbound.NewRedirector(t, srv.URL)
		if err := (&Sender{Client: NewClient(testoutbound.Public()), Key: key}).Deliver(context.Background(), redir.URL, "m", []byte(`{}`)); err == nil {
			t.Fatal("a redirect counted as delivered")
		}
		if len(got) != 0 {
			t.Error("the redirect was followed")
		}
	})
	t.Run("SSRF: an internal address is refused", func(t *testing.T) {
		in := testoutbound.NewInternal(t)
		err := (&Sender{Client: NewClient(testoutbound.Public()), Key: key}).Deliver(context.Background(), in.URL, "m", []byte(`{}`))
		var oe *outbound.Error
		if !errors.As(err, &oe) {
			t.Fatalf("Deliver = %v, want an outbound refusal", err)
		}
		in.Untouched(t)
	})
	t.Run("no secret", func(t *testing.T) {
		srv, got := integrator(t, http.StatusOK)
		err := (&Sender{Client: NewClient(testoutbound.Public()), Key: func() []byte { return nil }}).Deliver(context.Background(), srv.URL, "m", []byte(`{}`))
		if !errors.Is(err, ErrNoSecret) || len(got) != 0 {
			t.Fatalf("Deliver without a secret = %v (sent %d)", err, len(got))
		}
	})
}

func BenchmarkSign(b *testing.B) {
	key := mustKey(b)
	body := []byte(strings.Repeat("x", 4096))
	b.ReportAllocs()
	for b.Loop() {
		_ = Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	}
}

// TestCallReturnsTheAnswer: Call signs as Deliver does and returns the status and the
// answer, bounded (the platform data API's calls).
func TestCallReturnsTheAnswer(t *testing.T) {
	var answer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if Verify(mustKey(t), r.Header, body, time.Now(), time.Minute) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	s := &Sender{Client: NewClient(testoutbound.Public()), Key: func() []byte { return mustKey(t) }}
	answer = `{"details":{"description":"no such line item"}}`
	status, got, err := s.Call(context.Background(), outbound.TargetPlatformData, srv.URL, "msg_2", []byte(`{"operation":"lineitems.get"}`), 1024)
	if err != nil || status != http.StatusNotFound || string(got) != answer {
		t.Fatalf("Call = %d %q %v", status, got, err)
	}
	answer = strings.Repeat("x", 2000)
	if _, _, err := s.Call(context.Background(), outbound.TargetPlatformData, srv.URL, "msg_3", []byte(`{}`), 1024); !errors.Is(err, ErrAnswerTooLarge) {
		t.Fatalf("a 2000-byte answer read with limit 1024: %v", err)
	}
	none := &Sender{Client: NewClient(testoutbound.Public()), Key: func() []byte { return nil }}
	if _, _, err := none.Call(context.Background(), outbound.TargetPlatformData, srv.URL, "msg_4", []byte(`{}`), 1024); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("without a secret: %v", err)
	}
}
