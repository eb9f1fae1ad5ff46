package e2e

import (
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/servicesim"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testredis"
)

// Three replicas with leader election behind a round-robin Service, sharing one real Redis
// as their replay store: every single-use rule holds across replicas, and a use that cannot
// be recorded is refused.
var _ = Describe("Replicas sharing a Redis", func() {
	It("refuse on every replica what one replica used, and nothing unrecorded", func(ctx SpecContext) {
		const ns = "scaleout"
		createNamespace(ns)
		redis := testredis.Start(GinkgoT())
		service := httptest.NewUnstartedServer(nil) // the Kubernetes Service: the public URL
		service.Start()
		DeferCleanup(service.Close)
		_, port, _ := net.SplitHostPort(service.Listener.Addr().String())
		public := "http://localhost:" + port
		integrator := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		DeferCleanup(integrator.Close)

		var replicas []*devInstance
		var backends []string
		for range 3 {
			r := startReplica(ns, restCfg, func(c *config.Config) {
				c.PublicURL, c.LeaderElection, c.ReplayStore = public, true, redis.URL
				c.LaunchURL, c.PlatformLaunchURL, c.OAuthReturnURL = launchURL, integrator.URL+"/launch", oauthReturn
			})
			replicas, backends = append(replicas, r), append(backends, r.Local)
		}
		rr, err := servicesim.NewRoundRobin(backends...)
		Expect(err).NotTo(HaveOccurred())
		service.Config.Handler = rr

		By("registering an LMS, seen by every replica")
		lmsSrv := httptest.NewServer(nil)
		DeferCleanup(lmsSrv.Close)
		sim, err := lmssim.New(lmsSrv.URL, "scaleout-client", "deployment-1")
		Expect(err).NotTo(HaveOccurred())
		lmsSrv.Config.Handler = sim.Handler()
		sim.ToolLoginURL, sim.ToolRedirectURI = public+paths.Login, public+paths.Launch
		sim.EnableOAuth2("api-client", "api-secret")
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lms-api-key"},
			StringData: map[string]string{"client_id": "api-client", "client_secret": "api-secret"}})).To(Succeed())
		lmsSpec := simRegistration(sim, lmsSrv.URL)
		lmsSpec.OAuth2 = &ltiv1.OAuth2Client{SecretName: "lms-api-key",
			AuthorizeURL: ltiv1.EndpointURL(lmsSrv.URL + lmssim.OAuthAuthorizePath), TokenURL: ltiv1.EndpointURL(lmsSrv.URL + lmssim.OAuthTokenPath)}
		Expect(k8s.Create(ctx, &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lms"}, Spec: lmsSpec})).To(Succeed())
		for _, r := range replicas {
			Eventually(func() bool { p := r.Registry.Get("lms"); return p != nil && p.Ready && p.Key != nil }).Should(BeTrue())
		}

		By("a login on one replica and its launch on another")
		b := newBrowser()
		res, err := b.client.Get(lmsSrv.URL + lmssim.StartPath) // the LMS sends the browser to the login
		Expect(err).NotTo(HaveOccurred())
		page := readBody(res)
		loginReplica := rr.Last.Load()
		action, form, ok := lmssim.ParseAutoSubmit(page)
		Expect(ok).To(BeTrue(), page)
		// The browser-binding cookie (scoped to /lti/): the launch clears it, an attacker would
		// have kept it.
		publicURL, _ := url.Parse(public + paths.Launch)
		binding := b.jar.Cookies(publicURL)
		Expect(binding).NotTo(BeEmpty())
		launched := b.post(action, form)
		Expect(rr.Last.Load()).NotTo(Equal(loginReplica), "the launch reached another replica than the login")
		Expect(launched.Ltik).NotTo(BeEmpty(), launched.Body)

		By("the same id_token, state and cookie again, on every replica")
		for range replicas {
			b.jar.SetCookies(publicURL, binding)
			again := b.post(action, form)
			Expect(again.Status).To(Equal(http.StatusUnauthorized), again.Body)
			Expect(again.Body).To(ContainSubstring("STATE_ALREADY_USED"))
		}

		By("a platform-mode nonce reused on another replica within 30 s: DUPLICATE_NONCE")
		tool, err := toolsim.New(toolsim.Config{Issuer: public, AuthorizationEndpoint: public + paths.PlatformAuthorize,
			TokenEndpoint: public + paths.PlatformToken, PlatformJWKSURL: public + paths.PlatformJWKS})
		Expect(err).NotTo(HaveOccurred())
		toolSrv := httptest.NewServer(tool.Handler())
		DeferCleanup(toolSrv.Close)
		toolReg := registerTool(ctx, ns, "tool", tool, toolSrv.URL)
		// Every replica must know the tool before requests may land on any of them.
		for _, r := range replicas {
			awaitToolReady(r.Local, "tool")
		}
		created := callAt(public, "POST", "/api/launches", map[string]any{"toolId": "tool", "user": "student-1", "resourceLink": map[string]string{"id": "rl-1"}}, bearer)
		Expect(created.Status).To(Equal(201), string(created.Raw))
		params := created.JSON["params"].(map[string]any)
		noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		authorize := func(state string) (int, string, string) {
			q := url.Values{"scope": {"openid"}, "response_type": {"id_token"}, "response_mode": {"form_post"}, "prompt": {"none"},
				"client_id": {toolReg.Status.ClientID}, "redirect_uri": {toolSrv.URL + "/launch"}, "state": {state}, "nonce": {"nonce-shared-1"},
				"login_hint": {params["login_hint"].(string)}, "lti_message_hint": {params["lti_message_hint"].(string)}}
			res, err := noRedirect.Get(public + paths.PlatformAuthorize + "?" + q.Encode())
			Expect(err).NotTo(HaveOccurred())
			return res.StatusCode, res.Header.Get("Location"), readBody(res)
		}
		nonceUsed := time.Now()
		status, location, body := authorize("state-1")
		Expect(status).To(Equal(http.StatusFound), body)
		first := rr.Last.Load()
		toIntegrator, err := url.Parse(location)
		Expect(err).NotTo(HaveOccurred())
		payload := toIntegrator.Query().Get("payload")
		Expect(payload).NotTo(BeEmpty())
		status, _, body = authorize("state-2")
		Expect(rr.Last.Load()).NotTo(Equal(first))
		Expect(body).To(ContainSubstring("DUPLICATE_NONCE"), "status %d", status)

		By("a payload answered on one replica and again on another: 409")
		answer := map[string]any{"payload": payload, "user": map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}}}
		Expect(callAt(public, "POST", "/api/launches/idtoken", answer, bearer).Status).To(Equal(200))
		again := callAt(public, "POST", "/api/launches/idtoken", answer, bearer)
		Expect(again.Status).To(Equal(http.StatusConflict), string(again.Raw))
		Expect(again.errorCode()).To(Equal("PAYLOAD_ALREADY_USED"))

		By("a client assertion used on one replica and again on another")
		assertion, err := tool.ClientAssertion(public + paths.PlatformToken)
		Expect(err).NotTo(HaveOccurred())
		tokenWith := func() (int, string) {
			res, err := http.PostForm(public+paths.PlatformToken, url.Values{"grant_type": {"client_credentials"},
				"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
				"client_assertion":      {assertion}, "scope": {string(ltiv1.ScopeNRPSMembership)}})
			Expect(err).NotTo(HaveOccurred())
			return res.StatusCode, readBody(res)
		}
		status, body = tokenWith()
		Expect(status).To(Equal(200), body)
		status, body = tokenWith()
		Expect(status).To(Equal(http.StatusUnauthorized), body)
		Expect(body).To(ContainSubstring("already used"))

		By("an OAuth one-time code traded on one replica and again on another")
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Host == "app.test.example" {
				return http.ErrUseLastResponse // the integrator's return page
			}
			return nil
		}}
		res, err = browser.Get(public + "/oauth/start/lms")
		Expect(err).NotTo(HaveOccurred())
		readBody(res)
		returned, err := url.Parse(res.Header.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		code := returned.Query().Get("code")
		Expect(code).NotTo(BeEmpty(), res.Header.Get("Location"))
		traded := callAt(public, "POST", "/api/oauth/access-token/lms", map[string]any{"code": code}, bearer)
		Expect(traded.Status).To(Equal(200), string(traded.Raw))
		traded = callAt(public, "POST", "/api/oauth/access-token/lms", map[string]any{"code": code}, bearer)
		Expect(traded.Status).To(Equal(400), "the one-time code is single use on every replica: %s", traded.Raw)

		By("the platform-mode nonce, once its 30 s window has passed, on yet another replica")
		time.Sleep(time.Until(nonceUsed.Add(31 * time.Second)))
		status, _, body = authorize("state-3")
		Expect(status).To(Equal(http.StatusFound), body)

		By("Redis stopped: launches are refused, nothing is accepted unrecorded")
		redis.Stop()
		b = newBrowser()
		res, err = b.client.Get(lmsSrv.URL + lmssim.StartPath)
		Expect(err).NotTo(HaveOccurred())
		action, form, ok = lmssim.ParseAutoSubmit(readBody(res))
		Expect(ok).To(BeTrue())
		refused := b.post(action, form)
		Expect(refused.Status).To(Equal(http.StatusServiceUnavailable), refused.Body)
		Expect(refused.Body).To(ContainSubstring("REPLAY_STORE_UNAVAILABLE"))
		Expect(refused.Ltik).To(BeEmpty())

		By("Redis back: launches resume")
		redis.Restart()
		Eventually(func() string {
			b := newBrowser()
			res, err := b.client.Get(lmsSrv.URL + lmssim.StartPath)
			if err != nil {
				return ""
			}
			action, form, ok := lmssim.ParseAutoSubmit(readBody(res))
			if !ok {
				return ""
			}
			return b.post(action, form).Ltik
		}, 20*time.Second).ShouldNot(BeEmpty())
		for _, r := range replicas {
			Expect(r.stopped).NotTo(BeClosed())
		}
	})
})
