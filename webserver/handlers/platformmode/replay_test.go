package platformmode_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testredis"
	"github.com/ltiop/ltiop/test/utils/teststore"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

var pageCode = regexp.MustCompile(`Error <code>([A-Z_]+)</code> \(HTTP (\d+)\)`)

// With the replay store down, every platform-mode single use is refused the way its
// endpoint answers errors: the authorization endpoint posts an OIDC temporarily_unavailable
// to the tool, the launch API answers the 503 envelope, the token endpoint a 503 RFC 6749
// error, the deep-linking return a 503 page. Nothing was recorded, so each succeeds once
// the store is back.
func TestReplayStoreDownRefusesEverySingleUse(t *testing.T) {
	srv := testredis.Start(t)
	store := teststore.Redis(t, srv)
	h := newHarnessWithStore(t, nil, store)
	ctx := context.Background()
	const code = httpapi.CodeReplayStoreUnavailable

	// The authorization endpoint's nonce window.
	q := h.validAuth()
	srv.Stop()
	form := h.oidcError(h.authorize(q, false), q.Get("redirect_uri"))
	if form.Get("error") != "temporarily_unavailable" || !strings.HasPrefix(form.Get("error_description"), code+":") || form.Get("state") != q.Get("state") {
		t.Fatalf("authorize, store down: %v", form)
	}
	srv.Restart()
	payload := h.payloadFrom(h.authorize(q, false), "/launch")

	// The payload's single use.
	srv.Stop()
	if status, got, _ := h.apiError("/api/launches/idtoken", launchData(payload)); status != http.StatusServiceUnavailable || got != code {
		t.Fatalf("idtoken, store down: %d %s", status, got)
	}
	srv.Restart()
	if _, l := h.answerAndPost(launchData(payload)); !l.OK {
		t.Fatalf("idtoken, store back: the tool refused: %s", l.Err)
	}

	// The client assertion's jti.
	assertion, err := h.tool.ClientAssertion(h.ltiop.URL + "/lti/platform/token")
	if err != nil {
		t.Fatal(err)
	}
	tokenForm := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {toolsim.ClientAssertionType},
		"client_assertion": {assertion}, "scope": {scopeNRPS}}
	srv.Stop()
	tr, status, err := h.tool.PostToken(ctx, tokenForm)
	if err != nil || status != http.StatusServiceUnavailable || tr.Error != "temporarily_unavailable" ||
		!strings.HasPrefix(tr.ErrorDescription, code+":") || tr.AccessToken != "" {
		t.Fatalf("token, store down: %d %+v %v", status, tr, err)
	}
	srv.Restart()
	if tr, status, err := h.tool.PostToken(ctx, tokenForm); err != nil || status != http.StatusOK || tr.AccessToken == "" {
		t.Fatalf("token, store back: %d %+v %v", status, tr, err)
	}

	// The deep-linking response's nonce.
	l := h.deepLinkingLaunch("d", false)
	jwt, ret, err := h.tool.DeepLinkingResponse(l, []map[string]any{resourceLinkItem("Quiz")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	res, err := h.tool.PostDeepLinkingResponse(ctx, h.client, ret, jwt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if m := pageCode.FindStringSubmatch(string(b)); res.StatusCode != http.StatusServiceUnavailable || m == nil || m[1] != code || res.Header.Get("Location") != "" {
		t.Fatalf("deep-linking return, store down: %d %s", res.StatusCode, b)
	}
	srv.Restart()
	res, err = h.tool.PostDeepLinkingResponse(ctx, h.client, ret, jwt)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("deep-linking return, store back: %d", res.StatusCode)
	}
}
