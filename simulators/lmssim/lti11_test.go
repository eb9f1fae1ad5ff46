package lmssim

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/oauth1"
	"github.com/ltiop/ltiop/internal/pox"
)

// postPOX sends a POX request to the simulator's outcomes service, signed with key and
// secret over signedBody, but carrying body.
func postPOX(t *testing.T, base, key, secret string, signedBody, body []byte, nonce string) *pox.Response {
	t.Helper()
	oauth, err := oauth1.Sign("POST", base+OutcomesPath, nil, key, secret, oauth1.MethodHMACSHA256, nonce,
		strconv.FormatInt(time.Now().Unix(), 10), oauth1.BodyHash(signedBody))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", base+OutcomesPath, bytes.NewReader(body))
	req.Header.Set("Authorization", oauth1.Authorization(oauth))
	req.Header.Set("Content-Type", pox.ContentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out, err := pox.ParseResponse(b)
	if err != nil {
		t.Fatalf("%d %s: %v", res.StatusCode, b, err)
	}
	return out
}

// The simulator's outcomes service is strict: it checks what ltiop must get right.
func TestOutcomesServiceChecksTheSignature(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	l, err := New(srv.URL, "c", "d")
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = l.Handler()
	l.EnableLTI11("ck", "secret")
	replace, _ := pox.Request(pox.OpReplace, "m1", SourcedID("u"), pox.Outcome{Score: 0.4})
	other, _ := pox.Request(pox.OpReplace, "m1", SourcedID("u"), pox.Outcome{Score: 1})

	// LTI11-BODY-01: a body that is not the one hashed and signed.
	if r := postPOX(t, srv.URL, "ck", "secret", replace, other, "n1"); r.Success() || !strings.Contains(r.Description, oauth1.ErrBodyHash.Error()) {
		t.Fatalf("a changed body: %+v", r)
	}
	if r := postPOX(t, srv.URL, "ck", "wrong", replace, replace, "n2"); r.Success() || !strings.Contains(r.Description, oauth1.ErrInvalidSignature.Error()) {
		t.Fatalf("a wrong secret: %+v", r)
	}
	if _, ok := l.Outcome(SourcedID("u")); ok {
		t.Fatal("a refused request stored a score")
	}
	if r := postPOX(t, srv.URL, "ck", "secret", replace, replace, "n3"); !r.Success() {
		t.Fatalf("a good request: %+v", r)
	}
	if r := postPOX(t, srv.URL, "ck", "secret", replace, replace, "n3"); r.Success() {
		t.Fatal("LTI11-NONCE-01: a replayed request succeeded")
	}
	if s, _ := l.Outcome(SourcedID("u")); s != "0.4" {
		t.Fatalf("score %q", s)
	}
}

// GET /start11 answers a browser with an auto-submitting LTI 1.1 launch, signed for the
// tool's launch URL.
func TestStart11SignsTheLaunch(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	l, err := New(srv.URL, "c", "d")
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = l.Handler()
	l.ToolRedirectURI = "https://tool.example.com/lti/launch"
	if res, _ := http.Get(srv.URL + Start11Path); res.StatusCode != http.StatusNotFound {
		t.Fatalf("without 1.1 credentials: %d", res.StatusCode)
	}
	l.EnableLTI11("ck", "secret")
	res, err := http.Get(srv.URL + Start11Path + "?user=u7")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	action, form, ok := ParseAutoSubmit(string(page))
	if !ok || action != l.ToolRedirectURI || form.Get("user_id") != "u7" || form.Get("lti_message_type") != "basic-lti-launch-request" {
		t.Fatalf("form %q %v %v", action, form, ok)
	}
	r := oauth1.Request{Method: "POST", URL: action, Params: oauth1.Params{}.FromValues(form)}
	if err := oauth1.Check(r, "secret", time.Now()); err != nil {
		t.Fatalf("the launch does not verify: %v", err)
	}
}
