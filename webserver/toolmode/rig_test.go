package toolmode_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/advantage"
	"github.com/ltiop/ltiop/webserver/httpapi"
	"github.com/ltiop/ltiop/webserver/registry"
	"github.com/ltiop/ltiop/webserver/sessions"
	"github.com/ltiop/ltiop/webserver/toolmode"
)

const (
	benchAPIKey    = "bench-api-key"
	rigLaunchURL   = "https://app.example/launch"
	rigDeepLinkURL = "https://app.example/deep-linking"
	rigDeployment  = "bench-deployment"
)

// rig is ltiop's tool mode without Kubernetes: a registry fed by hand, a keyring, and
// the handlers on a loopback server, with a simulated LMS whose key set is served too.
type rig struct {
	lms    *lmssim.LMS
	tool   *toolmode.Tool
	ltiop  *httptest.Server
	reg    *registry.Registry
	pr     *ltiv1.PlatformRegistration // the registration as last applied to reg
	clock  *clock
	server atomic.Int64 // nanoseconds spent inside the handlers

	// intercept, when set, answers a request to the LMS before the simulator does (it
	// returns false to let the simulator answer).
	intercept atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]

	mu     sync.Mutex
	learnt []string // deployments passed to Options.Deployments

	jars map[string]http.CookieJar // the browser of each login, by state (tests that need it)
}

// rigConfig is what a test may change before the rig is built.
type rigConfig struct {
	opts      toolmode.Options // PublicURL is always the loopback server's
	apiKey    string           // "" leaves the API key unconfigured
	noKeys    bool             // an empty sealing keyring (the service Secret not read yet)
	http      *http.Client     // the LTI Advantage client's; nil: its default
	services  bool             // the LMS serves NRPS, AGS and deep-linking returns
	configure func(*ltiv1.PlatformRegistration)
}

// clock is the tool's clock: real time plus an offset a test moves.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// toolKeyPEM is the tool's RSA key, generated once for the package: a fresh 2048-bit key
// per rig would cost more than the tests.
var toolKeyPEM = sync.OnceValue(func() []byte {
	private, err := keys.Generate()
	if err != nil {
		panic(err)
	}
	pemBytes, err := keys.EncodePrivateKey(private)
	if err != nil {
		panic(err)
	}
	return pemBytes
})

func newRig(b testing.TB, configure ...func(*rigConfig)) *rig {
	b.Helper()
	cfg := rigConfig{
		opts: toolmode.Options{
			LaunchURL: rigLaunchURL, DeepLinkingURL: rigDeepLinkURL, DevMode: true, ClockSkew: time.Minute,
		},
		apiKey: benchAPIKey,
	}
	for _, c := range configure {
		c(&cfg)
	}

	rg := &rig{clock: &clock{}, jars: map[string]http.CookieJar{}}
	lmsSrv := httptest.NewServer(nil)
	b.Cleanup(lmsSrv.Close)
	lms, err := lmssim.New(lmsSrv.URL, "bench-client", rigDeployment)
	if err != nil {
		b.Fatal(err)
	}
	lmsHandler := lms.Handler()
	lmsSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := rg.intercept.Load(); f != nil && (*f)(w, r) {
			return
		}
		lmsHandler.ServeHTTP(w, r)
	})
	rg.lms = lms

	mux := http.NewServeMux()
	rg.ltiop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		mux.ServeHTTP(w, r)
		rg.server.Add(int64(time.Since(start)))
	}))
	b.Cleanup(rg.ltiop.Close)
	lms.ToolLoginURL, lms.ToolRedirectURI = rg.ltiop.URL+paths.Login, rg.ltiop.URL+paths.Launch
	if cfg.services {
		lms.EnableServices(rg.ltiop.URL + paths.Keys)
	}

	rg.reg = registry.New()
	rg.pr = &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns", UID: "bench-uid", Generation: 1},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL(lms.Issuer), ClientID: lms.ClientID, Name: "Bench LMS",
			AuthenticationEndpoint: ltiv1.EndpointURL(lms.Issuer + lmssim.AuthPath),
			AccesstokenEndpoint:    ltiv1.EndpointURL(lms.Issuer + lmssim.TokenPath),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms.Issuer + lmssim.JWKSPath},
		},
		Status: ltiv1.PlatformRegistrationStatus{Conditions: []metav1.Condition{{
			Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
		}}},
	}
	if cfg.configure != nil {
		cfg.configure(rg.pr)
	}
	rg.reg.Apply(rg.pr)
	rg.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-tool-key", OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: "bench", UID: "bench-uid", Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: toolKeyPEM()},
	})

	var sealing []keyring.SealingKey
	if !cfg.noKeys {
		key, _ := keyring.Sealing.NewKey(time.Now().Add(-time.Minute), 0)
		sealing = append(sealing, key)
	}
	ring, err := sessions.NewKeyring(sealing)
	if err != nil {
		b.Fatal(err)
	}
	apiKey := httpapi.NewAPIKey("s", "k")
	if cfg.apiKey != "" {
		apiKey.Set(cfg.apiKey)
	}
	opts := cfg.opts
	opts.PublicURL = rg.ltiop.URL
	if opts.Deployments == nil {
		opts.Deployments = rg
	}
	rg.tool, err = toolmode.New(opts, rg.reg, registry.NewPeerKeys(nil), ring, replay.NewMemory(1<<20), apiKey, advantage.NewClient(cfg.http))
	if err != nil {
		b.Fatal(err)
	}
	toolmode.SetClock(rg.tool, rg.clock.Now)
	t := rg.tool
	for pattern, h := range map[string]http.Handler{
		"GET " + paths.Login:              http.HandlerFunc(t.Login),
		"POST " + paths.Login:             http.HandlerFunc(t.Login),
		"POST " + paths.Launch:            http.HandlerFunc(t.Launch),
		"POST " + paths.LaunchComplete:    http.HandlerFunc(t.LaunchComplete),
		"GET " + paths.Keys:               toolmode.Keys(rg.reg),
		"GET /api/idtoken":                t.RequireLtik(http.HandlerFunc(t.IDToken)),
		"GET /api/memberships":            t.RequireService(http.HandlerFunc(t.Memberships)),
		"GET /api/lineitems":              t.RequireService(http.HandlerFunc(t.LineItems)),
		"POST /api/lineitems":             t.RequireService(http.HandlerFunc(t.CreateLineItem)),
		"GET /api/lineitems/{id}":         t.RequireService(http.HandlerFunc(t.GetLineItem)),
		"PUT /api/lineitems/{id}":         t.RequireService(http.HandlerFunc(t.UpdateLineItem)),
		"DELETE /api/lineitems/{id}":      t.RequireService(http.HandlerFunc(t.DeleteLineItem)),
		"POST /api/lineitems/{id}/scores": t.RequireService(http.HandlerFunc(t.PostScore)),
		"GET /api/lineitems/{id}/scores":  t.RequireService(http.HandlerFunc(t.Scores)),
		"POST /api/deeplinking/form":      t.RequireLtik(http.HandlerFunc(t.DeepLinkingForm)),
		"POST /api/deeplinking":           t.RequireLtik(http.HandlerFunc(t.DeepLinkingMessage)),
		"POST /api/deeplinking/message":   t.RequireLtik(http.HandlerFunc(t.DeepLinkingMessage)),
	} {
		mux.Handle(pattern, h)
	}
	return rg
}

// update changes the registration and applies it to the registry, as the informer would
// after a change in the cluster.
func (rg *rig) update(change func(*ltiv1.PlatformRegistration)) {
	pr := rg.pr.DeepCopy()
	change(pr)
	rg.pr = pr
	rg.reg.Apply(pr)
}

// RecordDeployment makes the rig the launch's toolmode.DeploymentRecorder.
func (rg *rig) RecordDeployment(_ *registry.Platform, deploymentID string) {
	rg.mu.Lock()
	rg.learnt = append(rg.learnt, deploymentID)
	rg.mu.Unlock()
}

func (rg *rig) learntDeployments() []string {
	rg.mu.Lock()
	defer rg.mu.Unlock()
	return append([]string(nil), rg.learnt...)
}

// interceptLMS puts f in front of the LMS simulator until the test ends.
func (rg *rig) interceptLMS(t testing.TB, f func(http.ResponseWriter, *http.Request) bool) {
	rg.intercept.Store(&f)
	t.Cleanup(func() { rg.intercept.Store(nil) })
}

// loginParams are the parameters of a valid third-party initiated login.
func (rg *rig) loginParams() url.Values {
	return url.Values{"iss": {rg.lms.Issuer}, "client_id": {rg.lms.ClientID}, "login_hint": {"u"},
		"target_link_uri": {rg.ltiop.URL + paths.Launch}, "lti_deployment_id": {rigDeployment}}
}

// launch runs one login and launch over loopback; the LMS's RSA signature is made with
// the timer stopped (it is the platform's work, not ltiop's).
func (rg *rig) launch(b *testing.B, client *http.Client) string {
	login := rg.loginParams()
	res, err := client.Get(rg.ltiop.URL + paths.Login + "?" + login.Encode())
	if err != nil || res.StatusCode != http.StatusFound {
		b.Fatalf("login: %v %v", res, err)
	}
	res.Body.Close()
	auth, _ := url.Parse(res.Header.Get("Location"))
	q := auth.Query()

	b.StopTimer()
	token, err := rg.lms.Sign(rg.lms.Claims("u", q.Get("nonce"), rg.ltiop.URL+paths.Launch), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()

	res, err = client.PostForm(rg.ltiop.URL+paths.Launch, url.Values{"id_token": {token}, "state": {q.Get("state")}})
	if err != nil || res.StatusCode != http.StatusSeeOther {
		b.Fatalf("launch: %v %v", res, err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	return loc.Query().Get("ltik")
}

// browser is a user agent with a cookie jar that never follows redirects: every hop is
// checked by the test.
func browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func benchClient() *http.Client { return browser() }

// reply is a response read in full.
type reply struct {
	Status int
	Header http.Header
	Body   string
}

func (r reply) location(t testing.TB) *url.URL {
	t.Helper()
	u, err := url.Parse(r.Header.Get("Location"))
	if err != nil || r.Header.Get("Location") == "" {
		t.Fatalf("no Location in %d %s", r.Status, r.Body)
	}
	return u
}

// json decodes the body into a map.
func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("%d %q: %v", r.Status, r.Body, err)
	}
	return m
}

func read(t testing.TB, res *http.Response, err error) reply {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}

// call sends a request to ltiop; a body that is not a string is sent as JSON.
func (rg *rig) call(t testing.TB, client *http.Client, method, path string, header map[string]string, body any) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, rg.ltiop.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		if _, isString := body.(string); !isString {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = browser()
	}
	res, err := client.Do(req)
	return read(t, res, err)
}

// postForm posts a form to ltiop as the browser does; jsonErrors asks for the error
// envelope instead of the HTML page.
func (rg *rig) postForm(t testing.TB, client *http.Client, path string, form url.Values, jsonErrors bool) reply {
	t.Helper()
	req, err := http.NewRequest("POST", rg.ltiop.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if jsonErrors {
		req.Header.Set("Accept", "application/json")
	}
	res, err := client.Do(req)
	return read(t, res, err)
}

// login sends the login initiation from client and returns the answer.
func (rg *rig) login(t testing.TB, client *http.Client, params url.Values, jsonErrors bool) reply {
	t.Helper()
	req, err := http.NewRequest("GET", rg.ltiop.URL+paths.Login+"?"+params.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if jsonErrors {
		req.Header.Set("Accept", "application/json")
	}
	res, err := client.Do(req)
	return read(t, res, err)
}

// authRequest is a login that was sent on to the platform: the OIDC authentication request.
type authRequest struct {
	url.Values
	State, Nonce string
}

// startLogin runs a valid login from client and returns the authentication request.
func (rg *rig) startLogin(t testing.TB, client *http.Client, params url.Values) authRequest {
	t.Helper()
	if params == nil {
		params = rg.loginParams()
	}
	res := rg.login(t, client, params, true)
	if res.Status != http.StatusFound {
		t.Fatalf("login: %d %s", res.Status, res.Body)
	}
	q := res.location(t).Query()
	return authRequest{Values: q, State: q.Get("state"), Nonce: q.Get("nonce")}
}

// claims are the platform's claims for the login (an LtiResourceLinkRequest).
func (rg *rig) claims(ar authRequest) map[string]any {
	return rg.lms.Claims("u", ar.Nonce, rg.ltiop.URL+paths.Launch)
}

// sign signs claims as the platform, failing the test on error.
func (rg *rig) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	tok, err := rg.lms.Sign(claims, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// postLaunch posts the authentication response to /lti/launch from client.
func (rg *rig) postLaunch(t testing.TB, client *http.Client, idToken, state string) reply {
	t.Helper()
	return rg.postForm(t, client, paths.Launch, url.Values{"id_token": {idToken}, "state": {state}}, true)
}

// launchWith runs a login and a launch whose claims mutate changed (nil: none) and
// returns the ltik.
func (rg *rig) launchWith(t testing.TB, mutate func(map[string]any)) string {
	t.Helper()
	client := browser()
	ar := rg.startLogin(t, client, nil)
	claims := rg.claims(ar)
	if mutate != nil {
		mutate(claims)
	}
	res := rg.postLaunch(t, client, rg.sign(t, claims), ar.State)
	if res.Status != http.StatusSeeOther {
		t.Fatalf("launch: %d %s", res.Status, res.Body)
	}
	ltik := res.location(t).Query().Get("ltik")
	if ltik == "" {
		t.Fatalf("no ltik in %s", res.Header.Get("Location"))
	}
	return ltik
}

// deepLinkingLaunch runs an LtiDeepLinkingRequest launch and returns the ltik.
func (rg *rig) deepLinkingLaunch(t testing.TB, mutate func(map[string]any)) string {
	t.Helper()
	return rg.launchWith(t, func(c map[string]any) {
		rg.lms.MakeDeepLinking(c)
		if mutate != nil {
			mutate(c)
		}
	})
}

func ltikAuth(ltik string) map[string]string {
	return map[string]string{"Authorization": "LTIK-AUTH-V2 " + benchAPIKey + ":" + ltik}
}

func serviceAuth(key string) map[string]string {
	return map[string]string{"Authorization": "SERVICE-AUTH-V1 " + benchAPIKey + ":" + key}
}

var pageCode = regexp.MustCompile(`Error <code>([A-Z_]+)</code> \(HTTP (\d+)\)`)

// wantError checks that r is a refusal with status and code: the JSON envelope, or for
// a browser that did not ask for JSON, the HTML error page. It never carries a redirect.
func wantError(t testing.TB, r reply, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (%s): %s", r.Status, status, code, r.Body)
	}
	if loc := r.Header.Get("Location"); loc != "" {
		t.Fatalf("a refusal redirects to %s", loc)
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		m := pageCode.FindStringSubmatch(r.Body)
		if m == nil || m[1] != code {
			t.Fatalf("error page without code %s: %s", code, r.Body)
		}
		return
	}
	var env httpapi.Envelope
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
		t.Fatalf("not an error envelope: %s", r.Body)
	}
	if env.Status != status || env.Error != http.StatusText(status) || env.Details.Message != code || env.Details.Description == "" {
		t.Fatalf("envelope %+v, want status %d code %s", env, status, code)
	}
	if status == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
}

// description returns details.description of an error envelope.
func description(t testing.TB, r reply) string {
	t.Helper()
	var env httpapi.Envelope
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
		t.Fatalf("not an error envelope: %s", r.Body)
	}
	return env.Details.Description
}
