package e2e

// The abuse suite: every attack of the hardening issue (#13), performed against the whole
// application as an attacker without a credential would, each named after the problem it
// shows. Each asserts that the attack fails and that it changed nothing. docs/security.md
// lists the defences; the handler packages test each defence in detail.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

var (
	storageValue = regexp.MustCompile(`value: "([^"]*)"`)
	storageNext  = regexp.MustCompile(`var next = "([^"]*)"`)
	pendingField = regexp.MustCompile(`name="pending" value="([^"]*)"`)
)

var _ = Describe("Abuse of the unauthenticated surface", func() {
	It("login CSRF through the platform-storage hand-over: the attacker's pending launch posted from another site is refused and stays unused", func() {
		lms := newLMS()
		// The attacker launches in their own client with platform storage and stops at the
		// storage-check page: they know the pending launch and the stored value.
		attacker := newBrowser()
		res, err := attacker.client.Get(lms.URL + lmssim.StartPath + "?storage_target=_parent&user=attacker")
		Expect(err).NotTo(HaveOccurred())
		page := readBody(res)
		value, next := storageValue.FindStringSubmatch(page), storageNext.FindStringSubmatch(page)
		Expect(value).NotTo(BeNil(), page)
		Expect(next).NotTo(BeNil(), page)
		res, err = attacker.client.Get(strings.ReplaceAll(next[1], `\u0026`, "&"))
		Expect(err).NotTo(HaveOccurred())
		action, form, ok := lmssim.ParseAutoSubmit(readBody(res))
		Expect(ok).To(BeTrue())
		check := newBrowser().post(action, form) // cookies blocked: the check page answers
		pending := pendingField.FindStringSubmatch(check.Body)
		Expect(pending).NotTo(BeNil(), check.Body)

		// The victim's browser is made to post it from the attacker's site.
		complete := url.Values{"pending": {pending[1]}, "value": {value[1]}}.Encode()
		post := func(headers map[string]string) launchResult {
			req, err := http.NewRequest("POST", publicURL+paths.LaunchComplete, strings.NewReader(complete))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			res, err := newBrowser().client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			return launchResult{Status: res.StatusCode, Location: res.Header.Get("Location"), Body: readBody(res)}
		}
		victim := post(map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"})
		Expect(victim.Status).To(Equal(http.StatusForbidden), victim.Body)
		Expect(victim.Body).To(ContainSubstring("CROSS_SITE_REQUEST"))
		Expect(victim.Location).To(BeEmpty(), "no ltik for the victim")

		// Nothing was used up: ltiop's own page still completes it.
		own := post(map[string]string{"Sec-Fetch-Site": "same-origin"})
		Expect(own.Status).To(Equal(http.StatusSeeOther), own.Body)
		Expect(own.Location).To(HavePrefix(launchURL))
	})

	It("a failing platform key set is fetched at most twice for 25 launches and does not sink the replica", func() {
		var fetches atomic.Int32
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fetches.Add(1)
			http.Error(w, "down", http.StatusServiceUnavailable)
		}))
		DeferCleanup(failing.Close)
		// A path no LMS simulator uses: ltiop remembers the failure by URL, and a later
		// simulator may be given this server's port.
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) { s.AuthConfig.Key = failing.URL + "/failing-jwks" })
		b := newBrowser()
		for range 25 {
			res := b.launch(lms, "")
			Expect(res.Status).To(BeNumerically(">=", 400), res.Body)
			Expect(res.Ltik).To(BeEmpty())
		}
		Expect(fetches.Load()).To(BeNumerically("<=", 2), "failures are remembered")
	})

	It("concurrent launches against a slow platform key set share one fetch", func() {
		var fetches atomic.Int32
		release := make(chan struct{})
		var jwks atomic.Pointer[string] // the LMS's own key set, once it exists
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fetches.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			http.Redirect(w, r, *jwks.Load(), http.StatusFound)
		}))
		DeferCleanup(slow.Close)
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) { s.AuthConfig.Key = slow.URL + "/slow-jwks" })
		own := lms.URL + lmssim.JWKSPath
		jwks.Store(&own)
		var wg sync.WaitGroup
		results := make(chan launchResult, 5)
		for range 5 {
			wg.Go(func() {
				defer GinkgoRecover()
				results <- newBrowser().launch(lms, "")
			})
		}
		Eventually(fetches.Load).Should(BeNumerically(">=", 1))
		Consistently(fetches.Load, 300*time.Millisecond).Should(Equal(int32(1)), "one fetch while it is under way")
		close(release)
		wg.Wait()
		close(results)
		for res := range results {
			Expect(res.Ltik).NotTo(BeEmpty(), res.Body)
		}
		Expect(fetches.Load()).To(Equal(int32(1)))
	})

	Describe("making ltiop call inside the network (SSRF)", func() {
		const nrps = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
		// launchWithRoster launches from an LMS whose signed launch names rosterURL as its
		// NRPS endpoint, and asks ltiop for the roster.
		launchWithRoster := func(rosterURL string) response {
			lms := servicesLMS()
			lms.Customize = func(claims, _ map[string]any) {
				claims[nrps] = map[string]any{"context_memberships_url": rosterURL, "service_versions": []string{"2.0"}}
			}
			ltik := newBrowser().launch(lms, "user=teacher-1").Ltik
			Expect(ltik).NotTo(BeEmpty())
			return call("GET", "/api/memberships", nil, ltikAuth(ltik))
		}

		It("a platform's service URL pointing at the metadata service is never called", func() {
			for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/"} {
				res := launchWithRoster(u)
				Expect(res.Status).To(Equal(http.StatusBadGateway), string(res.Raw))
				Expect(res.errorCode()).To(Equal("URL_NOT_ALLOWED"))
			}
		})

		It("a service that redirects inside the network is not followed", func() {
			redirector := httptest.NewServer(http.RedirectHandler("http://169.254.169.254/latest/meta-data/iam/", http.StatusFound))
			DeferCleanup(redirector.Close)
			res := launchWithRoster(redirector.URL + "/roster")
			Expect(res.Status).To(Equal(http.StatusBadGateway), string(res.Raw))
			Expect(res.errorCode()).To(Equal("URL_NOT_ALLOWED"))
		})

		It("the bearer token never follows a redirect to another host", func() {
			var reached atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached.Add(1) }))
			DeferCleanup(other.Close)
			moved := httptest.NewServer(http.RedirectHandler(other.URL+"/roster", http.StatusTemporaryRedirect))
			DeferCleanup(moved.Close)
			res := launchWithRoster(moved.URL + "/roster")
			Expect(res.Status).To(BeNumerically(">=", 400), string(res.Raw))
			Expect(reached.Load()).To(BeZero(), "the other host received the token")
		})

		It("an internal error page is not echoed to the caller", func() {
			internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte("<html>db-password=hunter2 at 10.0.3.7</html>"))
			}))
			DeferCleanup(internal.Close)
			res := launchWithRoster(internal.URL + "/roster")
			Expect(res.Status).To(BeNumerically(">=", 400))
			Expect(string(res.Raw)).NotTo(ContainSubstring("hunter2"))
			Expect(string(res.Raw)).NotTo(ContainSubstring("10.0.3.7"))
		})
	})

	It("a flood from one address is rate limited, and a forged X-Forwarded-For does not escape the limit", func() {
		d := startDevInstance("abuse-ratelimit", func(c *config.Config) {
			c.RateLimits.Register = config.RateLimit{Rate: 0.01, Burst: 3}
		})
		var codes []int
		for i := range 6 {
			req, err := http.NewRequest("GET", d.Local+paths.Register, nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)) // not a trusted proxy
			res, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			body := readBody(res)
			codes = append(codes, res.StatusCode)
			if res.StatusCode == http.StatusTooManyRequests {
				Expect(res.Header.Get("Retry-After")).NotTo(BeEmpty())
				Expect(body).To(ContainSubstring("RATE_LIMITED"))
			}
		}
		Expect(codes[:3]).NotTo(ContainElement(http.StatusTooManyRequests))
		Expect(codes[3:]).To(HaveEach(http.StatusTooManyRequests))
	})

	It("revoking the sealing keys revokes the ltiks a replica opened and cached", func(ctx SpecContext) {
		lms := newLMS()
		res := newBrowser().launch(lms, "")
		Expect(res.Ltik).NotTo(BeEmpty(), res.Body)
		Expect(idToken(res.Ltik).Status).To(Equal(http.StatusOK)) // now in the cache of opened ltiks

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ltiv1.DefaultServiceSecretName}}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		old := secret.UID
		Expect(k8s.Delete(ctx, secret)).To(Succeed())
		Eventually(func() int { return idToken(res.Ltik).Status }).Should(Equal(http.StatusUnauthorized))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.UID).NotTo(Equal(old), "the operator made a new keyring")
		Eventually(func() string { return newBrowser().launch(lms, "").Ltik }).ShouldNot(BeEmpty(), "new launches work")
	})

	It("an API key shorter than 32 characters opens nothing and keeps the replica not ready", func(ctx SpecContext) {
		const ns, short = "abuse-short-key", "short-key-0123"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ltiop-api-key"},
			StringData: map[string]string{"apiKey": short}})).To(Succeed())
		d := runReplica(ns, restCfg, nil)
		Eventually(func() error { _, err := http.Get(d.Local + "/readyz"); return err }).Should(Succeed())
		Consistently(func() int { return callAt(d.Local, "GET", "/readyz", nil, nil).Status }, time.Second).Should(Equal(http.StatusServiceUnavailable))
		list := callAt(d.Local, "GET", "/api/platforms", nil, map[string]string{"Authorization": "Bearer " + short})
		Expect(list.Status).To(Equal(http.StatusServiceUnavailable), string(list.Raw))
		Expect(list.errorCode()).To(Equal("API_KEY_NOT_CONFIGURED"))
	})
})

// Issue #13 §1: /lti/register needs no credential, so what it writes is bounded. A whole
// ltiop (API server, controller, informers, web server) with a registration token and a
// bound of two.
var _ = Describe("Abuse: dynamic registration used to grow state", Ordered, func() {
	const token = "e2e-registration-token-0123456789abcdef"
	var ltiop *devInstance
	ctx := context.Background()
	BeforeAll(func() {
		ltiop = startDevInstance("ltiop-dynbounds", func(c *config.Config) {
			c.OutboundAllowLoopback = true
			c.DynamicRegistration.MaxPending = 2
			c.DynamicRegistration.RequireToken = true
		})
	})
	registerAt := func(path, clientID string) (*lmssim.LMS, *http.Response, string) {
		sim, _ := drLMS(lmssim.DeploymentTopLevel, clientID)
		req, err := http.NewRequest("GET", sim.RegistrationStart(ltiop.Local+path), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "application/json")
		res, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		return sim, res, readBody(res)
	}
	kids := func() string { return string(callAt(ltiop.Local, "GET", "/lti/keys", nil, nil).Raw) }

	It("refuses /lti/register and unknown tokens when a token is required, writing nothing", func() {
		sim, res, body := registerAt("/lti/register", "bounds-no-token")
		Expect(res.StatusCode).To(Equal(http.StatusForbidden), body)
		Expect(body).To(ContainSubstring("REGISTRATION_TOKEN_REQUIRED"))
		// The token Secret does not exist yet.
		_, res, body = registerAt("/lti/register/"+token, "bounds-no-secret")
		Expect(res.StatusCode).To(Equal(http.StatusServiceUnavailable), body)
		Expect(body).To(ContainSubstring("REGISTRATION_TOKEN_NOT_CONFIGURED"))

		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ltiop.Namespace, Name: "ltiop-registration-token"},
			StringData: map[string]string{"token": token}})).To(Succeed())
		Eventually(func() string { _, _, body := registerAt("/lti/register/wrong", "bounds-wrong"); return body }).
			Should(ContainSubstring("INVALID_REGISTRATION_TOKEN"))
		Expect(sim.Registrations()).To(BeEmpty())
		Expect(registrationsOf(ltiop.Namespace)).To(BeEmpty())
	})

	It("registers with the token, makes no key until activation, and stops at the pending bound", func() {
		var names []string
		for _, id := range []string{"bounds-1", "bounds-2"} {
			_, res, body := registerAt("/lti/register/"+token, id)
			Expect(res.StatusCode).To(Equal(http.StatusOK), body)
		}
		for _, r := range registrationsOf(ltiop.Namespace) {
			Expect(r.Labels).To(HaveKeyWithValue(ltiv1.LabelOrigin, ltiv1.OriginDynamicRegistration))
			names = append(names, r.Name)
			Eventually(func() string {
				c := meta.FindStatusCondition(getReg(&r).Status.Conditions, ltiv1.ConditionReady)
				if c == nil {
					return ""
				}
				return c.Reason
			}).Should(Equal(ltiv1.ReasonAwaitingActivation))
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ltiop.Namespace, Name: controllers.KeySecretName(r.Name)}, &corev1.Secret{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no key Secret before activation")
		}
		Expect(names).To(HaveLen(2))
		Expect(kids()).To(Equal(`{"keys":[]}`))

		// The flood: the third is refused before anything is sent or written.
		sim, res, body := registerAt("/lti/register/"+token, "bounds-3")
		Expect(res.StatusCode).To(Equal(http.StatusTooManyRequests), body)
		Expect(body).To(ContainSubstring("TOO_MANY_PENDING_REGISTRATIONS"))
		Expect(sim.Registrations()).To(BeEmpty())
		Expect(registrationsOf(ltiop.Namespace)).To(HaveLen(2))

		// Activating one makes its key, publishes it, and frees a place.
		Expect(callAt(ltiop.Local, "POST", "/api/platforms/"+names[0]+"/activate", nil, bearer).Status).To(Equal(200))
		var kid string
		Eventually(func() string {
			kid = getReg(&ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ltiop.Namespace, Name: names[0]}}).Status.KID
			return kid
		}).ShouldNot(BeEmpty())
		Eventually(kids).Should(ContainSubstring(kid))
		Eventually(func() int {
			_, res, _ := registerAt("/lti/register/"+token, "bounds-4")
			return res.StatusCode
		}).Should(Equal(http.StatusOK))

		// Deactivated, it keeps its key (it was activated once) but leaves the key set.
		Expect(callAt(ltiop.Local, "POST", "/api/platforms/"+names[0]+"/deactivate", nil, bearer).Status).To(Equal(200))
		Eventually(kids).ShouldNot(ContainSubstring(kid))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ltiop.Namespace, Name: controllers.KeySecretName(names[0])}, &corev1.Secret{})
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(kids(), `"kid"`)).To(Equal(0))
	})
})
