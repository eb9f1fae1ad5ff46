package platformmode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/signing"
)

// clock is the platform's injectable clock: real time plus an offset the test moves.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// harness runs platform mode over real loopback HTTP with a real tool (simulators/toolsim):
// ltiop's platform endpoints, the integrator's launch and return pages, and the tool.
type harness struct {
	t          testing.TB
	clock      *clock
	platform   *platformmode.Platform
	ltiop      *httptest.Server
	integrator *httptest.Server
	tool       *toolsim.Tool
	toolSrv    *httptest.Server
	tools      *registry.Tools
	reg        *ltiv1.ToolRegistration
	signer     *signing.Keyring
	signingKey keyring.SigningKey // the platform key signer holds (tests sign with it directly)
	client     *http.Client       // never follows redirects: every hop is checked
	// data is the integrator's platform data API (at dataSrv.URL+"/data"), signed with dataKey.
	data    *datasim.API
	dataSrv *httptest.Server
	dataKey []byte
}

// dataTimeout bounds one data API call in the tests (the integrator-down cases wait it out).
const dataTimeout = 2 * time.Second

const (
	testClientID   = "tool-client-1"
	testDeployment = "deploy-1"
)

func newHarness(t testing.TB, mutate func(*ltiv1.ToolRegistration)) *harness {
	t.Helper()
	return newHarnessWithStore(t, mutate, replay.NewMemory(10000))
}

// newHarnessWithStore is newHarness with the replay store given.
func newHarnessWithStore(t testing.TB, mutate func(*ltiv1.ToolRegistration), replays replay.Store) *harness {
	t.Helper()
	h := &harness{t: t, clock: &clock{}, tools: registry.NewTools(),
		client: &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}

	now := time.Now()
	pk, err := keyring.Signing.NewKey(now, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.signingKey = pk
	if h.signer, err = signing.NewKeyring([]keyring.SigningKey{pk}); err != nil {
		t.Fatal(err)
	}
	sk, err := keyring.Sealing.NewKey(now, 0)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := sessions.NewKeyring([]keyring.SealingKey{sk})
	if err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	h.ltiop = httptest.NewServer(mux)
	t.Cleanup(h.ltiop.Close)
	h.integrator = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK) // the integrator's pages: the test reads the URL it was sent to
	}))
	t.Cleanup(h.integrator.Close)

	h.tool, err = toolsim.New(toolsim.Config{
		ClientID: testClientID, DeploymentID: testDeployment, Issuer: h.ltiop.URL,
		AuthorizationEndpoint: h.ltiop.URL + paths.PlatformAuthorize,
		TokenEndpoint:         h.ltiop.URL + paths.PlatformToken,
		PlatformJWKSURL:       h.ltiop.URL + paths.PlatformJWKS,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.toolSrv = httptest.NewServer(h.tool.Handler())
	t.Cleanup(h.toolSrv.Close)

	h.dataKey = bytes.Repeat([]byte{7}, 32)
	h.data = datasim.New(h.dataKey)
	h.dataSrv = httptest.NewServer(h.data.Handler())
	t.Cleanup(h.dataSrv.Close)
	dataPolicy := testoutbound.Dev()
	dataPolicy.Timeout = dataTimeout

	h.platform = platformmode.New(platformmode.Options{
		PublicURL: h.ltiop.URL, Issuer: h.ltiop.URL,
		LaunchURL: h.integrator.URL + "/launch", DeepLinkingURL: h.integrator.URL + "/deep-link",
		DeepLinkingReturnURL: h.integrator.URL + "/content-items",
		DevMode:              true, ClockSkew: 30 * time.Second, Now: h.clock.Now, DataURL: h.dataSrv.URL + "/data",
	}, h.tools, registry.NewPeerKeys(outbound.NewClient(testoutbound.Dev())), h.signer, sealer, replays) // the tool is on loopback
	h.platform.SetData(&platformdata.Client{Sender: &webhook.Sender{Client: webhook.NewClient(dataPolicy), Key: func() []byte { return h.dataKey }}})
	p := h.platform
	for pattern, f := range map[string]http.HandlerFunc{
		"GET " + paths.PlatformJWKS:                                       p.JWKS,
		"GET " + paths.PlatformAuthorize:                                  p.Authorize,
		"POST " + paths.PlatformAuthorize:                                 p.Authorize,
		"POST " + paths.PlatformToken:                                     p.Token,
		"POST " + paths.PlatformDeepLinkingReturn:                         p.DeepLinkingReturn,
		"POST /api/launches":                                              p.CreateLaunch,
		"POST /api/launches/idtoken":                                      p.AnswerLaunch,
		"POST /api/launches/content-items":                                p.ContentItems,
		"POST /api/tokens/introspect":                                     p.Introspect,
		"GET " + paths.PlatformServices + "/memberships":                  p.Memberships,
		"GET " + paths.PlatformServices + "/lineitems":                    p.LineItems,
		"POST " + paths.PlatformServices + "/lineitems":                   p.CreateLineItem,
		"GET " + paths.PlatformServices + "/lineitems/{lineItem}":         p.GetLineItem,
		"PUT " + paths.PlatformServices + "/lineitems/{lineItem}":         p.UpdateLineItem,
		"DELETE " + paths.PlatformServices + "/lineitems/{lineItem}":      p.DeleteLineItem,
		"POST " + paths.PlatformServices + "/lineitems/{lineItem}/scores": p.PostScore,
		"GET " + paths.PlatformServices + "/lineitems/{lineItem}/results": p.Results,
	} {
		mux.Handle(pattern, httpapi.LimitBody(1<<20)(f))
	}

	h.reg = &ltiv1.ToolRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "sample-tool", Namespace: "ltiop", UID: types.UID("uid-1"), Generation: 1,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: ltiv1.ToolRegistrationSpec{
			Name: "Sample tool", ClientID: testClientID,
			LoginURL:        ltiv1.EndpointURL(h.toolSrv.URL + "/login"),
			RedirectionURIs: []ltiv1.EndpointURL{ltiv1.EndpointURL(h.toolSrv.URL + "/launch"), ltiv1.EndpointURL(h.toolSrv.URL + "/deeplink-launch")},
			TargetLinkURI:   ltiv1.EndpointURL(h.toolSrv.URL + "/launch"),
			DeepLinkingURL:  ltiv1.EndpointURL(h.toolSrv.URL + "/deeplink-launch"),
			AuthConfig:      ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: h.toolSrv.URL + "/jwks"},
			DeploymentID:    testDeployment,
			Scopes:          []ltiv1.Scope{ltiv1.ScopeNRPSMembership, ltiv1.ScopeAGSLineItem, ltiv1.ScopeAGSScore},
			DevMode:         true,
		},
		Status: ltiv1.ToolRegistrationStatus{Conditions: []metav1.Condition{{
			Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: ltiv1.ReasonReady,
		}}},
	}
	if mutate != nil {
		mutate(h.reg)
	}
	h.tools.Apply(h.reg)
	return h
}

// api calls an integrator API endpoint with a JSON body and decodes the answer into out.
func (h *harness) api(path string, body, out any) int {
	h.t.Helper()
	b, _ := json.Marshal(body)
	res, err := h.client.Post(h.ltiop.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s: %d %s: %v", path, res.StatusCode, data, err)
		}
	}
	return res.StatusCode
}

// apiError calls an API endpoint that must fail and returns the status and details.message.
func (h *harness) apiError(path string, body any) (int, string, string) {
	h.t.Helper()
	var env httpapi.Envelope
	status := h.api(path, body, &env)
	return status, env.Details.Message, env.Details.Description
}

func (h *harness) createLaunch(req platformmode.CreateLaunchRequest) platformmode.LaunchParameters {
	h.t.Helper()
	if req.ToolID == "" {
		req.ToolID = h.reg.Name
	}
	var out platformmode.LaunchParameters
	if status := h.api("/api/launches", req, &out); status != http.StatusCreated {
		h.t.Fatalf("create launch: %d", status)
	}
	return out
}

// login runs the tool's login initiation with the launch parameters, as the browser does
// with the auto-submitted form, and returns the authorization request the tool built.
func (h *harness) login(lp platformmode.LaunchParameters) url.Values {
	h.t.Helper()
	action, form, ok := lmssim.ParseAutoSubmit(lp.Form)
	if !ok || action != lp.LoginURL {
		h.t.Fatalf("the launch form does not post to the login URL: %q", lp.Form)
	}
	res, err := h.client.PostForm(action, form)
	if err != nil {
		h.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		h.t.Fatalf("tool login: %d %s", res.StatusCode, b)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if !strings.HasPrefix(loc.String(), h.ltiop.URL+paths.PlatformAuthorize) {
		h.t.Fatalf("tool login redirects to %s", loc)
	}
	return loc.Query()
}

// authorize sends an authorization request (GET, or POST when post is set).
func (h *harness) authorize(q url.Values, post bool) *http.Response {
	h.t.Helper()
	var res *http.Response
	var err error
	if post {
		res, err = h.client.PostForm(h.ltiop.URL+paths.PlatformAuthorize, q)
	} else {
		res, err = h.client.Get(h.ltiop.URL + paths.PlatformAuthorize + "?" + q.Encode())
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// payloadFrom checks a successful authorization response and returns the payload.
func (h *harness) payloadFrom(res *http.Response, page string) string {
	h.t.Helper()
	defer res.Body.Close()
	if res.StatusCode != http.StatusFound {
		b, _ := io.ReadAll(res.Body)
		h.t.Fatalf("authorize: %d %s", res.StatusCode, b)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != h.integrator.URL+page {
		h.t.Fatalf("authorize redirects to %s, want the integrator's %s", got, page)
	}
	p := loc.Query().Get("payload")
	if p == "" {
		h.t.Fatal("no payload")
	}
	return p
}

// oidcError reads an OIDC error response: an auto-posting form to the redirect_uri.
func (h *harness) oidcError(res *http.Response, redirectURI string) url.Values {
	h.t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	action, form, ok := lmssim.ParseAutoSubmit(string(b))
	if res.StatusCode != http.StatusOK || !ok {
		h.t.Fatalf("want an OIDC error form, got %d %s", res.StatusCode, b)
	}
	if action != redirectURI {
		h.t.Fatalf("the error goes to %s, want the registered %s", action, redirectURI)
	}
	return form
}

// on returns the harness reporting to t (a subtest).
func (h *harness) on(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

func launchData(payload string) ltiplatform.LaunchData {
	return ltiplatform.LaunchData{
		Payload: payload,
		User: &ltiplatform.User{Roles: []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"},
			Name: "Ada Lovelace", GivenName: "Ada", FamilyName: "Lovelace", Email: "ada@example.edu"},
		Context: &ltiplatform.Context{ID: "course-1", Label: "MATH101", Title: "Analytical Engines",
			Type: []string{"http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"}},
		Custom: map[string]string{"chapter": "3"},
		Services: &ltiplatform.Services{
			NamesAndRoles: &ltiplatform.NamesAndRoles{ContextMembershipsURL: "https://lms.example.edu/courses/1/members"},
			AssignmentAndGrades: &ltiplatform.AssignmentAndGrades{LineItemsURL: "https://lms.example.edu/courses/1/lineitems",
				Scopes: []string{"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem", "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"}},
		},
	}
}

// answerAndPost answers the payload and auto-posts the resulting form to the tool, as the
// integrator's page does in the browser, and returns the launch the tool recorded.
func (h *harness) answerAndPost(d ltiplatform.LaunchData) (platformmode.IDTokenAnswer, toolsim.Launch) {
	h.t.Helper()
	var ans platformmode.IDTokenAnswer
	if status := h.api("/api/launches/idtoken", d, &ans); status != http.StatusOK {
		h.t.Fatalf("answer: %d", status)
	}
	action, form, ok := lmssim.ParseAutoSubmit(ans.Form)
	if !ok || action != ans.RedirectURI || form.Get("id_token") != ans.IDToken || form.Get("state") != ans.State {
		h.t.Fatalf("P-AUTH-13: the answer's form does not post id_token and state to the redirect URI: %q", ans.Form)
	}
	n := len(h.tool.Launches())
	res, err := h.client.PostForm(action, form)
	if err != nil {
		h.t.Fatal(err)
	}
	res.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := h.tool.WaitLaunch(ctx, n+1)
	if err != nil {
		h.t.Fatal(err)
	}
	return ans, l
}

// launchToPayload runs a launch up to the integrator's page and returns its payload.
func (h *harness) launchToPayload(req platformmode.CreateLaunchRequest) string {
	h.t.Helper()
	q := h.login(h.createLaunch(req))
	page := "/launch"
	if req.MessageType == ltiplatform.MessageDeepLinking {
		page = "/deep-link"
	}
	return h.payloadFrom(h.authorize(q, false), page)
}
