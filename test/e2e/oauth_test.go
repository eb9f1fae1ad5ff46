package e2e

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

const oauthReturn = "https://app.test.example/oauth/done"

var _ = Describe("OAuth2 access tokens for the LMS's REST API", Ordered, func() {
	var (
		ltiop *devInstance
		lms   *lmssim.LMS
		srv   *httptest.Server
		id    string
	)
	BeforeAll(func() {
		ltiop = startDevInstance("ltiop-oauth", func(c *config.Config) {
			c.OAuthReturnURL = oauthReturn
			c.OAuthAllowedReturnURLs = []string{"https://app.test.example/other"}
		})
		srv = httptest.NewServer(nil)
		DeferCleanup(srv.Close)
		var err error
		lms, err = lmssim.New(srv.URL, "oauth-lti-client", "deployment-1")
		Expect(err).NotTo(HaveOccurred())
		lms.EnableOAuth2("api-client", "api-secret")
		srv.Config.Handler = lms.Handler()

		ctx := context.Background()
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ltiop.Namespace, Name: "canvas-api-key"},
			StringData: map[string]string{"client_id": "api-client", "client_secret": "api-secret"}})).To(Succeed())
		id = "oauth-lms"
		Expect(k8s.Create(ctx, &ltiv1.PlatformRegistration{
			ObjectMeta: metav1.ObjectMeta{Namespace: ltiop.Namespace, Name: id},
			Spec: ltiv1.PlatformRegistrationSpec{
				URL: ltiv1.EndpointURL(srv.URL), ClientID: lms.ClientID, Name: "OAuth LMS",
				AuthenticationEndpoint: ltiv1.EndpointURL(srv.URL + lmssim.AuthPath),
				AccesstokenEndpoint:    ltiv1.EndpointURL(srv.URL + lmssim.TokenPath),
				AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: srv.URL + lmssim.JWKSPath},
				OAuth2: &ltiv1.OAuth2Client{SecretName: "canvas-api-key",
					AuthorizeURL: ltiv1.EndpointURL(srv.URL + lmssim.OAuthAuthorizePath),
					TokenURL:     ltiv1.EndpointURL(srv.URL + lmssim.OAuthTokenPath)},
			},
		})).To(Succeed())
		Eventually(func() bool { p := ltiop.Registry.Get(id); return p != nil && p.Ready }).Should(BeTrue())
	})

	// start runs the browser part: /oauth/start → LMS authorize → /oauth/callback → return URL.
	start := func(query string) (*http.Response, *http.Client) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Host == "app.test.example" {
				return http.ErrUseLastResponse
			}
			return nil
		}}
		res, err := c.Get(ltiop.URL + "/oauth/start/" + id + query)
		Expect(err).NotTo(HaveOccurred())
		readBody(res)
		return res, c
	}
	codeFrom := func(res *http.Response) string {
		loc, err := url.Parse(res.Header.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		return loc.Query().Get("code")
	}

	It("brokers the authorization-code flow with PKCE and refreshes with rotation", func() {
		res, _ := start("")
		Expect(res.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(res.Header.Get("Location")).To(HavePrefix(oauthReturn + "?"))
		code := codeFrom(res)
		Expect(code).NotTo(BeEmpty())

		tok := callAt(ltiop.Local, "POST", "/api/oauth/access-token/"+id, map[string]any{"code": code}, bearer)
		Expect(tok.Status).To(Equal(200), string(tok.Raw))
		Expect(tok.JSON).To(HaveKeyWithValue("tokenType", "Bearer"))
		access := tok.JSON["accessToken"].(string)
		refresh := tok.JSON["refreshToken"].(string)
		Expect(refresh).NotTo(BeEmpty())

		// The token opens the LMS's own API.
		req, _ := http.NewRequest("GET", srv.URL+lmssim.APIProfilePath, nil)
		req.Header.Set("Authorization", "Bearer "+access)
		profile, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(profile.StatusCode).To(Equal(200), readBody(profile))

		again := callAt(ltiop.Local, "POST", "/api/oauth/access-token/"+id, map[string]any{"code": code}, bearer)
		Expect(again.Status).To(Equal(400), "the one-time code is single use")

		fresh := callAt(ltiop.Local, "POST", "/api/oauth/access-token/"+id+"/refresh", map[string]any{"refreshToken": refresh}, bearer)
		Expect(fresh.Status).To(Equal(200), string(fresh.Raw))
		Expect(fresh.JSON["accessToken"]).NotTo(Equal(access))
		rotated := fresh.JSON["refreshToken"].(string)
		Expect(rotated).NotTo(Equal(refresh), "the LMS rotated its refresh token")
		Expect(callAt(ltiop.Local, "POST", "/api/oauth/access-token/"+id+"/refresh", map[string]any{"refreshToken": rotated}, bearer).Status).To(Equal(200))

		stale := callAt(ltiop.Local, "POST", "/api/oauth/access-token/"+id+"/refresh", map[string]any{"refreshToken": refresh}, bearer)
		Expect(stale.Status).To(BeNumerically(">=", 400))
		Expect(stale.JSON["details"]).To(HaveKeyWithValue("externalError", true))
	})

	It("refuses a return URL off the allow-list and requires the Bearer key on the API", func() {
		res, _ := start("?return_url=" + url.QueryEscape("https://evil.example/steal"))
		Expect(res.StatusCode).To(Equal(400))
		res, _ = start("?return_url=" + url.QueryEscape("https://app.test.example/other"))
		Expect(res.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(res.Header.Get("Location")).To(HavePrefix("https://app.test.example/other?"))
		Expect(callAt(ltiop.Local, "POST", "/api/oauth/access-token/"+id, map[string]any{"code": codeFrom(res)}, nil).Status).To(Equal(401))
	})

	It("refuses a callback from another browser and an LMS failure", func() {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Get(ltiop.URL + "/oauth/start/" + id)
		Expect(err).NotTo(HaveOccurred())
		readBody(res)
		authorize := res.Header.Get("Location")
		res, err = c.Get(authorize) // the LMS answers with the callback URL
		Expect(err).NotTo(HaveOccurred())
		readBody(res)
		callback := res.Header.Get("Location")
		other := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err = other.Get(callback)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.StatusCode).To(Equal(401), readBody(res))

		lms.FailOAuthToken(500)
		defer lms.FailOAuthToken(0)
		res, _ = start("")
		Expect(res.StatusCode).To(BeNumerically(">=", 400))
	})
})
