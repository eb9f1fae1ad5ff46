package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/toolsim"
)

// Platform mode end to end on the real API server: a ToolRegistration reconciled by the
// controller, the platform key from the service Secret, the Bearer API, and a real tool
// that validates what it receives against ltiop's platform JWKS.
var _ = Describe("Platform mode", func() {
	It("launches a registered tool and serves its token requests", func(ctx SpecContext) {
		d := startPlatformInstance("ltiop-platform-mode", nil)
		tool, toolURL := serveToolSim(d, nil)

		By("registering the tool; the controller fills in what the vendor configures")
		reg := registerToolOn(ctx, d, "quiz-tool", tool, toolURL, nil)
		Expect(reg.Status.ClientID).To(Equal(string(reg.UID)))
		Expect(reg.Status.DeploymentID).To(Equal("1"))
		Expect(reg.Status.Issuer).To(Equal(d.URL))
		Expect(reg.Status.AuthorizationEndpoint).To(Equal(d.URL + paths.PlatformAuthorize))
		Expect(reg.Status.TokenEndpoint).To(Equal(d.URL + paths.PlatformToken))
		Expect(reg.Status.JWKSURL).To(Equal(d.URL + paths.PlatformJWKS))

		By("publishing the key of the service Secret")
		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: "ltiop-service"}, secret)).To(Succeed())
		stored, err := keyring.Signing.Decode(secret.Data[ltiv1.SecretKeyPlatformKeys])
		Expect(err).NotTo(HaveOccurred())
		jwks := callAt(d.Local, "GET", paths.PlatformJWKS, nil, nil)
		set, err := jwk.Parse(jwks.Raw)
		Expect(err).NotTo(HaveOccurred())
		_, found := set.LookupKeyID(stored[0].ID)
		Expect(found).To(BeTrue())

		By("refusing the launch API without the API key")
		body := map[string]any{"toolId": "quiz-tool", "user": "student-5", "resourceLink": map[string]string{"id": "rl-1"}}
		Expect(callAt(d.Local, "POST", "/api/launches", body, nil).Status).To(Equal(401))

		By("creating the launch, then following the browser through the tool and ltiop")
		browser, toIntegrator := browserToIntegrator(d, body)
		Expect(toIntegrator.Path).To(Equal("/launch"))

		answer := callAt(d.Local, "POST", "/api/launches/idtoken", map[string]any{
			"payload":  toIntegrator.Query().Get("payload"),
			"user":     map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}, "name": "Sam"},
			"context":  map[string]any{"id": "c-1", "title": "Biology"},
			"services": map[string]any{"namesAndRoles": map[string]any{"contextMembershipsUrl": "https://lms.example/c-1/members"}},
		}, bearer)
		Expect(answer.Status).To(Equal(200), string(answer.Raw))
		launch := deliverToTool(ctx, browser, answer, tool)
		Expect(launch.Subject).To(Equal("student-5"))
		Expect(launch.Claims["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"]).NotTo(BeNil())

		By("issuing an access token to the tool and introspecting it")
		tr, status, err := tool.RequestToken(ctx, []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore)})
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(200))
		Expect(tr.Scope).To(Equal(string(ltiv1.ScopeNRPSMembership)))
		in := callAt(d.Local, "POST", "/api/tokens/introspect", map[string]string{"token": tr.AccessToken}, bearer)
		Expect(in.JSON["active"]).To(BeTrue())
		Expect(in.JSON["client_id"]).To(Equal(reg.Status.ClientID))

		By("deactivating the tool: its tokens turn inactive and it cannot be launched")
		reg.Spec.Active = new(bool)
		Expect(k8s.Update(ctx, reg)).To(Succeed())
		Eventually(func() any {
			return callAt(d.Local, "POST", "/api/tokens/introspect", map[string]string{"token": tr.AccessToken}, bearer).JSON["active"]
		}).Should(BeFalse())
		Expect(callAt(d.Local, "POST", "/api/launches", body, bearer).errorCode()).To(Equal("TOOL_INACTIVE"))
	})

	It("launches a tool registered through the API as soon as POST /api/tools answered", func() {
		d := startPlatformInstance("ltiop-platform-api-tool", nil)
		tool, toolURL := serveToolSim(d, nil)
		created := callAt(d.Local, "POST", "/api/tools", map[string]any{"id": "api-tool", "name": "Quiz tool",
			"loginUrl": toolURL + "/login", "redirectionUris": []string{toolURL + "/launch"}, "targetLinkUri": toolURL + "/launch",
			"authConfig": map[string]string{"method": string(ltiv1.AuthMethodJWKKey), "key": tool.PublicJWK()}}, bearer)
		Expect(created.Status).To(Equal(201), string(created.Raw))
		Expect(created.JSON["ready"]).To(BeTrue(), "the answer waits for the controller's verdict")
		launch := callAt(d.Local, "POST", "/api/launches", map[string]any{"toolId": "api-tool", "user": "student-1",
			"resourceLink": map[string]string{"id": "rl-1"}}, bearer)
		Expect(launch.Status).To(Equal(201), string(launch.Raw))
	})
})

// registerTool registers the toolsim tool served at base as ToolRegistration ns/name, waits
// until the controller made it Ready, and gives the tool the client and deployment ids.
func registerTool(ctx context.Context, ns, name string, tool *toolsim.Tool, base string) *ltiv1.ToolRegistration {
	return registerToolWith(ctx, ns, name, tool, base, nil)
}

// registerToolWith is registerTool with the spec changed by mutate before it is created.
func registerToolWith(ctx context.Context, ns, name string, tool *toolsim.Tool, base string, mutate func(*ltiv1.ToolRegistrationSpec)) *ltiv1.ToolRegistration {
	reg := &ltiv1.ToolRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ltiv1.ToolRegistrationSpec{
			Name: "Quiz tool", LoginURL: ltiv1.EndpointURL(base + "/login"),
			RedirectionURIs: []ltiv1.EndpointURL{ltiv1.EndpointURL(base + "/launch")},
			TargetLinkURI:   ltiv1.EndpointURL(base + "/launch"),
			AuthConfig:      ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: tool.PublicJWK()},
			Scopes:          []ltiv1.Scope{ltiv1.ScopeNRPSMembership},
		},
	}
	if mutate != nil {
		mutate(&reg.Spec)
	}
	ExpectWithOffset(1, k8s.Create(ctx, reg)).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionReady)).To(BeTrue())
	}).Should(Succeed())
	cfg := tool.Config()
	cfg.ClientID, cfg.DeploymentID = reg.Status.ClientID, reg.Status.DeploymentID
	tool.SetConfig(cfg)
	return reg
}

// registerToolOn is registerToolWith that returns once d serves the tool as ready too: d
// learns of the Ready condition through its own informer, a moment after the API server,
// and until then refuses a launch of the tool with TOOL_INACTIVE.
func registerToolOn(ctx context.Context, d *devInstance, name string, tool *toolsim.Tool, base string, mutate func(*ltiv1.ToolRegistrationSpec)) *ltiv1.ToolRegistration {
	reg := registerToolWith(ctx, d.Namespace, name, tool, base, mutate)
	awaitToolReady(d.Local, name)
	return reg
}

// awaitToolReady waits until the instance at base answers that tool id is ready.
func awaitToolReady(base, id string) {
	EventuallyWithOffset(1, func(g Gomega) {
		got := callAt(base, "GET", "/api/tools/"+id, nil, bearer)
		g.Expect(got.Status).To(Equal(200), string(got.Raw))
		g.Expect(got.JSON["ready"]).To(Equal(true))
	}).Should(Succeed())
}

// startPlatformInstance starts an instance in dev mode, in a new namespace ns, whose
// platform-mode launch URL is a do-nothing integrator page; mutate, when set, changes the
// rest of its configuration.
func startPlatformInstance(ns string, mutate func(*config.Config)) *devInstance {
	integrator := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	DeferCleanup(integrator.Close)
	return startDevInstance(ns, func(c *config.Config) {
		c.PlatformLaunchURL = integrator.URL + "/launch"
		if mutate != nil {
			mutate(c)
		}
	})
}

// newToolSim is a tool that trusts instance d as its platform; mutate, when set, adjusts
// its configuration first.
func newToolSim(d *devInstance, mutate func(*toolsim.Config)) *toolsim.Tool {
	cfg := toolsim.Config{Issuer: d.URL,
		AuthorizationEndpoint: d.URL + paths.PlatformAuthorize,
		TokenEndpoint:         d.URL + paths.PlatformToken,
		PlatformJWKSURL:       d.URL + paths.PlatformJWKS}
	if mutate != nil {
		mutate(&cfg)
	}
	tool, err := toolsim.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return tool
}

// browserToIntegrator creates a launch with POST /api/launches on instance d and follows the
// browser, which follows no redirect by itself, through the tool's login initiation and
// ltiop's authorization endpoint; it returns the browser and where ltiop sent it: the
// integrator's launch page, with the payload to answer.
func browserToIntegrator(d *devInstance, launch map[string]any) (*http.Client, *url.URL) {
	created := callAt(d.Local, "POST", "/api/launches", launch, bearer)
	ExpectWithOffset(1, created.Status).To(Equal(201), string(created.Raw))
	action, form, ok := lmssim.ParseAutoSubmit(created.JSON["form"].(string))
	ExpectWithOffset(1, ok).To(BeTrue())
	browser := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.PostForm(action, form)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	res.Body.Close()
	ExpectWithOffset(1, res.StatusCode).To(Equal(http.StatusFound), "the tool's login initiation")
	res, err = browser.Get(res.Header.Get("Location")) // the authorization request
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	res.Body.Close()
	ExpectWithOffset(1, res.StatusCode).To(Equal(http.StatusFound), "ltiop's authorization endpoint")
	toIntegrator, err := url.Parse(res.Header.Get("Location"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return browser, toIntegrator
}

// serveToolSim is newToolSim served over loopback HTTP until the spec ends; it returns the
// tool and its URL.
func serveToolSim(d *devInstance, mutate func(*toolsim.Config)) (*toolsim.Tool, string) {
	tool := newToolSim(d, mutate)
	srv := httptest.NewServer(tool.Handler())
	DeferCleanup(srv.Close)
	return tool, srv.URL
}

// deliverToTool posts the id_token form of the integrator's launch answer to the tool, as
// the browser would, and returns the launch the tool accepted.
func deliverToTool(ctx context.Context, browser *http.Client, answer response, tool *toolsim.Tool) toolsim.Launch {
	action, form, ok := lmssim.ParseAutoSubmit(answer.JSON["form"].(string))
	Expect(ok).To(BeTrue())
	res, err := browser.PostForm(action, form)
	Expect(err).NotTo(HaveOccurred())
	res.Body.Close()
	launch, err := tool.WaitLaunch(ctx, 1)
	Expect(err).NotTo(HaveOccurred())
	Expect(launch.OK).To(BeTrue(), launch.Err)
	return launch
}
