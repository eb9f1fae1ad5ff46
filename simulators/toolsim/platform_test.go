package toolsim_test

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

const (
	clientID     = "tool-client-1"
	deploymentID = "deployment-1"
	targetPath   = "/launch"
	dlReturnPath = "/dl-return"
	dlReturnQ    = "course=42&sesskey=abc"
)

// platform is a tiny LTI platform written for these tests: a JWKS, an OIDC authorization
// endpoint answering with an auto-submitting id_token form, a token endpoint that checks
// client assertions against the tool's JWKS, and a deep-linking return URL.
type platform struct {
	srv     *httptest.Server
	fetches atomic.Int32 // JWKS fetches

	mu        sync.Mutex
	keys      map[string]*rsa.PrivateKey // published keys by kid
	kid       string                     // the signing key
	signKey   *rsa.PrivateKey            // when set, signs with this key under kid
	customize func(claims, header map[string]any)
	lastAuth  url.Values
	toolJWKS  string
	dlPosts   []dlPost
}

type dlPost struct {
	Query url.Values
	JWT   string
}

func newPlatform(t testing.TB) *platform {
	p := &platform{keys: map[string]*rsa.PrivateKey{"platform-1": testkeys.RSAKey(t, 0)}, kid: "platform-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("/authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("POST "+dlReturnPath, p.dlReturn)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *platform) issuer() string   { return p.srv.URL }
func (p *platform) tokenURL() string { return p.srv.URL + "/token" }

// config is the tool configuration that matches this platform.
func (p *platform) config() toolsim.Config {
	return toolsim.Config{
		ClientID: clientID, DeploymentID: deploymentID, Issuer: p.issuer(),
		AuthorizationEndpoint: p.srv.URL + "/authorize", TokenEndpoint: p.tokenURL(),
		PlatformJWKSURL: p.srv.URL + "/jwks",
	}
}

func (p *platform) setCustomize(f func(claims, header map[string]any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.customize = f
}

func (p *platform) setSignKey(k *rsa.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signKey = k
}

// rotate publishes key under kid and signs with it from now on.
func (p *platform) rotate(kid string, key *rsa.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid], p.kid = key, kid
}

func (p *platform) authRequest() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastAuth
}

func (p *platform) jwks(w http.ResponseWriter, _ *http.Request) {
	p.fetches.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	set := jwk.NewSet()
	for kid, k := range p.keys {
		pub, err := keys.PublicJWK(&k.PublicKey, kid)
		if err != nil {
			panic(err)
		}
		_ = set.AddKey(pub)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

var autoSubmit = template.Must(template.New("form").Parse(`<!doctype html>
<html><body onload="document.forms[0].submit()">
<form method="post" action="{{.Action}}">
<input type="hidden" name="id_token" value="{{.IDToken}}">
<input type="hidden" name="state" value="{{.State}}">
</form></body></html>`))

// authorize checks the authentication request and answers with a signed id_token for the
// user login_hint; lti_message_hint is {"message": <message type>, "target": <target_link_uri>}.
func (p *platform) authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	q := r.Form
	p.mu.Lock()
	p.lastAuth = maps.Clone(q)
	p.mu.Unlock()
	for name, want := range map[string]string{
		"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none", "client_id": clientID,
	} {
		if q.Get(name) != want {
			http.Error(w, fmt.Sprintf("invalid_request: %s must be %q", name, want), http.StatusBadRequest)
			return
		}
	}
	for _, name := range []string{"redirect_uri", "nonce", "state", "login_hint", "lti_message_hint"} {
		if q.Get(name) == "" {
			http.Error(w, "invalid_request: "+name+" is missing", http.StatusBadRequest)
			return
		}
	}
	var hint struct{ Message, Target string }
	if err := json.Unmarshal([]byte(q.Get("lti_message_hint")), &hint); err != nil {
		http.Error(w, "invalid_request: bad lti_message_hint", http.StatusBadRequest)
		return
	}
	now := time.Now()
	claims := map[string]any{
		"iss": p.issuer(), "aud": clientID, "azp": clientID, "sub": q.Get("login_hint"), "nonce": q.Get("nonce"),
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "name": "Ada Lovelace",
		toolsim.ClaimMessageType:                            toolsim.ResourceLinkRequest,
		toolsim.ClaimVersion:                                "1.3.0",
		toolsim.ClaimDeploymentID:                           deploymentID,
		toolsim.ClaimTargetLinkURI:                          hint.Target,
		toolsim.ClaimResourceLink:                           map[string]any{"id": "resource-link-1", "title": "Week 1"},
		toolsim.ClaimRoles:                                  []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"},
		"https://purl.imsglobal.org/spec/lti/claim/context": map[string]any{"id": "course-42"},
	}
	if hint.Message == toolsim.DeepLinkingRequest {
		claims[toolsim.ClaimMessageType] = toolsim.DeepLinkingRequest
		delete(claims, toolsim.ClaimResourceLink)
		claims[toolsim.ClaimDLSettings] = map[string]any{
			"deep_link_return_url":                 p.srv.URL + dlReturnPath + "?" + dlReturnQ,
			"accept_types":                         []string{"ltiResourceLink", "link"},
			"accept_presentation_document_targets": []string{"iframe", "window"},
			"accept_multiple":                      true,
			"data":                                 "opaque-data-1",
		}
	}
	token, err := p.sign(claims)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = autoSubmit.Execute(w, map[string]string{"Action": q.Get("redirect_uri"), "IDToken": token, "State": q.Get("state")})
}

// sign signs claims after customize; a header alg of HS256 or none really signs that way.
func (p *platform) sign(claims map[string]any) (string, error) {
	p.mu.Lock()
	h := map[string]any{"alg": "RS256", "kid": p.kid, "typ": "JWT"}
	key := p.keys[p.kid]
	if p.signKey != nil {
		key = p.signKey
	}
	if p.customize != nil {
		p.customize(claims, h)
	}
	p.mu.Unlock()
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	alg, _ := h["alg"].(string)
	delete(h, "alg")
	headers := jws.NewHeaders()
	for k, v := range h {
		if err := headers.Set(k, v); err != nil {
			return "", err
		}
	}
	var out []byte
	switch alg {
	case "none":
		out, err = jws.Sign(payload, jws.WithInsecureNoSignature(jws.WithProtectedHeaders(headers)))
	case "HS256":
		pem, _ := keys.PublicKeyPEM(&key.PublicKey)
		out, err = jws.Sign(payload, jws.WithKey(jwa.HS256(), []byte(pem), jws.WithProtectedHeaders(headers)))
	default:
		out, err = jws.Sign(payload, jws.WithKey(jwa.RS256(), key, jws.WithProtectedHeaders(headers)))
	}
	return string(out), err
}

// token is a client_credentials token endpoint that verifies the assertion with jwx
// against the tool's JWKS.
func (p *platform) token(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if err := r.ParseForm(); err != nil {
		fail(400, "invalid_request", "bad form")
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		fail(400, "unsupported_grant_type", "")
		return
	}
	if r.PostForm.Get("client_assertion_type") != toolsim.ClientAssertionType {
		fail(400, "invalid_request", "client_assertion_type")
		return
	}
	p.mu.Lock()
	jwksURL := p.toolJWKS
	p.mu.Unlock()
	set, err := jwk.Fetch(r.Context(), jwksURL)
	if err != nil {
		fail(500, "server_error", err.Error())
		return
	}
	raw := r.PostForm.Get("client_assertion")
	payload, err := jws.Verify([]byte(raw), jws.WithKeySet(set, jws.WithRequireKid(true)))
	if err != nil {
		fail(401, "invalid_client", "signature: "+err.Error())
		return
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		fail(400, "invalid_client", "payload")
		return
	}
	if c["iss"] != clientID || c["sub"] != clientID || c["aud"] != p.tokenURL() {
		fail(401, "invalid_client", fmt.Sprintf("iss/sub/aud %v %v %v", c["iss"], c["sub"], c["aud"]))
		return
	}
	if jti, _ := c["jti"].(string); jti == "" {
		fail(400, "invalid_client", "jti is missing")
		return
	}
	scope := r.PostForm.Get("scope")
	if strings.Contains(scope, "forbidden") {
		fail(400, "invalid_scope", "not allowed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": "access-1", "token_type": "Bearer", "expires_in": 3600, "scope": scope,
	})
}

// dlReturn records a deep-linking response and redirects, as a platform does.
func (p *platform) dlReturn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.dlPosts = append(p.dlPosts, dlPost{Query: r.URL.Query(), JWT: r.PostForm.Get("JWT")})
	p.mu.Unlock()
	http.Redirect(w, r, "/course/42", http.StatusSeeOther)
}

func (p *platform) deepLinkPosts() []dlPost {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.dlPosts)
}

// rig is a tool served over HTTP and a platform it is configured for.
type rig struct {
	p       *platform
	tool    *toolsim.Tool
	toolSrv *httptest.Server
}

var noRedirect = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func newRig(t testing.TB) *rig {
	t.Helper()
	p := newPlatform(t)
	tool, err := toolsim.New(p.config())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tool.Handler())
	t.Cleanup(srv.Close)
	p.mu.Lock()
	p.toolJWKS = srv.URL + toolsim.JWKSPath
	p.mu.Unlock()
	return &rig{p: p, tool: tool, toolSrv: srv}
}

// loginParams is a login initiation from the platform for user and message type.
func (r *rig) loginParams(user, message string) url.Values {
	target := r.toolSrv.URL + targetPath
	hint, _ := json.Marshal(map[string]string{"message": message, "target": target})
	return url.Values{
		"iss": {r.p.issuer()}, "login_hint": {user}, "target_link_uri": {target},
		"lti_message_hint": {string(hint)}, "client_id": {clientID}, "lti_deployment_id": {deploymentID},
	}
}

type reply struct {
	Status   int
	Location string
	Body     string
}

// newRequest is a request without redirects followed; a form, when given, is the body.
func newRequest(method, u string, form url.Values) (*http.Request, error) {
	if form == nil {
		return http.NewRequest(method, u, nil)
	}
	req, err := http.NewRequest(method, u, strings.NewReader(form.Encode()))
	if err == nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, err
}

func tryDo(req *http.Request, err error) (reply, error) {
	if err != nil {
		return reply{}, err
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return reply{Status: res.StatusCode, Location: res.Header.Get("Location"), Body: string(b)}, err
}

func get(t testing.TB, u string) reply {
	t.Helper()
	res, err := tryDo(newRequest(http.MethodGet, u, nil))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func postForm(t testing.TB, u string, form url.Values) reply {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	res, err := tryDo(newRequest(http.MethodPost, u, form))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// authResponse runs a login initiation at the tool and the platform's authorization
// endpoint, like a browser, and returns where the platform's form posts to and its fields.
func (r *rig) authResponse(t testing.TB, login url.Values) (string, url.Values) {
	t.Helper()
	res := get(t, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode())
	if res.Status != http.StatusFound {
		t.Fatalf("login: HTTP %d: %s", res.Status, res.Body)
	}
	page := get(t, res.Location)
	if page.Status != http.StatusOK {
		t.Fatalf("authorize: HTTP %d: %s", page.Status, page.Body)
	}
	action, form, ok := lmssim.ParseAutoSubmit(page.Body)
	if !ok {
		t.Fatalf("no auto-submit form in %s", page.Body)
	}
	return action, form
}

// launch runs a whole launch for user and message type and returns the tool's answer.
func (r *rig) launch(t testing.TB, user, message string) reply {
	t.Helper()
	res, err := r.tryLaunch(user, message)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryLaunch is launch for other goroutines than the test's: it reports instead of failing.
func (r *rig) tryLaunch(user, message string) (reply, error) {
	login := r.loginParams(user, message)
	res, err := tryDo(newRequest(http.MethodGet, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode(), nil))
	if err != nil {
		return res, err
	}
	if res.Status != http.StatusFound {
		return res, fmt.Errorf("login: HTTP %d: %s", res.Status, res.Body)
	}
	page, err := tryDo(newRequest(http.MethodGet, res.Location, nil))
	if err != nil {
		return page, err
	}
	action, form, ok := lmssim.ParseAutoSubmit(page.Body)
	if !ok {
		return page, fmt.Errorf("authorize: HTTP %d, no auto-submit form: %s", page.Status, page.Body)
	}
	return tryDo(newRequest(http.MethodPost, action, form))
}
