package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

const (
	launchURL      = "https://app.test.example/launch"
	deepLinkingURL = "https://app.test.example/deep-linking"
	// submissionReviewURL receives LtiSubmissionReviewRequest launches (review_test.go).
	submissionReviewURL = "https://app.test.example/review"
)

// browser is a user agent with a cookie jar. Requests to ltiop's public URL are sent to
// the test server over loopback, so cookies, origins and redirects behave as in production.
type browser struct {
	client *http.Client
	jar    *cookiejar.Jar
}

func newBrowser() *browser {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	public, _ := url.Parse(publicURL)
	local, _ := url.Parse(baseURL)
	transport := roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == public.Host {
			r = r.Clone(r.Context())
			r.URL.Scheme, r.URL.Host = local.Scheme, local.Host
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	b := &browser{jar: jar}
	b.client = &http.Client{Jar: jar, Transport: transport, Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), "https://app.test.example") {
				return http.ErrUseLastResponse // the integrator's page: stop and look
			}
			return nil
		}}
	return b
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// launchResult is what the browser saw at the end of a launch.
type launchResult struct {
	Status   int
	Location string
	Body     string
	Ltik     string
}

// launch clicks the LMS link (login initiation), lets the LMS answer the authentication
// request with its auto-submitting form, and submits it to ltiop.
func (b *browser) launch(lms *lmsServer, query string) launchResult {
	res, err := b.client.Get(lms.URL + lmssim.StartPath + "?" + query)
	Expect(err).NotTo(HaveOccurred())
	body := readBody(res)
	if res.Request.URL.Path != lmssim.AuthPath {
		return launchResult{Status: res.StatusCode, Body: body} // refused at login
	}
	ExpectWithOffset(1, res.StatusCode).To(Equal(200), body)
	return b.submit(body)
}

// submit posts an auto-submitting form the way the browser would.
func (b *browser) submit(page string) launchResult {
	action, form, ok := lmssim.ParseAutoSubmit(page)
	ExpectWithOffset(2, ok).To(BeTrue(), page)
	return b.post(action, form)
}

func (b *browser) post(to string, form url.Values) launchResult {
	res, err := b.client.PostForm(to, form)
	Expect(err).NotTo(HaveOccurred())
	out := launchResult{Status: res.StatusCode, Location: res.Header.Get("Location"), Body: readBody(res)}
	if u, err := url.Parse(out.Location); err == nil {
		out.Ltik = u.Query().Get("ltik")
	}
	return out
}

func readBody(res *http.Response) string {
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// lmsServer is a simulated LMS on loopback, registered with ltiop.
type lmsServer struct {
	*lmssim.LMS
	URL string
	ID  string // the PlatformRegistration name
}

var lmsCount int

func newLMS(mutate ...func(*ltiv1.PlatformRegistrationSpec)) *lmsServer {
	lmsCount++
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	DeferCleanup(srv.Close)
	sim, err := lmssim.New(srv.URL, fmt.Sprintf("client-%d", lmsCount), "deployment-1")
	Expect(err).NotTo(HaveOccurred())
	sim.ToolLoginURL, sim.ToolRedirectURI = publicURL+"/lti/login", publicURL+"/lti/launch"
	srv.Config.Handler = sim.Handler()

	spec := simRegistration(sim, srv.URL)
	for _, m := range mutate {
		m(&spec)
	}
	reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("lmssim-%d", lmsCount)}, Spec: spec}
	Expect(k8s.Create(context.Background(), reg)).To(Succeed())
	DeferCleanup(func() { _ = k8s.Delete(context.Background(), reg) })
	Eventually(func() bool {
		p := ltiop.Registry.Get(reg.Name)
		return p != nil && p.Ready && p.Key != nil
	}).Should(BeTrue(), "the registration becomes usable")
	return &lmsServer{LMS: sim, URL: srv.URL, ID: reg.Name}
}

// simRegistration registers the LMS simulator sim served at base.
func simRegistration(sim *lmssim.LMS, base string) ltiv1.PlatformRegistrationSpec {
	return ltiv1.PlatformRegistrationSpec{
		URL: ltiv1.EndpointURL(base), ClientID: sim.ClientID, Name: "LMS simulator",
		AuthenticationEndpoint: ltiv1.EndpointURL(base + lmssim.AuthPath),
		AccesstokenEndpoint:    ltiv1.EndpointURL(base + lmssim.TokenPath),
		AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: base + lmssim.JWKSPath},
		DevMode:                true, // the simulator speaks plain http on loopback
	}
}

func idToken(ltik string) response {
	return call("GET", "/api/idtoken", nil, map[string]string{"Authorization": "LTIK-AUTH-V2 " + apiKey + ":" + ltik})
}

var _ = Describe("Tool-mode launch", func() {
	It("completes a login and launch and hands the integrator an ltik (T-TOK-25)", func() {
		lms := newLMS()
		b := newBrowser()
		res := b.launch(lms, "user=teacher-1&target="+url.QueryEscape(publicURL+"/lti/launch?resource=123"))
		Expect(res.Status).To(Equal(http.StatusSeeOther), res.Body)
		Expect(res.Location).To(HavePrefix(launchURL + "?"))
		loc, _ := url.Parse(res.Location)
		Expect(loc.Query().Get("resource")).To(Equal("123"), "the target link's query is kept")
		Expect(res.Ltik).NotTo(BeEmpty())
		Expect(len(res.Ltik)).To(BeNumerically("<", 4096), "the ltik fits in a URL and a header")

		// T-AUTHREQ-01 exactly the OIDC parameters, T-AUTHREQ-05 sent as a GET redirect,
		// T-AUTHREQ-03 redirect_uri byte-identical to the registered one, T-AUTHREQ-02
		// nonce and state ≥ 128 bits and distinct.
		req := lms.LastAuthRequest()
		keys := []string{}
		for k := range req {
			keys = append(keys, k)
		}
		Expect(keys).To(ConsistOf("scope", "response_type", "response_mode", "prompt", "client_id",
			"redirect_uri", "login_hint", "state", "nonce", "lti_message_hint"))
		Expect(req.Get("redirect_uri")).To(Equal(publicURL + "/lti/launch"))
		Expect(req.Get("login_hint")).To(Equal("teacher-1"))
		Expect(len(req.Get("nonce"))).To(BeNumerically(">=", 22), "≥128 bits")
		Expect(req.Get("nonce")).NotTo(Equal(req.Get("state")))

		tok := idToken(res.Ltik)
		Expect(tok.Status).To(Equal(200), string(tok.Raw))
		Expect(tok.JSON).To(HaveKeyWithValue("ltiVersion", "1.3.0"))
		user := tok.JSON["user"].(map[string]any)
		Expect(user).To(HaveKeyWithValue("id", "teacher-1"))
		Expect(user["roles"]).To(ContainElement("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"))
		platform := tok.JSON["platform"].(map[string]any)
		Expect(platform).To(HaveKeyWithValue("id", lms.ID))
		Expect(platform).To(HaveKeyWithValue("url", lms.URL))
		Expect(platform).To(HaveKeyWithValue("clientId", lms.ClientID))
		Expect(platform).To(HaveKeyWithValue("deploymentId", "deployment-1"))
		Expect(platform).To(HaveKeyWithValue("name", "LMS simulator"))
		launch := tok.JSON["launch"].(map[string]any)
		Expect(launch).To(HaveKeyWithValue("type", "LtiResourceLinkRequest"))
		Expect(launch["resourceLink"]).To(HaveKeyWithValue("id", "resource-link-1"))
		services := tok.JSON["services"].(map[string]any)
		Expect(services["namesAndRoles"]).To(HaveKeyWithValue("available", true))
		Expect(services["outcomes"]).To(HaveKeyWithValue("available", false))

		raw := call("GET", "/api/idtoken?raw=true", nil, map[string]string{"Authorization": "LTIK-AUTH-V2 " + apiKey + ":" + res.Ltik})
		Expect(raw.JSON).To(HaveKeyWithValue("sub", "teacher-1"))
		Expect(raw.JSON).To(HaveKeyWithValue("ltiVersion", "1.3.0"))

		legacy := call("GET", "/api/idtoken", nil, map[string]string{"Authorization": "LTIK-AUTH-V1 Token=" + res.Ltik + ", Additional=Bearer " + apiKey})
		Expect(legacy.Status).To(Equal(200))
	})

	It("binds the login to the browser with a SameSite=None; Secure; Partitioned cookie when there is no platform storage (T-PS-04)", func() {
		lms := newLMS()
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		q := url.Values{"iss": {lms.URL}, "client_id": {lms.ClientID}, "login_hint": {"u"}, "target_link_uri": {publicURL + "/lti/launch"}}
		res, err := noRedirect.Get(baseURL + "/lti/login?" + q.Encode())
		Expect(err).NotTo(HaveOccurred())
		readBody(res)
		Expect(res.StatusCode).To(Equal(http.StatusFound))
		cookies := res.Cookies()
		Expect(cookies).To(HaveLen(1))
		c := cookies[0]
		Expect(c.Name).To(HavePrefix("ltiop_state_"))
		Expect(c.Secure).To(BeTrue())
		Expect(c.HttpOnly).To(BeTrue())
		Expect(c.SameSite).To(Equal(http.SameSiteNoneMode))
		Expect(c.Partitioned).To(BeTrue())
		Expect(c.MaxAge).To(BeNumerically("<=", 600), "T-STATE-03: the binding lives no longer than the state")
	})

	It("sends deep-linking launches to the Deep Linking URL", func() {
		lms := newLMS()
		res := newBrowser().launch(lms, "message=LtiDeepLinkingRequest")
		Expect(res.Status).To(Equal(http.StatusSeeOther), res.Body)
		Expect(res.Location).To(HavePrefix(deepLinkingURL + "?"))
		tok := idToken(res.Ltik)
		Expect(tok.JSON["launch"]).To(HaveKeyWithValue("type", "LtiDeepLinkingRequest"))
		dl := tok.JSON["services"].(map[string]any)["deepLinking"].(map[string]any)
		Expect(dl).To(HaveKeyWithValue("available", true))
		Expect(dl["acceptTypes"]).To(ConsistOf("ltiResourceLink", "link"))
	})

	It("accepts the login as a POST form too (T-LOGIN-01) and ignores unknown parameters (T-LOGIN-06)", func() {
		lms := newLMS()
		b := newBrowser()
		form := url.Values{"iss": {lms.URL}, "login_hint": {"u"}, "target_link_uri": {publicURL + "/lti/launch"},
			"client_id": {lms.ClientID}, "canvas_region": {"us-east-1"}, "whatever": {"x"}}
		res, err := b.client.PostForm(publicURL+"/lti/login", form)
		Expect(err).NotTo(HaveOccurred())
		body := readBody(res)
		Expect(res.Request.URL.Path).To(Equal(lmssim.AuthPath), body)
		Expect(b.submit(body).Ltik).NotTo(BeEmpty())
	})

	It("ignores extra fields of the authentication response (T-TOK-24)", func() {
		lms := newLMS()
		b := newBrowser()
		form := formValues(lmsAuthPage(b, lms))
		form.Set("utf8", "✓")
		form.Set("authenticity_token", "canvas-csrf")
		form.Set("lti_storage_target", "post_message_forwarding")
		res := b.post(publicURL+"/lti/launch", form)
		Expect(res.Status).To(Equal(http.StatusSeeOther), res.Body)
		Expect(res.Ltik).NotTo(BeEmpty())
	})

	It("finds the registration by issuer alone when it is the only one (T-LOGIN-03)", func() {
		lms := newLMS()
		res, err := newBrowser().client.Get(publicURL + "/lti/login?" + url.Values{"iss": {lms.URL}, "login_hint": {"u"},
			"target_link_uri": {publicURL + "/lti/launch"}}.Encode())
		Expect(err).NotTo(HaveOccurred())
		readBody(res)
		Expect(res.Request.URL.Path).To(Equal(lmssim.AuthPath))
	})

	DescribeTable("refuses a bad login with 400 and no redirect",
		func(params func(lms *lmsServer) url.Values, status int, code string) {
			lms := newLMS()
			noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			res, err := noRedirect.Get(baseURL + "/lti/login?" + params(lms).Encode())
			Expect(err).NotTo(HaveOccurred())
			body := readBody(res)
			Expect(res.StatusCode).To(Equal(status), body)
			Expect(res.Header.Get("Location")).To(BeEmpty())
			Expect(body).To(ContainSubstring(code))
			Expect(res.Header.Get("Content-Type")).To(HavePrefix("text/html"))
		},
		Entry("T-LOGIN-02 no iss", func(l *lmsServer) url.Values {
			return url.Values{"login_hint": {"u"}, "target_link_uri": {publicURL + "/lti/launch"}}
		}, 400, "INVALID_LOGIN_REQUEST"),
		Entry("T-LOGIN-02 no login_hint", func(l *lmsServer) url.Values {
			return url.Values{"iss": {l.URL}, "client_id": {l.ClientID}, "target_link_uri": {publicURL + "/lti/launch"}}
		}, 400, "INVALID_LOGIN_REQUEST"),
		Entry("T-LOGIN-02 no target_link_uri", func(l *lmsServer) url.Values {
			return url.Values{"iss": {l.URL}, "client_id": {l.ClientID}, "login_hint": {"u"}}
		}, 400, "INVALID_LOGIN_REQUEST"),
		Entry("T-LOGIN-03 unknown client", func(l *lmsServer) url.Values {
			return url.Values{"iss": {l.URL}, "client_id": {"nope"}, "login_hint": {"u"}, "target_link_uri": {publicURL + "/lti/launch"}}
		}, 400, "UNREGISTERED_OR_INACTIVE_PLATFORM"),
		Entry("T-LOGIN-03 unknown issuer", func(l *lmsServer) url.Values {
			return url.Values{"iss": {"https://unknown.example"}, "login_hint": {"u"}, "target_link_uri": {publicURL + "/lti/launch"}}
		}, 400, "UNREGISTERED_OR_INACTIVE_PLATFORM"),
		Entry("T-LOGIN-05 target on another origin", func(l *lmsServer) url.Values {
			return url.Values{"iss": {l.URL}, "client_id": {l.ClientID}, "login_hint": {"u"}, "target_link_uri": {"https://evil.example/lti/launch"}}
		}, 400, "INVALID_TARGET_LINK_URI"),
	)

	It("refuses a login for an inactive registration and for an unknown deployment (T-LOGIN-04)", func() {
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) { s.DeploymentIDs = []string{"deployment-1"} })
		q := url.Values{"iss": {lms.URL}, "client_id": {lms.ClientID}, "login_hint": {"u"},
			"target_link_uri": {publicURL + "/lti/launch"}, "lti_deployment_id": {"deployment-9"}}
		res := call("GET", "/lti/login?"+q.Encode(), nil, map[string]string{"Accept": "application/json"})
		Expect(res.Status).To(Equal(403))
		Expect(res.errorCode()).To(Equal("UNKNOWN_DEPLOYMENT"))

		Expect(call("POST", "/api/platforms/"+lms.ID+"/deactivate", nil, bearer).Status).To(Equal(200))
		q.Del("lti_deployment_id")
		res = call("GET", "/lti/login?"+q.Encode(), nil, map[string]string{"Accept": "application/json"})
		Expect(res.Status).To(Equal(400))
		Expect(res.errorCode()).To(Equal("UNREGISTERED_OR_INACTIVE_PLATFORM"))
	})

	Describe("refuses bad launches and issues no ltik", func() {
		type mutation func(claims, header map[string]any)
		const ltiClaim = "https://purl.imsglobal.org/spec/lti/claim/"
		DescribeTable("id_token checks",
			func(m mutation, status int, code string) {
				lms := newLMS()
				lms.Customize = m
				res := newBrowser().launch(lms, "")
				Expect(res.Ltik).To(BeEmpty())
				Expect(res.Location).To(BeEmpty(), "never a redirect to the integrator")
				Expect(res.Status).To(Equal(status), res.Body)
				Expect(res.Body).To(ContainSubstring(code))
			},
			Entry("T-TOK-05 / cert No KID", mutation(func(c, h map[string]any) { h["kid"] = nil }), 401, "MISSING_KID"),
			Entry("T-TOK-08 / cert Incorrect KID", mutation(func(c, h map[string]any) { h["kid"] = "imstester_66067" }), 401, "UNKNOWN_KID"),
			Entry("T-TOK-06/07/11 issuer of another platform (the registration comes from the sealed state)", mutation(func(c, h map[string]any) { c["iss"] = c["iss"].(string) + "/" }), 401, "ISSUER_MISMATCH"),
			Entry("T-TOK-12 audience of another client", mutation(func(c, h map[string]any) { c["aud"] = "someone-else" }), 401, "AUDIENCE_MISMATCH"),
			Entry("T-TOK-12 untrusted extra audience", mutation(func(c, h map[string]any) { c["aud"] = []string{c["aud"].(string), "other"} }), 401, "AUDIENCE_MISMATCH"),
			Entry("T-TOK-13 azp of another client", mutation(func(c, h map[string]any) { c["azp"] = "other" }), 401, "AZP_MISMATCH"),
			Entry("T-TOK-14 / cert Timestamps Incorrect", mutation(func(c, h map[string]any) { c["exp"], c["iat"] = 22222, 11111 }), 401, "TOKEN_EXPIRED"),
			Entry("T-TOK-15 iat in the future", mutation(func(c, h map[string]any) { c["iat"] = time.Now().Add(time.Hour).Unix() }), 401, "INVALID_IAT"),
			Entry("T-NONCE-01 no nonce", mutation(func(c, h map[string]any) { delete(c, "nonce") }), 401, "MISSING_NONCE"),
			Entry("T-NONCE-02 another nonce", mutation(func(c, h map[string]any) { c["nonce"] = "not-the-one" }), 401, "NONCE_MISMATCH"),
			Entry("T-TOK-17 / cert Wrong LTI Version", mutation(func(c, h map[string]any) { c[ltiClaim+"version"] = "11.3" }), 400, "INVALID_LTI_VERSION"),
			Entry("T-TOK-17 / cert No LTI Version", mutation(func(c, h map[string]any) { delete(c, ltiClaim+"version") }), 400, "INVALID_LTI_VERSION"),
			Entry("T-TOK-18 / cert messsage_type Claim Missing", mutation(func(c, h map[string]any) { delete(c, ltiClaim+"message_type") }), 400, "INVALID_MESSAGE_TYPE"),
			Entry("T-TOK-18 unsupported message type", mutation(func(c, h map[string]any) { c[ltiClaim+"message_type"] = "LtiStartProctoring" }), 400, "INVALID_MESSAGE_TYPE"),
			Entry("T-TOK-19 / cert deployment_id Claim Missing", mutation(func(c, h map[string]any) { delete(c, ltiClaim+"deployment_id") }), 400, "MISSING_DEPLOYMENT_ID"),
			Entry("T-TOK-20 deployment differs from the login's", mutation(func(c, h map[string]any) { c[ltiClaim+"deployment_id"] = "deployment-2" }), 400, "DEPLOYMENT_MISMATCH"),
			Entry("T-TOK-21 / cert role Claim Missing", mutation(func(c, h map[string]any) { delete(c, ltiClaim+"roles") }), 400, "MISSING_CLAIM"),
			Entry("T-TOK-21 / cert resource_link_id Claim Missing", mutation(func(c, h map[string]any) { c[ltiClaim+"resource_link"] = map[string]any{"title": "x"} }), 400, "MISSING_CLAIM"),
			Entry("T-TOK-21 / cert user Claim Missing", mutation(func(c, h map[string]any) { delete(c, "sub") }), 400, "MISSING_CLAIM"),
			Entry("T-TOK-22 target_link_uri differs from the login's", mutation(func(c, h map[string]any) { c[ltiClaim+"target_link_uri"] = publicURL + "/lti/launch?other" }), 400, "TARGET_LINK_URI_MISMATCH"),
			Entry("§8 resource link id over 255 characters", mutation(func(c, h map[string]any) {
				c[ltiClaim+"resource_link"] = map[string]any{"id": strings.Repeat("r", 256)}
			}), 400, "IDENTIFIER_TOO_LONG"),
		)

		It("refuses forged tokens: T-TOK-03 not a JWS, T-TOK-04 HS256 and none, T-TOK-10 bad signature", func() {
			lms := newLMS()
			b := newBrowser()
			for name, forge := range map[string]func(token string) string{
				"T-TOK-03 / cert Invalid LTI message": func(string) string {
					return b64(`{}`) + "." + b64(`{"name":"badltilaunch"}`) + ".c2ln"
				},
				"T-TOK-03 two parts": func(t string) string { return t[:strings.LastIndex(t, ".")] },
				"T-TOK-04 alg none": func(t string) string {
					p := strings.Split(t, ".")
					return b64(`{"alg":"none","kid":"`+lms.KID()+`"}`) + "." + p[1] + "."
				},
				"T-TOK-04 alg HS256": func(t string) string {
					p := strings.Split(t, ".")
					return b64(`{"alg":"HS256","kid":"`+lms.KID()+`"}`) + "." + p[1] + "." + p[2]
				},
				"T-TOK-10 bad signature": func(t string) string {
					p := strings.Split(t, ".")
					return p[0] + "." + b64(`{"iss":"tampered"}`) + "." + p[2]
				},
			} {
				page := lmsAuthPage(b, lms)
				form := formValues(page)
				Expect(form.Get("id_token")).NotTo(BeEmpty())
				form.Set("id_token", forge(form.Get("id_token")))
				res := b.post(publicURL+"/lti/launch", form)
				Expect(res.Ltik).To(BeEmpty(), name)
				Expect(res.Status).To(BeElementOf(400, 401), name+": "+res.Body)
			}
		})

		It("T-TOK-01 no id_token, T-STATE-01 no state, T-TOK-02 platform error", func() {
			for name, form := range map[string]url.Values{
				"MISSING_ID_TOKEN": {"state": {"x"}},
				"MISSING_STATE":    {"id_token": {"x.y.z"}},
				"PLATFORM_ERROR":   {"error": {"login_required"}, "error_description": {"<b>no session</b>"}, "state": {"x"}},
			} {
				res := newBrowser().post(publicURL+"/lti/launch", form)
				Expect(res.Body).To(ContainSubstring(name))
				Expect(res.Ltik).To(BeEmpty())
				Expect(res.Body).NotTo(ContainSubstring("<b>no session</b>"), "request text is escaped")
			}
		})

		It("T-STATE-02 refuses a launch from a browser that did not start the login", func() {
			lms := newLMS()
			page := lmsAuthPage(newBrowser(), lms)
			res := newBrowser().post(publicURL+"/lti/launch", formValues(page)) // another browser, no cookie
			Expect(res.Status).To(Equal(401))
			Expect(res.Body).To(ContainSubstring("BROWSER_BINDING_FAILED"))
			Expect(res.Ltik).To(BeEmpty())
		})

		It("T-STATE-03 and T-NONCE-03 refuse a replayed launch, and a forged state", func() {
			lms := newLMS()
			b := newBrowser()
			page := lmsAuthPage(b, lms)
			form := formValues(page)
			launchURLs, _ := url.Parse(publicURL + "/lti/launch")
			cookiesBefore := b.jar.Cookies(launchURLs)
			Expect(cookiesBefore).NotTo(BeEmpty())
			first := b.post(publicURL+"/lti/launch", form)
			Expect(first.Ltik).NotTo(BeEmpty())

			// Replay the same response from the same browser, its state cookie put back.
			u, _ := url.Parse(publicURL + "/lti/launch")
			b.jar.SetCookies(u, cookiesBefore)
			again := b.post(publicURL+"/lti/launch", form)
			Expect(again.Ltik).To(BeEmpty())
			Expect(again.Status).To(Equal(401))

			forged := url.Values{"id_token": {form.Get("id_token")}, "state": {form.Get("state") + "x"}}
			res := b.post(publicURL+"/lti/launch", forged)
			Expect(res.Body).To(ContainSubstring("INVALID_STATE"))
		})

		It("answers JSON errors to clients that ask for JSON", func() {
			res := call("POST", "/lti/launch", nil, map[string]string{"Accept": "application/json"})
			Expect(res.Status).To(Equal(400))
			Expect(res.errorCode()).To(Equal("MISSING_ID_TOKEN"))
		})
	})

	Describe("GET /api/idtoken authentication", func() {
		It("refuses every bad header with 401 INVALID_LTIK_AUTH_AUTHORIZATION_HEADER", func() {
			lms := newLMS()
			ltik := newBrowser().launch(lms, "").Ltik
			Expect(ltik).NotTo(BeEmpty())
			tampered := []byte(ltik)
			tampered[len(tampered)/2] ^= 1
			for name, h := range map[string]string{
				"missing":        "",
				"bearer":         "Bearer " + apiKey,
				"no ltik":        "LTIK-AUTH-V2 " + apiKey,
				"empty ltik":     "LTIK-AUTH-V2 " + apiKey + ":",
				"wrong key":      "LTIK-AUTH-V2 wrong:" + ltik,
				"tampered ltik":  "LTIK-AUTH-V2 " + apiKey + ":" + string(tampered),
				"garbage ltik":   "LTIK-AUTH-V2 " + apiKey + ":abc.def",
				"v1 without key": "LTIK-AUTH-V1 Token=" + ltik,
			} {
				res := call("GET", "/api/idtoken", nil, map[string]string{"Authorization": h})
				Expect(res.Status).To(Equal(401), name)
				Expect(res.JSON).To(HaveKeyWithValue("error", "Unauthorized"), name)
				Expect(res.errorCode()).To(Equal("INVALID_LTIK_AUTH_AUTHORIZATION_HEADER"), name)
				Expect(string(res.Raw)).NotTo(ContainSubstring(apiKey), name)
			}
		})
	})
})

// lmsAuthPage runs the login and returns the LMS's auto-submitting form, not yet submitted.
func lmsAuthPage(b *browser, lms *lmsServer) string {
	res, err := b.client.Get(lms.URL + lmssim.StartPath)
	Expect(err).NotTo(HaveOccurred())
	body := readBody(res)
	ExpectWithOffset(1, res.Request.URL.Path).To(Equal(lmssim.AuthPath), body)
	return body
}

func formValues(page string) url.Values {
	_, form, _ := lmssim.ParseAutoSubmit(page)
	return form
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
