package toolmode_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
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
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
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
	keyPEM []byte                      // the tool's key, PEM-encoded, as its Secret holds it
	ring   *sessions.Keyring           // the sealing keyring, as the service Secret would feed it
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
	http      *http.Client     // the LTI Advantage client's; nil: HTTPClient with the dev-mode policy
	services  bool             // the LMS serves NRPS, AGS and deep-linking returns
	configure func(*ltiv1.PlatformRegistration)
}

// clock is the tool's clock: real time plus an offset a test moves.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// toolKey is the testkeys fixture key that is the tool's key (the LMS simulator makes its
// own).
const toolKey = 2

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
	if cfg.http == nil {
		cfg.http = advantage.HTTPClient(testoutbound.Dev()) // the LMS is on loopback
	}

	rg := &rig{clock: &clock{}, jars: map[string]http.CookieJar{}, keyPEM: testkeys.RSAKeyPEM(b, toolKey)}
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
		lms.EnableServices(rg.ltiop.URL + paths.KeySet("bench")) // its status.jwksUrl
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
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: rg.keyPEM},
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
	rg.ring = ring.WithClock(rg.clock.Now) // tokens are sealed and opened on the same clock
	apiKey := httpapi.NewAPIKey("s", "k")
	if cfg.apiKey != "" {
		apiKey.Set(cfg.apiKey)
	}
	opts := cfg.opts
	opts.PublicURL = rg.ltiop.URL
	if opts.Deployments == nil {
		opts.Deployments = rg
	}
	rg.tool, err = toolmode.New(opts, rg.reg, registry.NewPeerKeys(outbound.NewClient(testoutbound.Dev())).WithClock(rg.clock.Now), ring, replay.NewMemory(1<<20), apiKey, advantage.NewClient(cfg.http))
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
		"GET " + paths.KeySet("{id}"):     toolmode.KeySet(rg.reg),
		"GET /api/idtoken":                t.RequireLtik(http.HandlerFunc(t.IDToken)),
		"GET /api/memberships":            t.RequireService(http.HandlerFunc(t.Memberships)),
		"GET /api/lineitems":              t.RequireService(http.HandlerFunc(t.LineItems)),
		"POST /api/lineitems":             t.RequireService(http.HandlerFunc(t.CreateLineItem)),
		"GET /api/lineitems/{id}":         t.RequireService(http.HandlerFunc(t.GetLineItem)),
		"PUT /api/lineitems/{id}":         t.RequireService(http.HandlerFunc(t.UpdateLineItem)),
		"DELETE /api/lineitems/{id}":      t.RequireService(http.HandlerFunc(t.DeleteLineItem)),
		"POST /api/lineitems/{id}/scores": t.RequireService(http.HandlerFunc(t.PostScore)),
		"GET /api/lineitems/{id}/scores":  t.RequireService(http.HandlerFunc(t.Scores)),
		"GET /api/groups":                 t.RequireService(http.HandlerFunc(t.Groups)),
		"GET /api/groupsets":              t.RequireService(http.HandlerFunc(t.GroupSets)),
		"GET /api/outcomes":               t.RequireService(http.HandlerFunc(t.ReadOutcome)),
		"PUT /api/outcomes":               t.RequireService(http.HandlerFunc(t.ReplaceOutcome)),
		"DELETE /api/outcomes":            t.RequireService(http.HandlerFunc(t.DeleteOutcome)),
		"POST /api/deeplinking/form":      t.RequireLtik(http.HandlerFunc(t.DeepLinkingForm)),
		"POST /api/deeplinking":           t.RequireLtik(http.HandlerFunc(t.DeepLinkingMessage)),
		"POST /api/deeplinking/message":   t.RequireLtik(http.HandlerFunc(t.DeepLinkingMessage)),
		"POST " + paths.Notices:           http.HandlerFunc(t.Notices),
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
	return testhttp.NoRedirects(jar)
}

func benchClient() *http.Client { return browser() }

// call sends a request to ltiop; a body that is not a string is sent as JSON.
func (rg *rig) call(t testing.TB, client *http.Client, method, path string, header map[string]string, body any) testhttp.Reply {
	t.Helper()
	req := testhttp.NewRequest(t, method, rg.ltiop.URL+path, body)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = browser()
	}
	return testhttp.Do(t, client, req)
}

// postForm posts a form to ltiop as the browser does; jsonErrors asks for the error
// envelope instead of the HTML page.
func (rg *rig) postForm(t testing.TB, client *http.Client, path string, form url.Values, jsonErrors bool) testhttp.Reply {
	t.Helper()
	req, err := http.NewRequest("POST", rg.ltiop.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if path == paths.LaunchComplete {
		req.Header.Set("Sec-Fetch-Site", "same-origin") // as ltiop's storage-check page sends it
	}
	if jsonErrors {
		req.Header.Set("Accept", "application/json")
	}
	return testhttp.Do(t, client, req)
}

// login sends the login initiation from client and returns the answer.
func (rg *rig) login(t testing.TB, client *http.Client, params url.Values, jsonErrors bool) testhttp.Reply {
	t.Helper()
	req, err := http.NewRequest("GET", rg.ltiop.URL+paths.Login+"?"+params.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if jsonErrors {
		req.Header.Set("Accept", "application/json")
	}
	return testhttp.Do(t, client, req)
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
	q := res.Location(t).Query()
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
func (rg *rig) postLaunch(t testing.TB, client *http.Client, idToken, state string) testhttp.Reply {
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
	ltik := res.Location(t).Query().Get("ltik")
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
