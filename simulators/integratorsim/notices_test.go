package integratorsim

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ltiop/ltiop/simulators/stdwebhook"
)

// A webhook made with a key keeps only deliveries signed with it, as an integrator must;
// one made without keeps everything for its caller to check.
func TestWebhookVerifiesWhenGivenAKey(t *testing.T) {
	key := []byte("a key of at least twenty-four bytes")
	post := func(h *Webhook, signWith []byte) int {
		body := []byte(`{"type":"lti.notice"}`)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", stdwebhook.Signature(signWith, "msg_1", ts, body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	checked := NewWebhook(key)
	if got := post(checked, []byte("another key of twenty-four bytes")); got != http.StatusUnauthorized || len(checked.Received()) != 0 {
		t.Fatalf("a forged delivery: HTTP %d, kept %d", got, len(checked.Received()))
	}
	checked.SetStatus(http.StatusNoContent)
	if got := post(checked, key); got != http.StatusNoContent {
		t.Fatalf("a signed delivery: HTTP %d", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, err := checked.WaitFor(ctx, 1); err != nil || len(got) != 1 || got[0].Header.Get("webhook-id") != "msg_1" {
		t.Fatalf("WaitFor: %v %v", got, err)
	}
	unchecked := NewWebhook(nil)
	if got := post(unchecked, []byte("anything")); got != http.StatusOK || len(unchecked.Received()) != 1 {
		t.Fatalf("without a key: HTTP %d, kept %d", got, len(unchecked.Received()))
	}
	unchecked.Reset()
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := unchecked.WaitFor(short, 1); err == nil {
		t.Fatal("WaitFor returned with nothing received")
	}
}
