package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// drLMS is a simulated platform offering dynamic registration, on loopback.
func drLMS(mode lmssim.DeploymentMode, clientID string) (*lmssim.LMS, *httptest.Server) {
	srv := httptest.NewServer(nil)
	DeferCleanup(srv.Close)
	sim, err := lmssim.New(srv.URL, clientID, "deployment-dr")
	Expect(err).NotTo(HaveOccurred())
	sim.EnableDynamicRegistration(mode)
	srv.Config.Handler = sim.Handler()
	return sim, srv
}

// open is a browser opening a URL without following redirects.
func open(u string) (*http.Response, string) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(u)
	Expect(err).NotTo(HaveOccurred())
	return res, readBody(res)
}

func registrationsOf(ns string) []ltiv1.PlatformRegistration {
	var list ltiv1.PlatformRegistrationList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

var _ = Describe("Dynamic registration", Ordered, func() {
	var ltiop *devInstance
	BeforeAll(func() {
		ltiop = startDevInstance("ltiop-dynreg", func(c *config.Config) {
			c.OutboundAllowLoopback = true // the simulated platforms run on loopback
			c.LaunchURL = "https://app.test.example/launch"
		})
	})

	DescribeTable("registers with the platform and creates an inactive registration (T-DR-03..07)",
		func(mode lmssim.DeploymentMode, clientID string, wantDeployment bool) {
			sim, srv := drLMS(mode, clientID)
			res, body := open(sim.RegistrationStart(ltiop.Local + "/lti/register"))
			Expect(res.StatusCode).To(Equal(200), body)
			Expect(body).To(ContainSubstring("org.imsglobal.lti.close"), "T-DR-07 closing page")
			Expect(res.Header.Get("Content-Security-Policy")).To(ContainSubstring("nonce-"))

			// What ltiop sent (T-DR-04).
			Expect(sim.Registrations()).To(HaveLen(1))
			sent := sim.Registrations()[0]
			Expect(sent["redirect_uris"]).To(ConsistOf(ltiop.URL + "/lti/launch"))
			Expect(sent["initiate_login_uri"]).To(Equal(ltiop.URL + "/lti/login"))
			Expect(sent["jwks_uri"]).To(HavePrefix(ltiop.URL+"/lti/keys/"), "the registration's own key set")
			Expect(sent["token_endpoint_auth_method"]).To(Equal("private_key_jwt"))

			// What ltiop recorded (T-DR-06).
			var reg *ltiv1.PlatformRegistration
			Eventually(func() *ltiv1.PlatformRegistration {
				for _, r := range registrationsOf(ltiop.Namespace) {
					if r.Spec.ClientID == clientID {
						return &r
					}
				}
				return nil
			}).ShouldNot(BeNil())
			for _, r := range registrationsOf(ltiop.Namespace) {
				if r.Spec.ClientID == clientID {
					reg = &r
				}
			}
			Expect(string(reg.Spec.URL)).To(Equal(srv.URL))
			Expect(sent["jwks_uri"]).To(Equal(ltiop.URL+"/lti/keys/"+reg.Name), "named before the platform answered")
			Expect(string(reg.Spec.AuthenticationEndpoint)).To(Equal(srv.URL + lmssim.AuthPath))
			Expect(string(reg.Spec.AccesstokenEndpoint)).To(Equal(srv.URL + lmssim.TokenPath))
			Expect(reg.Spec.AuthConfig).To(Equal(ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: srv.URL + lmssim.JWKSPath}))
			Expect(reg.Spec.IsActive()).To(BeFalse(), "registrations start inactive")
			if wantDeployment { // T-DR-05
				Eventually(func() []string { return getReg(reg).Status.DeploymentIDs }).Should(ConsistOf("deployment-dr"))
			} else {
				Consistently(func() []string { return getReg(reg).Status.DeploymentIDs }, "1s").Should(BeEmpty())
			}

			// Registering again updates it instead of duplicating (T-DR-08).
			res, body = open(sim.RegistrationStart(ltiop.Local + "/lti/register"))
			Expect(res.StatusCode).To(Equal(200), body)
			n := 0
			for _, r := range registrationsOf(ltiop.Namespace) {
				if r.Spec.ClientID == clientID {
					n++
				}
			}
			Expect(n).To(Equal(1))
			// The platform now holds the key-set URL of the second registration message: kept as
			// the registration's alias, so it serves the registration's keys.
			again := sim.Registrations()[1]["jwks_uri"]
			Expect(again).To(Equal(ltiop.URL + "/lti/keys/" + getReg(reg).Annotations[ltiv1.AnnotationKeySetAlias]))

			// Activated, it is launchable as soon as the answer comes (issue #25: the first key is
			// made at activation, and a Moodle launching right after the 200 was refused); a
			// deployment it did not name is learnt at the launch.
			activated := callAt(ltiop.Local, "POST", "/api/platforms/"+reg.Name+"/activate", nil, bearer)
			Expect(activated.Status).To(Equal(200), string(activated.Raw))
			Expect(activated.Header.Get("Retry-After")).To(BeEmpty(), "settled within keyWait")
			Expect(activated.JSON["publicKey"]).To(HavePrefix("-----BEGIN PUBLIC KEY-----"))
			Expect(ltiop.Registry.Get(reg.Name).Launchable()).To(BeTrue(), "the serving cache sees it launchable when activate answers")
			sim.ToolLoginURL, sim.ToolRedirectURI = ltiop.URL+"/lti/login", ltiop.URL+"/lti/launch"
			b := newBrowser()
			res2, err := b.client.Get(srv.URL + lmssim.StartPath)
			Expect(err).NotTo(HaveOccurred())
			page := readBody(res2)
			action, form, ok := lmssim.ParseAutoSubmit(page)
			Expect(ok).To(BeTrue(), page)
			Expect(action).To(Equal(ltiop.URL + "/lti/launch"))
			launched := b.post(action, form)
			Expect(launched.Ltik).NotTo(BeEmpty(), launched.Body)
			Eventually(func() []string { return getReg(reg).Status.DeploymentIDs }).Should(ContainElement("deployment-dr"))
			alias := getReg(reg).Annotations[ltiv1.AnnotationKeySetAlias]
			Eventually(func(g Gomega) {
				viaAlias, own := callAt(ltiop.Local, "GET", "/lti/keys/"+alias, nil, nil), callAt(ltiop.Local, "GET", "/lti/keys/"+reg.Name, nil, nil)
				g.Expect(viaAlias.Status).To(Equal(200), string(viaAlias.Raw))
				g.Expect(string(viaAlias.Raw)).To(And(ContainSubstring(`"kid"`), Equal(string(own.Raw))), "the alias serves the registration's key set")
			}).Should(Succeed())
		},
		Entry("Canvas-style: deployment_id at the top level", lmssim.DeploymentTopLevel, "dr-canvas", true),
		Entry("Moodle-style: deployment_id inside the tool configuration", lmssim.DeploymentInToolConfig, "dr-moodle", true),
		Entry("Brightspace-style: no deployment_id", lmssim.DeploymentAbsent, "dr-d2l", false),
	)

	It("refuses a missing configuration URL (T-DR-01), an issuer on another host (T-DR-02) and blocked addresses", func() {
		res, body := open(ltiop.Local + "/lti/register")
		Expect(res.StatusCode).To(Equal(400))
		Expect(body).To(ContainSubstring("MISSING_OPENID_CONFIGURATION"))

		sim, srv := drLMS(lmssim.DeploymentTopLevel, "dr-mismatch")
		start, _ := url.Parse(sim.RegistrationStart(ltiop.Local + "/lti/register"))
		q := start.Query()
		// Same server, reached as "localhost": the issuer (127.0.0.1) no longer matches.
		q.Set("openid_configuration", strings.Replace(q.Get("openid_configuration"), "127.0.0.1", "localhost", 1))
		start.RawQuery = q.Encode()
		res, body = open(start.String())
		Expect(res.StatusCode).To(Equal(400), body)
		Expect(body).To(ContainSubstring("ISSUER_MISMATCH"))
		Expect(sim.Registrations()).To(BeEmpty())
		_ = srv

		for _, target := range []string{"http://10.1.2.3/.well-known/openid-configuration", "http://169.254.169.254/latest/meta-data/"} {
			res, body = open(ltiop.Local + "/lti/register?openid_configuration=" + url.QueryEscape(target))
			Expect(res.StatusCode).To(Equal(400), body)
			Expect(body).To(ContainSubstring("INVALID_OPENID_CONFIGURATION_URL"))
			Expect(body).To(ContainSubstring("allowed address"))
			Expect(body).NotTo(Or(ContainSubstring("10.1.2.3"), ContainSubstring("169.254")), "the answer names no address")
		}

		// A platform that redirects its configuration to a private address is refused too.
		var hits atomic.Int32
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			http.Redirect(w, r, "http://10.1.2.3/.well-known/openid-configuration", http.StatusFound)
		}))
		defer redirector.Close()
		res, body = open(ltiop.Local + "/lti/register?openid_configuration=" + url.QueryEscape(redirector.URL+"/.well-known/openid-configuration"))
		Expect(res.StatusCode).To(BeNumerically(">=", 400), body)
		Expect(hits.Load()).To(Equal(int32(1)))
	})

	It("serves the Canvas developer-key configuration", func() {
		res, body := open(ltiop.Local + "/register/canvas")
		Expect(res.StatusCode).To(Equal(200))
		Expect(body).To(ContainSubstring(`"oidc_initiation_url":"` + ltiop.URL + `/lti/login"`))
		Expect(body).To(ContainSubstring(`"public_jwk_url":"` + ltiop.URL + `/lti/keys"`))
	})
})

var _ = Describe("Dynamic registration with pre-approval", Ordered, func() {
	It("waits for the integrator, who completes it through the API", func() {
		ltiop := startDevInstance("ltiop-preapproval", func(c *config.Config) {
			c.OutboundAllowLoopback = true
			c.PreApprovalURL = "https://app.test.example/approve"
		})
		sim, srv := drLMS(lmssim.DeploymentInToolConfig, "dr-approved")
		res, body := open(sim.RegistrationStart(ltiop.Local + "/lti/register"))
		Expect(res.StatusCode).To(Equal(http.StatusSeeOther), body)
		loc, _ := url.Parse(res.Header.Get("Location"))
		Expect(loc.Host).To(Equal("app.test.example"))
		id := loc.Query().Get("registrationId")
		Expect(id).NotTo(BeEmpty())
		Expect(sim.Registrations()).To(BeEmpty(), "nothing registered before approval")

		got := callAt(ltiop.Local, "GET", "/api/registrations/"+id, nil, bearer)
		Expect(got.Status).To(Equal(200), string(got.Raw))
		Expect(got.JSON).To(HaveKeyWithValue("url", srv.URL))
		raw := callAt(ltiop.Local, "GET", "/api/registrations/"+id+"?raw=true", nil, bearer)
		Expect(raw.JSON).To(HaveKeyWithValue("issuer", srv.URL))
		Expect(callAt(ltiop.Local, "GET", "/api/registrations/"+id, nil, nil).Status).To(Equal(401))

		done := callAt(ltiop.Local, "POST", "/api/registrations/"+id+"/complete",
			map[string]any{"platformName": "Approved Moodle", "autoActivate": true}, bearer)
		Expect(done.Status).To(Equal(200), string(done.Raw))
		Expect(done.JSON["html"]).To(ContainSubstring("org.imsglobal.lti.close"))
		platformID := done.JSON["platformId"].(string)
		reg := &ltiv1.PlatformRegistration{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ltiop.Namespace, Name: platformID}, reg)).To(Succeed())
		Expect(reg.Spec.Name).To(Equal("Approved Moodle"))
		Expect(reg.Spec.IsActive()).To(BeTrue())

		again := callAt(ltiop.Local, "POST", "/api/registrations/"+id+"/complete", map[string]any{}, bearer)
		Expect(again.Status).To(Equal(409))
		Expect(callAt(ltiop.Local, "GET", "/api/registrations/garbage", nil, bearer).Status).To(Equal(404))
	})
})

func getReg(r *ltiv1.PlatformRegistration) *ltiv1.PlatformRegistration {
	out := &ltiv1.PlatformRegistration{}
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(r), out)).To(Succeed())
	return out
}
