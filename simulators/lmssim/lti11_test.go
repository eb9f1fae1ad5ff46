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

	"github.com/ltiop/ltiop/webserver/lti11"
)

// postPOX sends a POX request to the simulator's outcomes service, signed with key and
// secret over signedBody, but carrying body.
func postPOX(t *testing.T, base, key, secret string, signedBody, body []byte, nonce string) *lti11.POXResponse {
	t.Helper()
	oauth, err := lti11.Sign("POST", base+OutcomesPath, nil, key, secret, lti11.MethodHMACSHA256, nonce,
		strconv.FormatInt(time.Now().Unix(), 10), lti11.BodyHash(signedBody))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", base+OutcomesPath, bytes.NewReader(body))
	req.Header.Set("Authorization", lti11.Authorization(oauth))
	req.Header.Set("Content-Type", lti11.POXContentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out, err := lti11.ParsePOXResponse(b)
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
	replace, _ := lti11.POXRequest(lti11.OpReplace, "m1", SourcedID("u"), lti11.Outcome{Score: 0.4})
	other, _ := lti11.POXRequest(lti11.OpReplace, "m1", SourcedID("u"), lti11.Outcome{Score: 1})

	// LTI11-BODY-01: a body that is not the one hashed and signed.
	if r := postPOX(t, srv.URL, "ck", "secret", replace, other, "n1"); r.Success() || !strings.Contains(r.Description, lti11.CodeBodyHashMismatch) {
		t.Fatalf("a changed body: %+v", r)
	}
	if r := postPOX(t, srv.URL, "ck", "wrong", replace, replace, "n2"); r.Success() || !strings.Contains(r.Description, lti11.CodeInvalidSignature) {
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
