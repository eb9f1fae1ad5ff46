package oauthbroker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/handlers/oauthbroker"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

const (
	returnURL = "https://app.example/oauth/return"
	otherURL  = "https://other.example/lms/done"
)

// harness is ltiop's broker on a loopback server, with a registry fed by hand, a keyring,
// and a simulated LMS authorization server.
type harness struct {
	as      *fakeAS
	reg     *registry.Registry
	keyring *sessions.Keyring
	broker  *oauthbroker.Broker
	ltiop   *httptest.Server
	configs map[string]*oauthbroker.ClientConfig
}

func newHarness(t *testing.T, mutate func(*oauthbroker.Options)) *harness {
	t.Helper()
	return newHarnessWithStore(t, mutate, replay.NewMemory(1<<17))
}

// newHarnessWithStore is newHarness with the replay store given.
func newHarnessWithStore(t *testing.T, mutate func(*oauthbroker.Options), replays replay.Store) *harness {
	t.Helper()
	h := &harness{as: newFakeAS(t), reg: registry.New()}
	mux := http.NewServeMux()
	h.ltiop = httptest.NewServer(mux)
	t.Cleanup(h.ltiop.Close)

	for _, p := range []struct {
		id     string
		active bool
	}{{"canvas", true}, {"d2l", true}, {"off", false}, {"plain", true}} {
		h.apply(p.id, types.UID(p.id+"-uid"), p.active)
	}
	client := oauthbroker.ClientConfig{ClientID: h.as.clientID, ClientSecret: h.as.clientSecret,
		AuthorizeURL: h.as.authorizeURL(), TokenURL: h.as.tokenURL(), Scopes: []string{"url:GET|/api/v1/courses"}}
	d2l := client
	d2l.Scopes = nil
	h.configs = map[string]*oauthbroker.ClientConfig{"canvas": &client, "d2l": &d2l, "off": &client}
	resolve := func(_ context.Context, p *registry.Platform) (*oauthbroker.ClientConfig, error) {
		if cc := h.configs[p.ID]; cc != nil {
			c := *cc
			return &c, nil
		}
		return nil, fmt.Errorf("platform %s: %w", p.ID, oauthbroker.ErrNotConfigured)
	}

	key, err := keyring.Sealing.NewKey(time.Now().Add(-time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.keyring, err = sessions.NewKeyring([]keyring.SealingKey{key}); err != nil {
		t.Fatal(err)
	}
	opts := oauthbroker.Options{
		PublicURL: h.ltiop.URL, ReturnURL: returnURL, AllowedReturnURLs: []string{otherURL}, DevMode: true,
		HTTPClient: outbound.NewClient(testoutbound.Dev()), // the fake LMS is on loopback
	}
	if mutate != nil {
		mutate(&opts)
	}
	h.broker = oauthbroker.New(opts, h.reg, resolve, h.keyring, replays)
	mux.HandleFunc("GET /oauth/start/{platformId}", h.broker.Start)
	mux.HandleFunc("GET /oauth/callback", h.broker.Callback)
	mux.HandleFunc("POST /api/oauth/access-token/{platformId}", h.broker.AccessToken)
	mux.HandleFunc("POST /api/oauth/access-token/{platformId}/refresh", h.broker.Refresh)
	return h
}

func (h *harness) apply(id string, uid types.UID, active bool) {
	h.reg.Apply(&ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: "ns", UID: uid, Generation: 1},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL("https://" + id + ".lms.example"), ClientID: "lti-" + id, Name: id,
			AuthenticationEndpoint: ltiv1.EndpointURL("https://" + id + ".lms.example/auth"),
			AccesstokenEndpoint:    ltiv1.EndpointURL("https://" + id + ".lms.example/token"),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://" + id + ".lms.example/jwks"},
			Active:                 ptr.To(active),
		},
	})
}

// browser is a user agent with its own cookies that follows no redirect by itself.
type browser struct{ c *http.Client }

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (br *browser) get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	res, err := br.c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// authorize runs Start and the LMS's authorize endpoint; it returns the callback URL the
// LMS sends the browser to.
func (h *harness) authorize(t *testing.T, br *browser, platform, query string) string {
	t.Helper()
	u := h.ltiop.URL + "/oauth/start/" + platform
	if query != "" {
		u += "?" + query
	}
	res, body := br.get(t, u)
	if res.StatusCode != http.StatusFound {
		t.Fatalf("start: %d %s", res.StatusCode, body)
	}
	res, body = br.get(t, res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %s", res.StatusCode, body)
	}
	cb := res.Header.Get("Location")
	if !strings.HasPrefix(cb, h.ltiop.URL+"/oauth/callback?") {
		t.Fatalf("the LMS redirected to %s", cb)
	}
	return cb
}

// code runs the browser part of the flow and returns the one-time code and the final URL.
func (h *harness) code(t *testing.T, br *browser, platform, query string) (string, *url.URL) {
	t.Helper()
	res, body := br.get(t, h.authorize(t, br, platform, query))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}
	dest, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	code := dest.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", dest)
	}
	return code, dest
}

type apiResult struct {
	Status       int
	TokenType    string `json:"tokenType"`
	AccessToken  string `json:"accessToken"`
	ExpiresIn    *int64 `json:"expiresIn"`
	RefreshToken string `json:"refreshToken"`
	Scope        string `json:"scope"`
	Details      struct {
		Message        string `json:"message"`
		Description    string `json:"description"`
		ExternalError  bool   `json:"externalError"`
		UpstreamStatus int    `json:"upstreamStatus"`
		UpstreamBody   string `json:"upstreamBody"`
	} `json:"details"`
	raw string
}

func (h *harness) post(t *testing.T, path string, body any) apiResult {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(h.ltiop.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := apiResult{Status: res.StatusCode, raw: string(raw)}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %d %s", path, res.StatusCode, raw)
	}
	return out
}

func (h *harness) accessToken(t *testing.T, platform, code string) apiResult {
	t.Helper()
	return h.post(t, "/api/oauth/access-token/"+platform, map[string]string{"code": code})
}

func (h *harness) refresh(t *testing.T, platform, token string) apiResult {
	t.Helper()
	return h.post(t, "/api/oauth/access-token/"+platform+"/refresh", map[string]string{"refreshToken": token})
}

func expect(t *testing.T, got apiResult, status int, code string) {
	t.Helper()
	if got.Status != status || got.Details.Message != code {
		t.Fatalf("got %d %s, want %d %s: %s", got.Status, got.Details.Message, status, code, got.raw)
	}
}

func TestRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	br := newBrowser(t)

	// Start: the redirect to the LMS and the binding cookie.
	res, body := br.get(t, h.ltiop.URL+"/oauth/start/canvas?return_url="+url.QueryEscape(otherURL+"?next=%2Fcourses"))
	if res.StatusCode != http.StatusFound {
		t.Fatalf("start: %d %s", res.StatusCode, body)
	}
	auth, _ := url.Parse(res.Header.Get("Location"))
	q := auth.Query()
	if auth.Scheme+"://"+auth.Host+auth.Path != h.as.srv.URL+authorizePath || q.Get("tenant") != "t1" {
		t.Errorf("authorize URL %s", auth)
	}
	want := map[string]string{"response_type": "code", "client_id": h.as.clientID,
		"redirect_uri": h.ltiop.URL + "/oauth/callback", "scope": "url:GET|/api/v1/courses", "code_challenge_method": "S256"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("authorize %s = %q, want %q", k, q.Get(k), v)
		}
	}
	if len(q.Get("code_challenge")) != 43 || q.Get("state") == "" {
		t.Errorf("code_challenge %q, state %q", q.Get("code_challenge"), q.Get("state"))
	}
	cookies := res.Cookies()
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0].Name, "ltiop_oauth_") || !cookies[0].HttpOnly ||
		cookies[0].Path != "/oauth/" || cookies[0].SameSite != http.SameSiteLaxMode || cookies[0].Secure || cookies[0].MaxAge != 600 {
		t.Errorf("binding cookie %+v", cookies)
	}
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Error("the start redirect is cacheable")
	}

	// The LMS, then the callback: the code exchange verifies PKCE.
	res, body = br.get(t, res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %s", res.StatusCode, body)
	}
	res, body = br.get(t, res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}
	var form url.Values
	h.as.set(func(as *fakeAS) {
		if as.pkceVerified != 1 {
			t.Errorf("PKCE verified %d times", as.pkceVerified)
		}
		form = as.tokenForms[0]
	})
	if v := form.Get("code_verifier"); len(v) != 43 || oauthbroker.PKCEChallenge(v) != q.Get("code_challenge") {
		t.Errorf("code_verifier %q does not match the challenge", v)
	}
	if form.Get("redirect_uri") != h.ltiop.URL+"/oauth/callback" || form.Get("grant_type") != "authorization_code" {
		t.Errorf("token request %v", form)
	}
	dest, _ := url.Parse(res.Header.Get("Location"))
	if dest.Host != "other.example" || dest.Path != "/lms/done" || dest.Query().Get("next") != "/courses" {
		t.Errorf("returned to %s", dest)
	}
	if cs := res.Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("the binding cookie is not cleared: %+v", cs)
	}
	code := dest.Query().Get("code")
	if strings.Contains(code, "lms-") {
		t.Error("the one-time code shows the LMS token")
	}

	// The one-time code for the tokens.
	tok := h.accessToken(t, "canvas", code)
	if tok.Status != http.StatusOK || tok.TokenType != "Bearer" || tok.AccessToken != "lms-access-1" ||
		tok.Scope != "url:GET|/api/v1/courses" || tok.RefreshToken == "" {
		t.Fatalf("access token: %s", tok.raw)
	}
	if tok.ExpiresIn == nil || *tok.ExpiresIn < 3590 || *tok.ExpiresIn > 3600 {
		t.Errorf("expiresIn %v", tok.ExpiresIn)
	}
	if strings.Contains(tok.RefreshToken, "lms-refresh") {
		t.Error("the refresh token is not sealed")
	}

	// Refresh with rotation, then with the new token; the old one is revoked at the LMS.
	r1 := h.refresh(t, "canvas", tok.RefreshToken)
	if r1.Status != http.StatusOK || r1.AccessToken != "lms-access-2" || r1.TokenType != "Bearer" ||
		r1.RefreshToken == "" || r1.RefreshToken == tok.RefreshToken || r1.ExpiresIn == nil || *r1.ExpiresIn != 3600 {
		t.Fatalf("refresh: %s", r1.raw)
	}
	var last url.Values
	h.as.set(func(as *fakeAS) { last = as.tokenForms[len(as.tokenForms)-1] })
	if last.Get("grant_type") != "refresh_token" || last.Get("client_secret") != h.as.clientSecret {
		t.Errorf("refresh request %v", last)
	}
	r2 := h.refresh(t, "canvas", r1.RefreshToken)
	if r2.Status != http.StatusOK || r2.AccessToken != "lms-access-3" || r2.RefreshToken == r1.RefreshToken {
		t.Fatalf("second refresh: %s", r2.raw)
	}
	old := h.refresh(t, "canvas", tok.RefreshToken)
	expect(t, old, http.StatusBadRequest, "UPSTREAM_ERROR")
	if !old.Details.ExternalError || old.Details.UpstreamStatus != 400 || !strings.Contains(old.Details.UpstreamBody, "invalid_grant") {
		t.Errorf("revoked refresh token: %s", old.raw)
	}

	// Without rotation the caller keeps its sealed token.
	h.as.set(func(as *fakeAS) { as.rotate = false })
	r3 := h.refresh(t, "canvas", r2.RefreshToken)
	if r3.Status != http.StatusOK || r3.RefreshToken != r2.RefreshToken {
		t.Fatalf("refresh without rotation: %s", r3.raw)
	}
}

func TestStartVariants(t *testing.T) {
	h := newHarness(t, func(o *oauthbroker.Options) { o.PublicURL = "https://ltiop.example/"; o.DevMode = false })
	call := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "https://ltiop.example"+path, nil)
		r.SetPathValue("platformId", "d2l")
		w := httptest.NewRecorder()
		h.broker.Start(w, r)
		return w
	}
	w := call("/oauth/start/d2l?scope=core:*:*+users:profile:read")
	if w.Code != http.StatusFound {
		t.Fatalf("start: %d %s", w.Code, w.Body)
	}
	c := w.Result().Cookies()[0]
	if !c.Secure || c.SameSite != http.SameSiteLaxMode || !c.HttpOnly {
		t.Errorf("cookie %+v: want Secure, Lax, HttpOnly", c)
	}
	loc, _ := url.Parse(w.Header().Get("Location"))
	if loc.Query().Get("scope") != "core:*:* users:profile:read" || loc.Query().Get("redirect_uri") != "https://ltiop.example/oauth/callback" {
		t.Errorf("authorize query %v", loc.Query())
	}
	// d2l has no default scopes: no scope parameter at all.
	loc, _ = url.Parse(call("/oauth/start/d2l").Header().Get("Location"))
	if _, ok := loc.Query()["scope"]; ok {
		t.Errorf("empty scope sent: %s", loc)
	}
	if w := call("/oauth/start/d2l?scope=a%22b"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "INVALID_SCOPE") {
		t.Errorf("bad scope: %d %s", w.Code, w.Body)
	}
}

func TestStateBoundToBrowser(t *testing.T) {
	h := newHarness(t, nil)
	alice, mallory := newBrowser(t), newBrowser(t)
	aliceCallback := h.authorize(t, alice, "canvas", "")
	h.authorize(t, mallory, "canvas", "") // mallory has a binding cookie of her own

	res, body := mallory.get(t, aliceCallback)
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "BROWSER_BINDING_FAILED") ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("another browser's cookie: %d %s", res.StatusCode, body)
	}
	// A forged cookie with the right name but not the value.
	forger := newBrowser(t)
	var name string
	for _, c := range alice.c.Jar.Cookies(mustURL(h.ltiop.URL + "/oauth/callback")) {
		name = c.Name
	}
	forger.c.Jar.SetCookies(mustURL(h.ltiop.URL+"/oauth/"), []*http.Cookie{{Name: name, Value: "guess", Path: "/oauth/"}})
	if res, body := forger.get(t, aliceCallback); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "BROWSER_BINDING_FAILED") {
		t.Fatalf("forged cookie: %d %s", res.StatusCode, body)
	}
	// Neither attempt used up alice's flow.
	if res, body := alice.get(t, aliceCallback); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice: %d %s", res.StatusCode, body)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestStateErrors(t *testing.T) {
	h := newHarness(t, nil)
	br := newBrowser(t)

	if res, body := br.get(t, h.ltiop.URL+"/oauth/callback?code=x"); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "INVALID_STATE") {
		t.Errorf("missing state: %d %s", res.StatusCode, body)
	}
	cb := h.authorize(t, br, "canvas", "")
	tampered := strings.Replace(cb, "state=", "state=x", 1)
	if res, body := br.get(t, tampered); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "INVALID_STATE") {
		t.Errorf("tampered state: %d %s", res.StatusCode, body)
	}

	// JSON clients get the envelope.
	req, _ := http.NewRequest(http.MethodGet, tampered, nil)
	req.Header.Set("Accept", "application/json")
	res, err := br.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ Details struct{ Message string } }
	_ = json.NewDecoder(res.Body).Decode(&env)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || env.Details.Message != "INVALID_STATE" {
		t.Errorf("JSON: %d %+v", res.StatusCode, env)
	}

	// A state the LMS sent back is still usable after the failed attempts above.
	if res, body := br.get(t, cb); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}

	// Expired: the broker's clock is 11 minutes ahead.
	cb = h.authorize(t, br, "canvas", "")
	oauthbroker.SetClock(h.broker, func() time.Time { return time.Now().Add(11 * time.Minute) })
	defer oauthbroker.SetClock(h.broker, nil)
	if res, body := br.get(t, cb); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "STATE_EXPIRED") {
		t.Errorf("expired state: %d %s", res.StatusCode, body)
	}
}

func TestStateReplayedWithCookie(t *testing.T) {
	h := newHarness(t, nil)
	br := newBrowser(t)
	cb := h.authorize(t, br, "canvas", "")
	st := mustURL(cb).Query().Get("state")
	var cookie *http.Cookie
	for _, c := range br.c.Jar.Cookies(mustURL(h.ltiop.URL + "/oauth/")) {
		cookie = c
	}
	if res, body := br.get(t, cb); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}
	// The same state with its cookie again (an attacker who copied both).
	req := httptest.NewRequest(http.MethodGet, "/oauth/callback?code=other&state="+url.QueryEscape(st), nil)
	req.AddCookie(cookie)
	w := httptest.NewRecorder()
	h.broker.Callback(w, req)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "STATE_ALREADY_USED") {
		t.Errorf("replayed state: %d %s", w.Code, w.Body)
	}
}

func TestLMSDenied(t *testing.T) {
	h := newHarness(t, nil)
	h.as.set(func(as *fakeAS) { as.deny = true })
	br := newBrowser(t)
	res, body := br.get(t, h.authorize(t, br, "canvas", "return_url="+url.QueryEscape(returnURL+"?x=1")))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}
	q := mustURL(res.Header.Get("Location")).Query()
	if q.Get("error") != "access_denied" || q.Get("error_description") != "The user denied access" || q.Get("x") != "1" || q.Has("code") {
		t.Errorf("returned with %v", q)
	}
	// An error response with a state ltiop did not issue gets an error page, not a redirect.
	res, body = br.get(t, h.ltiop.URL+"/oauth/callback?error=access_denied&state=forged")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "INVALID_STATE") {
		t.Errorf("forged error response: %d %s", res.StatusCode, body)
	}
}

func TestOneTimeCode(t *testing.T) {
	h := newHarness(t, nil)
	br := newBrowser(t)
	code, dest := h.code(t, br, "canvas", "")
	if dest.String() != returnURL+"?code="+url.QueryEscape(code) {
		t.Errorf("returned to %s", dest)
	}

	expect(t, h.accessToken(t, "d2l", code), http.StatusBadRequest, "INVALID_CODE")         // another platform
	expect(t, h.accessToken(t, "nope", code), http.StatusNotFound, "PLATFORM_NOT_FOUND")    // unknown platform
	expect(t, h.accessToken(t, "canvas", "garbage"), http.StatusBadRequest, "INVALID_CODE") // not ours
	expect(t, h.accessToken(t, "canvas", ""), http.StatusBadRequest, "INVALID_PARAMETERS")
	if got := h.accessToken(t, "canvas", code); got.Status != http.StatusOK { // not used up by the above
		t.Fatalf("access token: %s", got.raw)
	}
	expect(t, h.accessToken(t, "canvas", code), http.StatusBadRequest, "CODE_ALREADY_USED")

	// A refresh token is not a code.
	code, _ = h.code(t, br, "canvas", "")
	tok := h.accessToken(t, "canvas", code)
	expect(t, h.accessToken(t, "canvas", tok.RefreshToken), http.StatusBadRequest, "INVALID_CODE")

	// Expired: the broker's clock is 6 minutes ahead.
	code, _ = h.code(t, br, "canvas", "")
	oauthbroker.SetClock(h.broker, func() time.Time { return time.Now().Add(6 * time.Minute) })
	expect(t, h.accessToken(t, "canvas", code), http.StatusBadRequest, "CODE_EXPIRED")
	oauthbroker.SetClock(h.broker, nil)

	// A code of a re-created registration (same name, new UID) is refused.
	code, _ = h.code(t, br, "canvas", "")
	h.apply("canvas", "canvas-uid-2", true)
	expect(t, h.accessToken(t, "canvas", code), http.StatusBadRequest, "INVALID_CODE")
}

func TestTokenResponseVariants(t *testing.T) {
	h := newHarness(t, nil)
	h.as.set(func(as *fakeAS) { as.noRefresh, as.quotedExp, as.omitScope, as.expiresIn = true, true, true, 120 })
	code, _ := h.code(t, newBrowser(t), "canvas", "scope=a+b")
	got := h.accessToken(t, "canvas", code)
	if got.Status != http.StatusOK || got.RefreshToken != "" || strings.Contains(got.raw, "refreshToken") ||
		got.ExpiresIn == nil || *got.ExpiresIn > 120 || *got.ExpiresIn < 110 || got.Scope != "a b" {
		t.Errorf("access token: %s", got.raw)
	}
	// The remaining lifetime, never negative.
	code, _ = h.code(t, newBrowser(t), "canvas", "")
	oauthbroker.SetClock(h.broker, func() time.Time { return time.Now().Add(3 * time.Minute) })
	defer oauthbroker.SetClock(h.broker, nil)
	if got := h.accessToken(t, "canvas", code); got.ExpiresIn == nil || *got.ExpiresIn != 0 {
		t.Errorf("expired access token: %s", got.raw)
	}
}

func TestReturnURL(t *testing.T) {
	start := func(t *testing.T, h *harness, query string) (int, string, string) {
		r := httptest.NewRequest(http.MethodGet, "/oauth/start/canvas?"+query, nil)
		r.SetPathValue("platformId", "canvas")
		r.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		h.broker.Start(w, r)
		var env struct{ Details struct{ Message string } }
		_ = json.Unmarshal(w.Body.Bytes(), &env)
		return w.Code, env.Details.Message, w.Header().Get("Location")
	}
	h := newHarness(t, nil)
	for _, bad := range []string{
		"https://evil.example/oauth/return",
		"https://app.example/oauth/return/../../evil",
		"https://app.example/oauth/returnx",
		"http://app.example/oauth/return",
		"https://user@app.example/oauth/return",
		"https://app.example/oauth/return#frag",
		"https://app.example:8443/oauth/return",
		"javascript:alert(1)",
		"/oauth/return",
	} {
		if status, code, _ := start(t, h, "return_url="+url.QueryEscape(bad)); status != http.StatusBadRequest || code != "INVALID_RETURN_URL" {
			t.Errorf("%s: %d %s", bad, status, code)
		}
	}
	for _, good := range []string{"", returnURL, returnURL + "?a=1", otherURL, "HTTPS://Other.Example/lms/done?b=2"} {
		if status, code, _ := start(t, h, "return_url="+url.QueryEscape(good)); status != http.StatusFound {
			t.Errorf("%q: %d %s", good, status, code)
		}
	}

	none := newHarness(t, func(o *oauthbroker.Options) { o.ReturnURL, o.AllowedReturnURLs = "", nil })
	if status, code, _ := start(t, none, ""); status != http.StatusServiceUnavailable || code != "OAUTH2_RETURN_URL_NOT_CONFIGURED" {
		t.Errorf("none configured: %d %s", status, code)
	}
	listOnly := newHarness(t, func(o *oauthbroker.Options) { o.ReturnURL = "" })
	if status, code, _ := start(t, listOnly, ""); status != http.StatusBadRequest || code != "INVALID_RETURN_URL" {
		t.Errorf("no default: %d %s", status, code)
	}
	if status, code, _ := start(t, listOnly, "return_url="+url.QueryEscape(otherURL)); status != http.StatusFound {
		t.Errorf("allowed without default: %d %s", status, code)
	}
}

func TestRefreshTokenScope(t *testing.T) {
	h := newHarness(t, nil)
	code, _ := h.code(t, newBrowser(t), "canvas", "")
	tok := h.accessToken(t, "canvas", code)

	got := h.refresh(t, "d2l", tok.RefreshToken)
	expect(t, got, http.StatusBadRequest, "INVALID_REFRESH_TOKEN")
	if !strings.Contains(got.Details.Description, "another platform") {
		t.Errorf("description %q", got.Details.Description)
	}
	expect(t, h.refresh(t, "canvas", "garbage"), http.StatusBadRequest, "INVALID_REFRESH_TOKEN")
	expect(t, h.refresh(t, "canvas", ""), http.StatusBadRequest, "INVALID_PARAMETERS")
	expect(t, h.refresh(t, "nope", tok.RefreshToken), http.StatusNotFound, "PLATFORM_NOT_FOUND")
	expect(t, h.refresh(t, "off", tok.RefreshToken), http.StatusForbidden, "PLATFORM_INACTIVE")

	// A re-created registration of the same name does not inherit the token.
	h.apply("canvas", "canvas-uid-2", true)
	expect(t, h.refresh(t, "canvas", tok.RefreshToken), http.StatusBadRequest, "INVALID_REFRESH_TOKEN")
	h.apply("canvas", "canvas-uid", true)
	if got := h.refresh(t, "canvas", tok.RefreshToken); got.Status != http.StatusOK {
		t.Errorf("refresh: %s", got.raw)
	}

	// Unknown JSON members are refused.
	if got := h.post(t, "/api/oauth/access-token/canvas/refresh", map[string]string{"refresh_token": "x"}); got.Status != http.StatusBadRequest {
		t.Errorf("unknown member: %s", got.raw)
	}
}

func TestLMSFailures(t *testing.T) {
	h := newHarness(t, func(o *oauthbroker.Options) { o.HTTPClient = &http.Client{Timeout: 300 * time.Millisecond} })
	br := newBrowser(t)
	code, _ := h.code(t, br, "canvas", "")
	tok := h.accessToken(t, "canvas", code)

	t.Run("code exchange refused", func(t *testing.T) {
		cb := h.authorize(t, br, "canvas", "")
		h.as.set(func(as *fakeAS) { as.fail = "400" })
		defer h.as.set(func(as *fakeAS) { as.fail = "" })
		res, body := br.get(t, cb)
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, "OAUTH2_EXCHANGE_FAILED") ||
			!strings.Contains(body, "invalid_grant") || !strings.Contains(body, "&lt;script&gt;") || strings.Contains(body, "<script>alert") {
			t.Errorf("exchange refused: %d %s", res.StatusCode, body)
		}
	})
	t.Run("code exchange 500", func(t *testing.T) {
		cb := h.authorize(t, br, "canvas", "")
		h.as.set(func(as *fakeAS) { as.fail = "500" })
		defer h.as.set(func(as *fakeAS) { as.fail = "" })
		if res, body := br.get(t, cb); res.StatusCode != http.StatusBadGateway || !strings.Contains(body, "OAUTH2_EXCHANGE_FAILED") {
			t.Errorf("exchange 500: %d %s", res.StatusCode, body)
		}
	})
	t.Run("code exchange timeout", func(t *testing.T) {
		cb := h.authorize(t, br, "canvas", "")
		h.as.set(func(as *fakeAS) { as.fail = "slow" })
		defer h.as.set(func(as *fakeAS) { as.fail = "" })
		if res, body := br.get(t, cb); res.StatusCode != http.StatusGatewayTimeout || !strings.Contains(body, "OAUTH2_EXCHANGE_FAILED") {
			t.Errorf("exchange timeout: %d %s", res.StatusCode, body)
		}
	})

	for _, c := range []struct {
		fail, code     string
		status, origin int
		body           string
	}{
		{"400", "UPSTREAM_ERROR", http.StatusBadRequest, 400, "invalid_grant"},
		{"500", "UPSTREAM_ERROR", http.StatusBadGateway, 500, ""}, // a text body is not passed on
		{"slow", "UPSTREAM_TIMEOUT", http.StatusGatewayTimeout, 0, ""},
	} {
		t.Run("refresh "+c.fail, func(t *testing.T) {
			h.as.set(func(as *fakeAS) { as.fail = c.fail })
			defer h.as.set(func(as *fakeAS) { as.fail = "" })
			got := h.refresh(t, "canvas", tok.RefreshToken)
			expect(t, got, c.status, c.code)
			if !got.Details.ExternalError || got.Details.UpstreamStatus != c.origin || !strings.Contains(got.Details.UpstreamBody, c.body) ||
				(c.body == "" && got.Details.UpstreamBody != "") {
				t.Errorf("details: %s", got.raw)
			}
		})
	}

	t.Run("bad client credentials", func(t *testing.T) {
		h.configs["canvas"].ClientSecret = "wrong-secret"
		defer func() { h.configs["canvas"].ClientSecret = h.as.clientSecret }()
		got := h.refresh(t, "canvas", tok.RefreshToken)
		expect(t, got, http.StatusBadGateway, "UPSTREAM_ERROR") // ltiop's configuration, not the caller's request
		if got.Details.UpstreamStatus != http.StatusUnauthorized || !strings.Contains(got.Details.Description, "invalid_client") {
			t.Errorf("details: %s", got.raw)
		}
	})
	t.Run("secrets are not passed on", func(t *testing.T) {
		h.as.set(func(as *fakeAS) { as.fail = "echo" })
		defer h.as.set(func(as *fakeAS) { as.fail = "" })
		got := h.refresh(t, "canvas", tok.RefreshToken)
		expect(t, got, http.StatusBadRequest, "UPSTREAM_ERROR")
		if strings.Contains(got.raw, "lms-refresh-") || !strings.Contains(got.Details.UpstreamBody, "[redacted]") {
			t.Errorf("the LMS refresh token leaked: %s", got.raw)
		}
	})
	// The LMS still works: nothing above broke the token.
	if got := h.refresh(t, "canvas", tok.RefreshToken); got.Status != http.StatusOK {
		t.Errorf("refresh after failures: %s", got.raw)
	}
}

func TestNotConfigured(t *testing.T) {
	h := newHarness(t, nil)
	br := newBrowser(t)
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, h.ltiop.URL+path, nil)
		req.Header.Set("Accept", "application/json")
		res, err := br.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var env struct {
			Details struct{ Message, Description string }
		}
		_ = json.NewDecoder(res.Body).Decode(&env)
		return res.StatusCode, env.Details.Message
	}
	if status, code := get("/oauth/start/plain"); status != http.StatusConflict || code != "OAUTH2_NOT_CONFIGURED" {
		t.Errorf("not configured: %d %s", status, code)
	}
	if status, code := get("/oauth/start/nope"); status != http.StatusNotFound || code != "PLATFORM_NOT_FOUND" {
		t.Errorf("unknown: %d %s", status, code)
	}
	if status, code := get("/oauth/start/off"); status != http.StatusForbidden || code != "PLATFORM_INACTIVE" {
		t.Errorf("inactive: %d %s", status, code)
	}
	h.configs["d2l"] = &oauthbroker.ClientConfig{ClientID: "x", AuthorizeURL: "https://d2l.example/auth"} // no token URL
	if status, code := get("/oauth/start/d2l"); status != http.StatusConflict || code != "OAUTH2_NOT_CONFIGURED" {
		t.Errorf("incomplete: %d %s", status, code)
	}
	// The HTML page for browsers.
	res, body := br.get(t, h.ltiop.URL+"/oauth/start/plain")
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "OAUTH2_NOT_CONFIGURED") || !strings.Contains(body, "<!doctype html>") {
		t.Errorf("page: %d %s", res.StatusCode, body)
	}
}

// RFC 7636 Appendix B.
func TestPKCEChallenge(t *testing.T) {
	if got := oauthbroker.PKCEChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Errorf("challenge %s", got)
	}
}
