package lmssim_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

const (
	oaClient   = "api-client-1"
	oaSecret   = "s3cret+/=&é" // characters that HTTP Basic must form-encode
	oaRedirect = "https://tool.example/oauth/callback?tenant=t1&x=a%20b"
	oaScope    = "url:GET|/api/v1/users/self/profile"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func newOAuthLMS(t *testing.T) *lmssim.LMS {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	lms, err := lmssim.New(srv.URL, "client-1", "deployment-1")
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = lms.Handler()
	lms.EnableOAuth2(oaClient, oaSecret)
	return lms
}

func pkcePair(t *testing.T) (verifier, challenge string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func authorizeQuery(challenge string) url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {oaClient}, "redirect_uri": {oaRedirect}, "state": {"st-1"},
		"scope": {oaScope}, "code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}
}

// authorizeRaw sends an authorization request and returns the response, not following it.
func authorizeRaw(t *testing.T, lms *lmssim.LMS, q url.Values) *http.Response {
	t.Helper()
	res, err := noRedirect.Get(lms.Issuer + lmssim.OAuthAuthorizePath + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// authorizeRedirect sends an authorization request that must redirect to oaRedirect and
// returns the parameters added to it.
func authorizeRedirect(t *testing.T, lms *lmssim.LMS, q url.Values) url.Values {
	t.Helper()
	res := authorizeRaw(t, lms, q)
	if res.StatusCode != http.StatusFound {
		t.Fatalf("authorize: HTTP %d, want 302", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	prefix := oaRedirect + "&"
	if !strings.HasPrefix(loc, prefix) {
		t.Fatalf("Location %q does not extend redirect_uri %q with its query kept", loc, oaRedirect)
	}
	added, err := url.ParseQuery(strings.TrimPrefix(loc, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return added
}

// authorize runs the authorization request of a fresh PKCE pair: the code and its verifier.
func authorize(t *testing.T, lms *lmssim.LMS) (code, verifier string) {
	t.Helper()
	verifier, challenge := pkcePair(t)
	got := authorizeRedirect(t, lms, authorizeQuery(challenge))
	if got.Get("state") != "st-1" || got.Get("code") == "" || got.Get("error") != "" {
		t.Fatalf("authorize answered %v", got)
	}
	return got.Get("code"), verifier
}

func codeForm(code, verifier string) url.Values {
	return url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {oaRedirect}, "code_verifier": {verifier},
		"client_id": {oaClient}, "client_secret": {oaSecret},
	}
}

func refreshForm(tok string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok}, "client_id": {oaClient}, "client_secret": {oaSecret}}
}

func postOAuthToken(t *testing.T, lms *lmssim.LMS, form url.Values, header map[string]string) reply {
	t.Helper()
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range header {
		h[k] = v
	}
	return send(t, "POST", lms.Issuer+lmssim.OAuthTokenPath, h, form.Encode())
}

// tokens checks a successful token answer and returns its access and refresh tokens.
func tokens(t *testing.T, rp reply) (access, refresh string) {
	t.Helper()
	if rp.Status != http.StatusOK {
		t.Fatalf("token: HTTP %d: %s", rp.Status, rp.Body)
	}
	if rp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", rp.Header.Get("Cache-Control"))
	}
	m := rp.json(t)
	access, _ = m["access_token"].(string)
	refresh, _ = m["refresh_token"].(string)
	if access == "" || refresh == "" || m["token_type"] != "Bearer" || m["expires_in"] != float64(3600) || m["scope"] != oaScope {
		t.Fatalf("token answer %v", m)
	}
	return access, refresh
}

func wantOAuthError(t *testing.T, rp reply, status int, code string) {
	t.Helper()
	if rp.Status != status {
		t.Fatalf("HTTP %d, want %d: %s", rp.Status, status, rp.Body)
	}
	if got := rp.json(t)["error"]; got != code {
		t.Fatalf("error %v, want %s: %s", got, code, rp.Body)
	}
}

func profile(t *testing.T, lms *lmssim.LMS, access string) reply {
	t.Helper()
	return call(t, "GET", lms.Issuer+lmssim.APIProfilePath, access, nil, "")
}

func TestOAuthDisabledUntilEnabled(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	lms, err := lmssim.New(srv.URL, "client-1", "deployment-1")
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = lms.Handler()
	for _, c := range []struct{ method, path string }{
		{"GET", lmssim.OAuthAuthorizePath}, {"POST", lmssim.OAuthTokenPath}, {"GET", lmssim.APIProfilePath},
	} {
		if rp := send(t, c.method, srv.URL+c.path, nil, ""); rp.Status != http.StatusNotFound {
			t.Errorf("%s %s: HTTP %d before EnableOAuth2, want 404", c.method, c.path, rp.Status)
		}
	}
	if lms.OAuthTokenRequests() != 0 {
		t.Error("token requests counted before EnableOAuth2")
	}
}

func TestOAuthCodeFlowWithPKCE(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	access, _ := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))

	rp := profile(t, lms, access)
	if rp.Status != http.StatusOK {
		t.Fatalf("profile: HTTP %d: %s", rp.Status, rp.Body)
	}
	m := rp.json(t)
	if m["id"] != float64(1) || m["name"] != "Ada Lovelace" || m["primary_email"] != "ada@example.edu" {
		t.Errorf("profile %v", m)
	}
	if n := lms.OAuthTokenRequests(); n != 1 {
		t.Errorf("OAuthTokenRequests = %d, want 1", n)
	}
}

func TestOAuthClientSecretBasic(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	form := codeForm(code, verifier)
	form.Del("client_secret")
	form.Del("client_id")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(oaClient)+":"+url.QueryEscape(oaSecret)))
	tokens(t, postOAuthToken(t, lms, form, map[string]string{"Authorization": basic}))

	// Both methods at once are refused.
	code, verifier = authorize(t, lms)
	wantOAuthError(t, postOAuthToken(t, lms, codeForm(code, verifier), map[string]string{"Authorization": basic}),
		http.StatusBadRequest, "invalid_request")
}

func TestOAuthRefreshRotation(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	access1, refresh1 := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))

	access2, refresh2 := tokens(t, postOAuthToken(t, lms, refreshForm(refresh1), nil))
	if access2 == access1 || refresh2 == refresh1 {
		t.Fatal("refresh did not issue a new access token and a new refresh token")
	}
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm(refresh1), nil), http.StatusBadRequest, "invalid_grant")

	// Without reuse detection the replay only fails: the current refresh token still works.
	access3, refresh3 := tokens(t, postOAuthToken(t, lms, refreshForm(refresh2), nil))
	if refresh3 == refresh2 {
		t.Fatal("refresh token not rotated")
	}
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm(refresh2), nil), http.StatusBadRequest, "invalid_grant")
	if rp := profile(t, lms, access3); rp.Status != http.StatusOK {
		t.Fatalf("profile with the refreshed token: HTTP %d", rp.Status)
	}

	// A refresh may narrow the scope, not widen it.
	f := refreshForm(refresh3)
	f.Set("scope", "url:GET|/api/v1/courses")
	wantOAuthError(t, postOAuthToken(t, lms, f, nil), http.StatusBadRequest, "invalid_scope")
	f.Set("scope", oaScope)
	tokens(t, postOAuthToken(t, lms, f, nil))
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm("no-such-token"), nil), http.StatusBadRequest, "invalid_grant")
}

func TestOAuthConcurrentRefreshOneWins(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	_, refresh := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() { statuses[i] = postOAuthToken(t, lms, refreshForm(refresh), nil).Status })
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("%d concurrent refreshes with one token succeeded (%v), want 1", ok, statuses)
	}
}

func TestOAuthCodeSingleUse(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	access, refresh := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
	wantOAuthError(t, postOAuthToken(t, lms, codeForm(code, verifier), nil), http.StatusBadRequest, "invalid_grant")
	// Without reuse detection the tokens already issued stay valid.
	if rp := profile(t, lms, access); rp.Status != http.StatusOK {
		t.Fatalf("profile: HTTP %d", rp.Status)
	}
	tokens(t, postOAuthToken(t, lms, refreshForm(refresh), nil))
	wantOAuthError(t, postOAuthToken(t, lms, codeForm("no-such-code", verifier), nil), http.StatusBadRequest, "invalid_grant")
}

func TestOAuthReuseDetectionRevokesTheGrant(t *testing.T) {
	lms := newOAuthLMS(t)
	lms.DetectOAuthReuse(true)

	code, verifier := authorize(t, lms)
	access, refresh := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
	wantOAuthError(t, postOAuthToken(t, lms, codeForm(code, verifier), nil), http.StatusBadRequest, "invalid_grant")
	if rp := profile(t, lms, access); rp.Status != http.StatusUnauthorized {
		t.Errorf("profile after code replay: HTTP %d, want 401", rp.Status)
	}
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm(refresh), nil), http.StatusBadRequest, "invalid_grant")

	code, verifier = authorize(t, lms)
	_, refresh1 := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
	access2, refresh2 := tokens(t, postOAuthToken(t, lms, refreshForm(refresh1), nil))
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm(refresh1), nil), http.StatusBadRequest, "invalid_grant")
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm(refresh2), nil), http.StatusBadRequest, "invalid_grant")
	if rp := profile(t, lms, access2); rp.Status != http.StatusUnauthorized {
		t.Errorf("profile after refresh replay: HTTP %d, want 401", rp.Status)
	}
}

func TestOAuthCodeExchangeChecks(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	otherVerifier, _ := pkcePair(t)
	for _, c := range []struct {
		name   string
		mutate func(url.Values)
		status int
		error  string
	}{
		{"wrong verifier", func(f url.Values) { f.Set("code_verifier", otherVerifier) }, 400, "invalid_grant"},
		{"malformed verifier", func(f url.Values) { f.Set("code_verifier", "too-short") }, 400, "invalid_grant"},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_grant"},
		{"wrong redirect_uri", func(f url.Values) { f.Set("redirect_uri", "https://tool.example/oauth/callback") }, 400, "invalid_grant"},
		{"no redirect_uri", func(f url.Values) { f.Del("redirect_uri") }, 400, "invalid_request"},
		{"no code", func(f url.Values) { f.Del("code") }, 400, "invalid_request"},
		{"wrong secret", func(f url.Values) { f.Set("client_secret", "nope") }, 401, "invalid_client"},
		{"no secret", func(f url.Values) { f.Del("client_secret") }, 401, "invalid_client"},
		{"wrong client", func(f url.Values) { f.Set("client_id", "other") }, 401, "invalid_client"},
		{"unsupported grant", func(f url.Values) { f.Set("grant_type", "client_credentials") }, 400, "unsupported_grant_type"},
		{"password grant", func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := codeForm(code, verifier)
			c.mutate(f)
			rp := postOAuthToken(t, lms, f, nil)
			wantOAuthError(t, rp, c.status, c.error)
			if c.status == 401 && rp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(oaClient+":wrong"))
	f := codeForm(code, verifier)
	f.Del("client_secret")
	wantOAuthError(t, postOAuthToken(t, lms, f, map[string]string{"Authorization": basic}), 401, "invalid_client")

	// Failed exchanges do not use the code up.
	tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
}

func TestOAuthTokenEndpointWantsAForm(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	rp := send(t, "POST", lms.Issuer+lmssim.OAuthTokenPath, map[string]string{"Content-Type": "application/json"},
		`{"grant_type":"authorization_code"}`)
	wantOAuthError(t, rp, http.StatusBadRequest, "invalid_request")
	f := codeForm(code, verifier)
	f.Add("code", code)
	wantOAuthError(t, postOAuthToken(t, lms, f, nil), http.StatusBadRequest, "invalid_request")
}

func TestOAuthFailToken(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	lms.FailOAuthToken(http.StatusServiceUnavailable)
	for range 2 {
		wantOAuthError(t, postOAuthToken(t, lms, codeForm(code, verifier), nil), http.StatusServiceUnavailable, "server_error")
	}
	lms.FailOAuthToken(0)
	_, refresh := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
	lms.FailOAuthToken(http.StatusInternalServerError)
	wantOAuthError(t, postOAuthToken(t, lms, refreshForm(refresh), nil), http.StatusInternalServerError, "server_error")
	lms.FailOAuthToken(0)
	tokens(t, postOAuthToken(t, lms, refreshForm(refresh), nil)) // the failure did not rotate it
	if n := lms.OAuthTokenRequests(); n != 5 {
		t.Errorf("OAuthTokenRequests = %d, want 5", n)
	}
}

func TestOAuthExpireCodes(t *testing.T) {
	lms := newOAuthLMS(t)
	code, verifier := authorize(t, lms)
	lms.ExpireOAuthCodes()
	wantOAuthError(t, postOAuthToken(t, lms, codeForm(code, verifier), nil), http.StatusBadRequest, "invalid_grant")
	code, verifier = authorize(t, lms) // codes issued afterwards are fresh
	tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
}

func TestOAuthProfileNeedsAValidToken(t *testing.T) {
	lms := newOAuthLMS(t)
	rp := profile(t, lms, "")
	if rp.Status != http.StatusUnauthorized || !strings.HasPrefix(rp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: HTTP %d, WWW-Authenticate %q", rp.Status, rp.Header.Get("WWW-Authenticate"))
	}
	if rp := profile(t, lms, "forged"); rp.Status != http.StatusUnauthorized {
		t.Errorf("unknown token: HTTP %d", rp.Status)
	}
	code, verifier := authorize(t, lms)
	access, refresh := tokens(t, postOAuthToken(t, lms, codeForm(code, verifier), nil))
	if rp := send(t, "GET", lms.Issuer+lmssim.APIProfilePath, map[string]string{"Authorization": "Basic " + access}, ""); rp.Status != http.StatusUnauthorized {
		t.Errorf("token with the wrong scheme: HTTP %d", rp.Status)
	}
	lms.ExpireOAuthAccessTokens()
	if rp := profile(t, lms, access); rp.Status != http.StatusUnauthorized {
		t.Errorf("expired token: HTTP %d", rp.Status)
	}
	access, _ = tokens(t, postOAuthToken(t, lms, refreshForm(refresh), nil))
	if rp := profile(t, lms, access); rp.Status != http.StatusOK {
		t.Errorf("refreshed token: HTTP %d", rp.Status)
	}
}

func TestOAuthAuthorizeRefusals(t *testing.T) {
	lms := newOAuthLMS(t)
	_, challenge := pkcePair(t)

	// Not redirected: the client or the redirect_uri cannot be trusted.
	for name, mutate := range map[string]func(url.Values){
		"unknown client":        func(q url.Values) { q.Set("client_id", "other") },
		"no client":             func(q url.Values) { q.Del("client_id") },
		"no redirect_uri":       func(q url.Values) { q.Del("redirect_uri") },
		"relative redirect":     func(q url.Values) { q.Set("redirect_uri", "/callback") },
		"redirect with #":       func(q url.Values) { q.Set("redirect_uri", "https://tool.example/cb#frag") },
		"non-http redirect":     func(q url.Values) { q.Set("redirect_uri", "javascript:alert(1)") },
		"repeated redirect_uri": func(q url.Values) { q.Add("redirect_uri", "https://evil.example/") },
	} {
		q := authorizeQuery(challenge)
		mutate(q)
		if res := authorizeRaw(t, lms, q); res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
			t.Errorf("%s: HTTP %d, Location %q; want 400, not redirected", name, res.StatusCode, res.Header.Get("Location"))
		}
	}

	// Redirected with error=invalid_request and the state.
	for name, mutate := range map[string]func(url.Values){
		"token response":   func(q url.Values) { q.Set("response_type", "token") },
		"no response_type": func(q url.Values) { q.Del("response_type") },
		"no PKCE": func(q url.Values) {
			q.Del("code_challenge")
			q.Del("code_challenge_method")
		},
		"plain PKCE":          func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"no method":           func(q url.Values) { q.Del("code_challenge_method") },
		"malformed challenge": func(q url.Values) { q.Set("code_challenge", "short") },
		"repeated state":      func(q url.Values) { q.Add("state", "st-2") },
	} {
		q := authorizeQuery(challenge)
		mutate(q)
		got := authorizeRedirect(t, lms, q)
		if got.Get("error") != "invalid_request" || got.Get("code") != "" || got.Get("state") != "st-1" {
			t.Errorf("%s: redirected with %v", name, got)
		}
	}
	q := authorizeQuery(challenge)
	q.Del("state")
	if got := authorizeRedirect(t, lms, q); got.Get("error") != "invalid_request" || got.Has("state") {
		t.Errorf("no state: redirected with %v", got)
	}

	// A redirect_uri without a query gets one.
	q = authorizeQuery(challenge)
	q.Set("redirect_uri", "https://tool.example/cb")
	res := authorizeRaw(t, lms, q)
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil || u.Host != "tool.example" || u.Path != "/cb" || u.Query().Get("code") == "" || u.Query().Get("state") != "st-1" {
		t.Errorf("Location %q", res.Header.Get("Location"))
	}
}
