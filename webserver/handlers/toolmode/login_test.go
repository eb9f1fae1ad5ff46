package toolmode_test

import (
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

// recreate replaces the registration by one of the same name with another UID and its
// own key, as deleting and applying it again in the cluster would.
func (rg *rig) recreate(uid types.UID) {
	rg.reg.Forget(rg.pr.DeepCopy())
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.UID = uid })
	rg.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "key-" + string(uid), OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: rg.pr.Name, UID: uid, Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: rg.keyPEM},
	})
}

// addRegistration registers another usable client of the rig's LMS, with its own key.
func (rg *rig) addRegistration(name, clientID string) {
	pr := rg.pr.DeepCopy()
	pr.Name, pr.UID, pr.Spec.ClientID = name, types.UID("uid-"+name), clientID
	rg.reg.Apply(pr)
	rg.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-tool-key", OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: name, UID: pr.UID, Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: rg.keyPEM},
	})
}

// T-LOGIN-07, T-AUTHREQ-01/02/03/05: a valid login is a GET redirect to the registered
// authentication endpoint with exactly the OIDC parameters, which the platform accepts.
func TestLoginRedirectsToTheRegisteredEndpoint(t *testing.T) {
	rg := newRig(t)
	client := browser()
	params := rg.loginParams()
	params.Set("lti_message_hint", `{"a": "b c"}`)
	params.Set("canvas_region", "us-east-1") // T-LOGIN-06: ignored
	res := rg.login(t, client, params, false)
	if res.Status != http.StatusFound {
		t.Fatalf("login: %d %s", res.Status, res.Body)
	}
	loc := res.Location(t)
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != rg.lms.Issuer+lmssim.AuthPath {
		t.Fatalf("redirect to %s, not to the registered endpoint", got)
	}
	q := loc.Query()
	var names []string
	for k := range q {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"client_id", "login_hint", "lti_message_hint", "nonce", "prompt", "redirect_uri", "response_mode", "response_type", "scope", "state"}
	if !slices.Equal(names, want) {
		t.Fatalf("authentication request parameters %v, want %v", names, want)
	}
	for k, v := range map[string]string{
		"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
		"client_id": rg.lms.ClientID, "redirect_uri": rg.ltiop.URL + paths.Launch, "login_hint": "u",
		"lti_message_hint": `{"a": "b c"}`,
	} {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	if n, s := q.Get("nonce"), q.Get("state"); len(n) < 22 || n == s { // T-AUTHREQ-02: ≥ 128 bits, distinct
		t.Errorf("nonce %q, state %q", n, s)
	}

	// The browser is bound to the login: a plain-http dev-mode cookie here (SameSite=Lax).
	cookies := (&http.Response{Header: res.Header}).Cookies()
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0].Name, "ltiop_state_") || !cookies[0].HttpOnly ||
		cookies[0].MaxAge <= 0 || cookies[0].MaxAge > 600 || cookies[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("binding cookie %+v", cookies)
	}

	// The platform checks the request as strictly as Canvas and answers the launch form.
	authRes, err := client.Get(loc.String())
	page := testhttp.Read(t, authRes, err)
	if page.Status != http.StatusOK {
		t.Fatalf("the platform refused the authentication request: %d %s", page.Status, page.Body)
	}
	if _, form, ok := lmssim.ParseAutoSubmit(page.Body); !ok || form.Get("state") != q.Get("state") {
		t.Fatalf("no launch form: %s", page.Body)
	}
}

// T-PS-04: outside dev mode the binding cookie is SameSite=None; Secure; Partitioned, as
// the launch is a cross-site POST from the LMS's frame.
func TestLoginBindingCookieIsCrossSiteOutsideDevMode(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.opts.DevMode = false })
	res := rg.login(t, browser(), rg.loginParams(), false)
	if res.Status != http.StatusFound {
		t.Fatalf("login: %d %s", res.Status, res.Body)
	}
	c := (&http.Response{Header: res.Header}).Cookies()
	if len(c) != 1 || !c[0].Secure || !c[0].Partitioned || c[0].SameSite != http.SameSiteNoneMode || c[0].Path != "/lti/" {
		t.Fatalf("binding cookie %+v", c)
	}
}

// T-LOGIN-01: the login may come as a POST form; T-LOGIN-03: without client_id, the only
// registration of the issuer is used.
func TestLoginAsPostFormAndByIssuerAlone(t *testing.T) {
	rg := newRig(t)
	params := rg.loginParams()
	params.Del("client_id")
	res := rg.postForm(t, browser(), paths.Login, params, true)
	if res.Status != http.StatusFound || res.Location(t).Query().Get("client_id") != rg.lms.ClientID {
		t.Fatalf("login: %d %s %s", res.Status, res.Header.Get("Location"), res.Body)
	}
}

// T-PS-01: with lti_storage_target the login answers a page that keeps the binding in the
// platform's storage, posting only to the platform's origin, then goes on to the platform.
func TestLoginWithPlatformStorage(t *testing.T) {
	rg := newRig(t)
	params := rg.loginParams()
	params.Set("lti_storage_target", "_parent")
	res := rg.login(t, browser(), params, false)
	if res.Status != http.StatusOK {
		t.Fatalf("login: %d %s", res.Status, res.Body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'nonce-") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	for _, want := range []string{`"lti.put_data"`, `"_parent"`, `"` + rg.lms.Issuer + `"`, `"lti_state_`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("storage page lacks %s", want)
		}
	}
	next := regexp.MustCompile(`var next = "([^"]*)"`).FindStringSubmatch(res.Body)
	if next == nil {
		t.Fatalf("no next URL: %s", res.Body)
	}
	u, err := url.Parse(strings.ReplaceAll(next[1], `\u0026`, "&"))
	if err != nil || u.Scheme+"://"+u.Host+u.Path != rg.lms.Issuer+lmssim.AuthPath || u.Query().Get("state") == "" {
		t.Fatalf("the page goes on to %q", next[1])
	}
}

// Every refusal of a login: its status and code, no redirect, no binding cookie.
func TestLoginRefusals(t *testing.T) {
	rg := newRig(t)
	rg.addRegistration("second", "second-client")
	target := rg.ltiop.URL + paths.Launch
	iss := rg.lms.Issuer
	for _, tc := range []struct {
		name   string
		params url.Values
		status int
		code   string
	}{
		{"T-LOGIN-02 no iss", url.Values{"login_hint": {"u"}, "target_link_uri": {target}}, 400, lti.CodeInvalidLogin},
		{"T-LOGIN-02 blank login_hint", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"  "}, "target_link_uri": {target}}, 400, lti.CodeInvalidLogin},
		{"T-LOGIN-02 no target_link_uri", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"u"}}, 400, lti.CodeInvalidLogin},
		{"T-LOGIN-03 unknown client", url.Values{"iss": {iss}, "client_id": {"nope"}, "login_hint": {"u"}, "target_link_uri": {target}}, 400, lti.CodeUnregistered},
		{"T-LOGIN-03 unknown issuer", url.Values{"iss": {"https://unknown.example"}, "login_hint": {"u"}, "target_link_uri": {target}}, 400, lti.CodeUnregistered},
		{"T-LOGIN-03 two clients of the issuer and no client_id", url.Values{"iss": {iss}, "login_hint": {"u"}, "target_link_uri": {target}}, 400, lti.CodeAmbiguousPlatform},
		{"T-LOGIN-05 target on another origin", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"u"}, "target_link_uri": {"https://evil.example/lti/launch"}}, 400, lti.CodeInvalidTarget},
		{"T-LOGIN-05 target on another host", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"u"}, "target_link_uri": {"http://evil.example/lti/launch"}}, 400, lti.CodeInvalidTarget},
		{"T-LOGIN-05 target on another port", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"u"}, "target_link_uri": {"http://127.0.0.1:1/lti/launch"}}, 400, lti.CodeInvalidTarget},
		{"T-LOGIN-05 target with user info", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"u"}, "target_link_uri": {strings.Replace(target, "://", "://me@", 1)}}, 400, lti.CodeInvalidTarget},
		{"T-LOGIN-05 target on another scheme", url.Values{"iss": {iss}, "client_id": {"bench-client"}, "login_hint": {"u"}, "target_link_uri": {strings.Replace(target, "http://", "https://", 1)}}, 400, lti.CodeInvalidTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, asJSON := range []bool{true, false} {
				res := rg.login(t, browser(), tc.params, asJSON)
				testhttp.WantRefusal(t, res, tc.status, tc.code)
				if sc := res.Header.Values("Set-Cookie"); len(sc) != 0 {
					t.Fatalf("a refused login sets %v", sc)
				}
			}
		})
	}

	t.Run("an unreadable form", func(t *testing.T) {
		req, _ := http.NewRequest("POST", rg.ltiop.URL+paths.Login, strings.NewReader("iss=%zz"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		res, err := browser().Do(req)
		testhttp.WantRefusal(t, testhttp.Read(t, res, err), 400, lti.CodeInvalidLogin)
	})

	t.Run("the HTML page escapes what the request sent", func(t *testing.T) {
		res := rg.login(t, browser(), url.Values{"iss": {"<script>x</script>"}, "login_hint": {"u"}, "target_link_uri": {target}}, false)
		testhttp.WantRefusal(t, res, 400, lti.CodeUnregistered)
		if strings.Contains(res.Body, "<script>") || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("page: %s", res.Body)
		}
	})
}

// A login is refused when the registration is not usable: inactive, not Ready for its
// generation, without a key, or for a deployment it does not list (T-LOGIN-04).
func TestLoginRefusesUnusableRegistrations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(rg *rig)
		status int
		code   string
	}{
		{"inactive", func(rg *rig) {
			rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = ptr.To(false) })
		}, 400, lti.CodeUnregistered},
		{"not Ready for its generation", func(rg *rig) {
			rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Generation = 2 })
		}, 400, lti.CodeUnregistered},
		{"without a key", func(rg *rig) {
			rg.reg.ForgetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bench-tool-key"}})
		}, 400, lti.CodeUnregistered},
		{"T-LOGIN-04 an unknown deployment", func(rg *rig) {
			rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.DeploymentIDs = []string{"other-deployment"} })
		}, 403, lti.CodeUnknownDeployment},
		{"an authentication endpoint that is not a URL", func(rg *rig) {
			rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.AuthenticationEndpoint = "://no-scheme" })
		}, 500, "INTERNAL_SERVER_ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t)
			rg.startLogin(t, browser(), nil) // usable before the change
			tc.change(rg)
			res := rg.login(t, browser(), rg.loginParams(), true)
			testhttp.WantRefusal(t, res, tc.status, tc.code)
			if len(res.Header.Values("Set-Cookie")) != 0 {
				t.Fatal("a refused login sets a cookie")
			}
		})
	}
}

// Before the sealing keys are read, a login is refused with 503 and may be retried.
func TestLoginWithoutSealingKeys(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.noKeys = true })
	res := rg.login(t, browser(), rg.loginParams(), true)
	testhttp.WantRefusal(t, res, 503, "NOT_READY")
	if len(res.Header.Values("Set-Cookie")) != 0 {
		t.Fatal("a refused login sets a cookie")
	}
}
