package toolmode_test

import (
	"encoding/json"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

const ltiClaim = "https://purl.imsglobal.org/spec/lti/claim/"

// T-TOK-25: a valid launch is handed to the integrator's Launch URL with an ltik, the
// query of the signed target_link_uri kept (T-TOK-22); the binding cookie is cleared and
// the deployment is learnt.
func TestLaunchHandsTheIntegratorAnLtik(t *testing.T) {
	rg := newRig(t)
	client := browser()
	target := rg.ltiop.URL + paths.Launch + "?resource=123"
	params := rg.loginParams()
	params.Set("target_link_uri", target)
	ar := rg.startLogin(t, client, params)
	claims := rg.lms.Claims("u", ar.Nonce, target)
	res := rg.postLaunch(t, client, rg.sign(t, claims), ar.State)
	if res.Status != http.StatusSeeOther {
		t.Fatalf("launch: %d %s", res.Status, res.Body)
	}
	loc := res.Location(t)
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != rigLaunchURL {
		t.Fatalf("handed to %s, want %s", got, rigLaunchURL)
	}
	if loc.Query().Get("resource") != "123" || loc.Query().Get("ltik") == "" {
		t.Fatalf("destination %s", loc)
	}
	cleared := false
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		cleared = cleared || strings.HasPrefix(c.Name, "ltiop_state_") && c.MaxAge < 0
	}
	if !cleared {
		t.Fatalf("binding cookie not cleared: %v", res.Header.Values("Set-Cookie"))
	}
	if got := rg.learntDeployments(); !slices.Equal(got, []string{rigDeployment}) {
		t.Fatalf("learnt deployments %v", got)
	}
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(loc.Query().Get("ltik")), nil)
	if tok.Status != http.StatusOK {
		t.Fatalf("idtoken: %d %s", tok.Status, tok.Body)
	}
}

// A deep-linking launch goes to the Deep Linking URL; without one, to the Launch URL.
func TestDeepLinkingLaunchDestination(t *testing.T) {
	for _, tc := range []struct{ dlURL, want string }{{rigDeepLinkURL, rigDeepLinkURL}, {"", rigLaunchURL}} {
		rg := newRig(t, func(c *rigConfig) { c.opts.DeepLinkingURL = tc.dlURL })
		client := browser()
		ar := rg.startLogin(t, client, nil)
		claims := rg.claims(ar)
		rg.lms.MakeDeepLinking(claims)
		res := rg.postLaunch(t, client, rg.sign(t, claims), ar.State)
		if res.Status != http.StatusSeeOther {
			t.Fatalf("launch: %d %s", res.Status, res.Body)
		}
		if loc := res.Location(t); loc.Scheme+"://"+loc.Host+loc.Path != tc.want {
			t.Fatalf("deep-linking launch handed to %s, want %s", loc, tc.want)
		}
	}
}

// Refusals of the authentication response that read no state: no ltik, no redirect.
func TestLaunchRefusesIncompleteResponses(t *testing.T) {
	rg := newRig(t)
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"T-TOK-01 no id_token", url.Values{"state": {"x"}}, 400, lti.CodeMissingIDToken},
		{"T-STATE-01 no state", url.Values{"id_token": {"x.y.z"}}, 400, lti.CodeMissingState},
		{"T-TOK-02 an OIDC error response", url.Values{"error": {"login_required"}, "error_description": {"<b>no session</b>"}, "state": {"x"}}, 400, lti.CodePlatformError},
		{"a state that is not ours", url.Values{"id_token": {"x.y.z"}, "state": {"forged"}}, 401, lti.CodeInvalidState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, asJSON := range []bool{true, false} {
				res := rg.postForm(t, browser(), paths.Launch, tc.form, asJSON)
				testhttp.WantRefusal(t, res, tc.status, tc.code)
				if !asJSON && strings.Contains(res.Body, "<b>no session</b>") {
					t.Fatal("the platform's error text is not escaped")
				}
			}
		})
	}
	t.Run("an unreadable form", func(t *testing.T) {
		req, _ := http.NewRequest("POST", rg.ltiop.URL+paths.Launch, strings.NewReader("id_token=%zz"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		res, err := browser().Do(req)
		testhttp.WantRefusal(t, testhttp.Read(t, res, err), 400, lti.CodeMissingIDToken)
	})
	if got := rg.learntDeployments(); len(got) != 0 {
		t.Fatalf("refused launches taught deployments %v", got)
	}
}

// Refusals of a launch whose login is valid. Each one leaves the login unused: the same
// browser can still complete it with the platform's genuine answer.
func TestLaunchRefusalsLeaveTheLoginUsable(t *testing.T) {
	rg := newRig(t)
	type attempt struct {
		client  *http.Client // nil: the browser that started the login
		idToken string       // "": the claims, after mutate, signed by the platform
		state   string       // "": the login's
	}
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, ar authRequest, claims map[string]any) attempt
		undo   func() // puts back what make changed outside the request
		status int
		code   string
	}{
		{name: "T-STATE-02 another browser (no binding cookie)", status: 401, code: lti.CodeBrowserBinding,
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt { return attempt{client: browser()} }},
		{name: "T-STATE-02 a binding cookie of another value", status: 401, code: lti.CodeBrowserBinding,
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				other := browser()
				u, _ := url.Parse(rg.ltiop.URL + paths.Launch)
				cookies := rg.jarOf(t, ar).Cookies(u)
				for _, ck := range cookies {
					ck.Value += "x"
				}
				other.Jar.SetCookies(u, cookies)
				return attempt{client: other}
			}},
		{name: "a state sealed for another purpose", status: 401, code: lti.CodeInvalidState,
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				return attempt{state: rg.launchWith(t, nil)} // an ltik is no state
			}},
		{name: "a tampered state", status: 401, code: lti.CodeInvalidState,
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				b := []byte(ar.State)
				b[len(b)/2] ^= 1
				return attempt{state: string(b)}
			}},
		{name: "the registration deactivated since the login", status: 400, code: lti.CodeUnregistered,
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = ptr.To(false) })
				return attempt{}
			},
			undo: func() { rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = nil }) }},
		{name: "the registration re-created since the login", status: 400, code: lti.CodeUnregistered,
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				rg.recreate("another-uid")
				return attempt{}
			},
			undo: func() { rg.recreate("bench-uid") }},
		{name: "T-NONCE-02 the nonce of another login", status: 401, code: "NONCE_MISMATCH",
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				c["nonce"] = "not-the-one"
				return attempt{}
			}},
		{name: "T-TOK-08 an unknown kid (after one refetch of the key set)", status: 401, code: "UNKNOWN_KID",
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				tok, err := rg.lms.Sign(c, map[string]any{"kid": "imstester_66067"})
				if err != nil {
					t.Fatal(err)
				}
				return attempt{idToken: tok}
			}},
		{name: "T-TOK-20 a deployment other than the login's", status: 400, code: "DEPLOYMENT_MISMATCH",
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				c[ltiClaim+"deployment_id"] = "deployment-2"
				return attempt{}
			}},
		{name: "T-TOK-22 a target_link_uri other than the login's", status: 400, code: "TARGET_LINK_URI_MISMATCH",
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				c[ltiClaim+"target_link_uri"] = rg.ltiop.URL + paths.Launch + "?other"
				return attempt{}
			}},
		{name: "T-TOK-11 an issuer other than the registration's", status: 401, code: "ISSUER_MISMATCH",
			make: func(t *testing.T, ar authRequest, c map[string]any) attempt {
				c["iss"] = rg.lms.Issuer + "/"
				return attempt{}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := browser()
			ar := rg.startLogin(t, client, nil)
			rg.jars[ar.State] = client.Jar
			claims := rg.claims(ar)
			a := tc.make(t, ar, claims)
			if a.client == nil {
				a.client = client
			}
			if a.idToken == "" {
				a.idToken = rg.sign(t, claims)
			}
			if a.state == "" {
				a.state = ar.State
			}
			before := len(rg.learntDeployments())
			res := rg.postLaunch(t, a.client, a.idToken, a.state)
			testhttp.WantRefusal(t, res, tc.status, tc.code)
			if len(res.Header.Values("Set-Cookie")) != 0 {
				t.Fatalf("a refused launch changes cookies: %v", res.Header.Values("Set-Cookie"))
			}
			if len(rg.learntDeployments()) != before {
				t.Fatal("a refused launch taught a deployment")
			}
			if tc.undo != nil {
				tc.undo()
			}
			// The login was not used up: the genuine answer still completes it.
			again := rg.postLaunch(t, client, rg.sign(t, rg.claims(ar)), ar.State)
			if again.Status != http.StatusSeeOther || again.Location(t).Query().Get("ltik") == "" {
				t.Fatalf("the login is no longer usable after the refusal: %d %s", again.Status, again.Body)
			}
		})
	}
}

// jarOf returns the cookie jar of the browser that started the login ar.
func (rg *rig) jarOf(t *testing.T, ar authRequest) http.CookieJar {
	t.Helper()
	j, ok := rg.jars[ar.State]
	if !ok {
		t.Fatal("no browser for this login")
	}
	return j
}

// T-JWKS-03: when the platform's key set cannot be fetched, the launch is refused with
// 503 (not as a bad signature) and the login stays usable once the failure is forgotten.
func TestLaunchWhenThePlatformKeySetIsUnavailable(t *testing.T) {
	rg := newRig(t)
	rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != lmssim.JWKSPath {
			return false
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
		return true
	})
	client := browser()
	ar := rg.startLogin(t, client, nil)
	idToken := rg.sign(t, rg.claims(ar))
	testhttp.WantRefusal(t, rg.postLaunch(t, client, idToken, ar.State), 503, "KEY_SET_UNAVAILABLE")
	rg.intercept.Store(nil)
	rg.clock.Advance(30 * time.Second) // the failure is remembered for up to 30 s
	if res := rg.postLaunch(t, client, idToken, ar.State); res.Status != http.StatusSeeOther {
		t.Fatalf("retry: %d %s", res.Status, res.Body)
	}
}

// T-STATE-03: the state expires after ten minutes.
func TestLaunchStateExpires(t *testing.T) {
	rg := newRig(t)
	client := browser()
	ar := rg.startLogin(t, client, nil)
	rg.clock.Advance(10*time.Minute + time.Second)
	res := rg.postLaunch(t, client, rg.sign(t, rg.claims(ar)), ar.State)
	testhttp.WantRefusal(t, res, 401, lti.CodeStateExpired)
	if len(rg.learntDeployments()) != 0 {
		t.Fatal("a refused launch taught a deployment")
	}
}

// T-STATE-03 and T-NONCE-03: a state is used once, and so is a nonce, even under a
// second state of the same login.
func TestLaunchReplays(t *testing.T) {
	rg := newRig(t)
	client := browser()
	ar := rg.startLogin(t, client, nil)
	u, _ := url.Parse(rg.ltiop.URL + paths.Launch)
	cookies := client.Jar.Cookies(u)
	idToken := rg.sign(t, rg.claims(ar))
	if res := rg.postLaunch(t, client, idToken, ar.State); res.Status != http.StatusSeeOther {
		t.Fatalf("launch: %d %s", res.Status, res.Body)
	}

	client.Jar.SetCookies(u, cookies) // the cookie put back, as a replaying attacker would
	testhttp.WantRefusal(t, rg.postLaunch(t, client, idToken, ar.State), 401, lti.CodeStateReused)

	second, err := toolmode.ResealState(rg.tool, ar.State)
	if err != nil {
		t.Fatal(err)
	}
	client.Jar.SetCookies(u, cookies)
	testhttp.WantRefusal(t, rg.postLaunch(t, client, idToken, second), 401, lti.CodeNonceReused)
	if got := rg.learntDeployments(); len(got) != 1 {
		t.Fatalf("replays taught deployments: %v", got)
	}
}

// Without a Launch URL a validated launch is refused with 503, not handed anywhere.
func TestLaunchWithoutLaunchURL(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.opts.LaunchURL = "" })
	client := browser()
	ar := rg.startLogin(t, client, nil)
	testhttp.WantRefusal(t, rg.postLaunch(t, client, rg.sign(t, rg.claims(ar)), ar.State), 503, lti.CodeLaunchNotConfigured)
	if len(rg.learntDeployments()) != 0 {
		t.Fatal("a refused launch taught a deployment")
	}
}

var (
	storageValue   = regexp.MustCompile(`value: "([^"]*)"`)
	storageNext    = regexp.MustCompile(`var next = "([^"]*)"`)
	pendingField   = regexp.MustCompile(`name="pending" value="([^"]*)"`)
	completeAction = regexp.MustCompile(`action="([^"]*)"`)
)

// storageLaunch runs a login with platform storage and posts the launch from a browser
// whose cookies are blocked; it returns the binding value the login page stored and the
// pending launch of the check page.
func (rg *rig) storageLaunch(t *testing.T) (value, pending string) {
	t.Helper()
	params := rg.loginParams()
	params.Set("lti_storage_target", "_parent")
	page := rg.login(t, browser(), params, false)
	v, next := storageValue.FindStringSubmatch(page.Body), storageNext.FindStringSubmatch(page.Body)
	if page.Status != http.StatusOK || v == nil || next == nil {
		t.Fatalf("login: %d %s", page.Status, page.Body)
	}
	auth, err := url.Parse(strings.ReplaceAll(next[1], `\u0026`, "&"))
	if err != nil {
		t.Fatal(err)
	}
	ar := authRequest{State: auth.Query().Get("state"), Nonce: auth.Query().Get("nonce")}
	noCookies := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	check := rg.postLaunch(t, noCookies, rg.sign(t, rg.claims(ar)), ar.State)
	p, action := pendingField.FindStringSubmatch(check.Body), completeAction.FindStringSubmatch(check.Body)
	if check.Status != http.StatusOK || p == nil || action == nil || action[1] != rg.ltiop.URL+paths.LaunchComplete {
		t.Fatalf("launch without cookie: %d %s", check.Status, check.Body)
	}
	if !strings.Contains(check.Body, `"lti.get_data"`) || check.Header.Get("Location") != "" {
		t.Fatalf("no storage check page: %s", check.Body)
	}
	return v[1], p[1]
}

// T-PS-02: without the cookie, the launch waits until the page proves the browser holds
// the login's value in platform storage; the proof is single-use and short-lived.
// Login CSRF through the platform-storage hand-over: an attacker runs a launch in their own
// browser, stops at the storage-check page, and has the victim's browser post that pending
// launch from the attacker's site. It is refused, whatever the attacker knows, and uses
// nothing up; ltiop's own page (same origin) still completes it.
func TestLaunchCompleteRefusesCrossSitePosts(t *testing.T) {
	rg := newRig(t)
	value, pending := rg.storageLaunch(t) // everything the attacker's own launch gives them
	form := url.Values{"pending": {pending}, "value": {value}}.Encode()
	post := func(headers map[string]string) testhttp.Reply {
		req, err := http.NewRequest("POST", rg.ltiop.URL+paths.LaunchComplete, strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return testhttp.Do(t, browser(), req)
	}
	for name, headers := range map[string]map[string]string{
		"from another site":                  {"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"},
		"from a sibling subdomain":           {"Sec-Fetch-Site": "same-site", "Origin": "https://evil." + rg.ltiop.Listener.Addr().String()},
		"typed or bookmarked":                {"Sec-Fetch-Site": "none"},
		"claiming ltiop's Origin cross-site": {"Sec-Fetch-Site": "cross-site", "Origin": rg.ltiop.URL},
		"old browser, foreign Origin":        {"Origin": "https://attacker.example"},
		"old browser, opaque Origin":         {"Origin": "null"},
		"neither header":                     {},
	} {
		t.Run(name, func(t *testing.T) {
			testhttp.WantRefusal(t, post(headers), http.StatusForbidden, lti.CodeCrossSiteRequest)
		})
	}
	// Nothing was used up: ltiop's own page, in a browser without Sec-Fetch-Site, completes it.
	if done := post(map[string]string{"Origin": rg.ltiop.URL}); done.Status != http.StatusSeeOther {
		t.Fatalf("ltiop's own page: %d %s", done.Status, done.Body)
	}
}

func TestLaunchCompleteWithPlatformStorage(t *testing.T) {
	rg := newRig(t)
	value, pending := rg.storageLaunch(t)
	if got := rg.learntDeployments(); len(got) != 1 {
		t.Fatalf("learnt %v", got)
	}
	complete := func(form url.Values) testhttp.Reply {
		return rg.postForm(t, browser(), paths.LaunchComplete, form, true)
	}

	testhttp.WantRefusal(t, complete(url.Values{"pending": {pending}, "value": {value + "x"}}), 401, lti.CodeBrowserBinding)
	testhttp.WantRefusal(t, complete(url.Values{"pending": {pending}}), 401, lti.CodeBrowserBinding)
	testhttp.WantRefusal(t, complete(url.Values{"pending": {pending + "x"}, "value": {value}}), 401, lti.CodeInvalidState)
	testhttp.WantRefusal(t, complete(url.Values{"value": {value}}), 401, lti.CodeInvalidState)
	req, _ := http.NewRequest("POST", rg.ltiop.URL+paths.LaunchComplete, strings.NewReader("pending=%zz"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Accept", "application/json")
	res, err := browser().Do(req)
	testhttp.WantRefusal(t, testhttp.Read(t, res, err), 400, lti.CodeBrowserBinding)

	// The refusals used nothing up.
	done := complete(url.Values{"pending": {pending}, "value": {value}})
	if done.Status != http.StatusSeeOther {
		t.Fatalf("complete: %d %s", done.Status, done.Body)
	}
	loc := done.Location(t)
	if loc.Scheme+"://"+loc.Host+loc.Path != rigLaunchURL || loc.Query().Get("ltik") == "" {
		t.Fatalf("handed to %s", loc)
	}
	if tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(loc.Query().Get("ltik")), nil); tok.Status != 200 {
		t.Fatalf("idtoken: %d %s", tok.Status, tok.Body)
	}
	testhttp.WantRefusal(t, complete(url.Values{"pending": {pending}, "value": {value}}), 401, lti.CodeStateReused)

	value, pending = rg.storageLaunch(t)
	rg.clock.Advance(2*time.Minute + time.Second)
	testhttp.WantRefusal(t, complete(url.Values{"pending": {pending}, "value": {value}}), 401, lti.CodeInvalidState)
}

// T-SR-06: a submission review goes to the Submission Review URL (without one, to the
// Launch URL) with the target link's query, and /api/idtoken names the learner (T-SR-07).
func TestSubmissionReviewLaunchDestination(t *testing.T) {
	const reviewURL = "https://app.example/review"
	for _, tc := range []struct{ srURL, want string }{{reviewURL, reviewURL}, {"", rigLaunchURL}} {
		rg := newRig(t, func(c *rigConfig) { c.opts.SubmissionReviewURL = tc.srURL })
		client := browser()
		params := rg.loginParams()
		target := rg.ltiop.URL + paths.Launch + "?view=review"
		params.Set("target_link_uri", target)
		ar := rg.startLogin(t, client, params)
		claims := rg.lms.Claims("instructor-1", ar.Nonce, target)
		rg.lms.MakeSubmissionReview(claims, "user-2", "")
		res := rg.postLaunch(t, client, rg.sign(t, claims), ar.State)
		if res.Status != http.StatusSeeOther {
			t.Fatalf("launch: %d %s", res.Status, res.Body)
		}
		loc := res.Location(t)
		if loc.Scheme+"://"+loc.Host+loc.Path != tc.want || loc.Query().Get("view") != "review" {
			t.Fatalf("submission review handed to %s, want %s?view=review", loc, tc.want)
		}
		tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(loc.Query().Get("ltik")), nil)
		var body struct {
			User   struct{ ID string }
			Launch struct {
				Type    string
				ForUser struct {
					ID    string
					Roles []string
				}
			}
		}
		if tok.Status != http.StatusOK || json.Unmarshal([]byte(tok.Body), &body) != nil {
			t.Fatalf("idtoken: %d %s", tok.Status, tok.Body)
		}
		if body.User.ID != "instructor-1" || body.Launch.Type != "LtiSubmissionReviewRequest" || body.Launch.ForUser.ID != "user-2" ||
			len(body.Launch.ForUser.Roles) == 0 {
			t.Fatalf("idtoken: %s", tok.Body)
		}
	}
}

// A submission review without for_user is refused before any ltik is made (T-SR-04).
func TestSubmissionReviewLaunchWithoutForUser(t *testing.T) {
	rg := newRig(t)
	client := browser()
	ar := rg.startLogin(t, client, nil)
	claims := rg.claims(ar)
	rg.lms.MakeSubmissionReview(claims, "user-2", "")
	delete(claims, "https://purl.imsglobal.org/spec/lti/claim/for_user")
	res := rg.postLaunch(t, client, rg.sign(t, claims), ar.State)
	testhttp.WantRefusal(t, res, http.StatusBadRequest, "MISSING_CLAIM")
	if strings.Contains(res.Header.Get("Location"), "ltik=") {
		t.Fatal("an ltik was issued")
	}
}
