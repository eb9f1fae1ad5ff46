package platformmode_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

const claim = "https://purl.imsglobal.org/spec/lti/claim/"

func TestResourceLinkLaunchSeenFromTheTool(t *testing.T) {
	for _, post := range []bool{false, true} { // P-AUTH-01: GET and POST
		h := newHarness(t, nil)
		lp := h.createLaunch(platformmode.CreateLaunchRequest{User: "user-42",
			ResourceLink: &ltiplatform.ResourceLink{ID: "rl-7", Title: "Week 3 quiz"}, Data: json.RawMessage(`{"lesson":3}`)})

		// §1.7 login initiation parameters, and the URL form of them.
		p := lp.Params
		if p.Issuer != h.ltiop.URL || p.LoginHint != "user-42" || p.ClientID != testClientID || p.LTIDeploymentID != testDeployment ||
			p.TargetLinkURI != h.toolSrv.URL+"/launch" || p.LTIMessageHint == "" {
			t.Fatalf("login parameters: %+v", p)
		}
		if u, _ := url.Parse(lp.URL); u.Query().Get("lti_message_hint") != p.LTIMessageHint || !strings.HasPrefix(lp.URL, lp.LoginURL+"?") {
			t.Fatalf("launch URL %s", lp.URL)
		}
		if d := time.Until(lp.ExpiresAt); d < 59*time.Minute || d > time.Hour {
			t.Fatalf("the message hint expires in %s, want one hour", d)
		}

		q := h.login(lp)
		payload := h.payloadFrom(h.authorize(q, post), "/launch")

		// The payload is signed by the platform key and readable by the integrator.
		set, err := jwk.Parse(h.signer.JWKS())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := jws.Verify([]byte(payload), jws.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)))
		if err != nil {
			t.Fatalf("payload does not verify with the platform JWKS: %v", err)
		}
		var pl ltiplatform.Payload
		if err := json.Unmarshal(raw, &pl); err != nil {
			t.Fatal(err)
		}
		if pl.Launch.User != "user-42" || pl.Launch.State != q.Get("state") || pl.Launch.Nonce != q.Get("nonce") ||
			string(pl.Launch.Data) != `{"lesson":3}` || pl.Launch.ResourceLink.ID != "rl-7" {
			t.Fatalf("payload launch: %+v", pl.Launch)
		}

		ans, l := h.answerAndPost(launchData(payload))
		if !l.OK {
			t.Fatalf("the tool refused the launch: %s", l.Err)
		}
		if ans.State != q.Get("state") || ans.RedirectURI != q.Get("redirect_uri") {
			t.Fatalf("answer %+v", ans)
		}
		c := l.Claims
		// §1.7 minting rules, P-AUTH-11 (nonce unmodified).
		for k, want := range map[string]any{
			"iss": h.ltiop.URL, "aud": testClientID, "azp": testClientID, "sub": "user-42", "nonce": q.Get("nonce"),
			claim + "deployment_id": testDeployment, claim + "message_type": "LtiResourceLinkRequest",
			claim + "version": "1.3.0", claim + "target_link_uri": h.toolSrv.URL + "/launch",
			"email": "ada@example.edu", "name": "Ada Lovelace",
		} {
			if c[k] != want {
				t.Errorf("claim %s = %v, want %v", k, c[k], want)
			}
		}
		if rl, _ := c[claim+"resource_link"].(map[string]any); rl["id"] != "rl-7" || rl["title"] != "Week 3 quiz" {
			t.Errorf("resource_link %v", rl)
		}
		if cu, _ := c[claim+"custom"].(map[string]any); cu["chapter"] != "3" {
			t.Errorf("custom %v", cu)
		}
		if exp, iat := c["exp"].(float64), c["iat"].(float64); exp-iat != 300 {
			t.Errorf("id_token lifetime %v s", exp-iat)
		}
		// Service claims only for the tool's scopes: AGS result.readonly was asked for but not allowed.
		ags, _ := c["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"].(map[string]any)
		if sc, _ := ags["scope"].([]any); len(sc) != 1 || sc[0] != "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem" {
			t.Errorf("AGS claim %v", ags)
		}
		if nrps, _ := c["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"].(map[string]any); nrps["context_memberships_url"] == nil {
			t.Errorf("NRPS claim %v", nrps)
		}
	}
}

// validAuth returns a valid authorization request for a new launch.
func (h *harness) validAuth() url.Values {
	return h.login(h.createLaunch(platformmode.CreateLaunchRequest{User: "user-1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"}}))
}

func TestAuthorizeRefusesWithAnOIDCError(t *testing.T) {
	h := newHarness(t, nil)
	otherClientHint := h.hintForClient(t, "other-client")
	otherHint := h.createLaunch(platformmode.CreateLaunchRequest{User: "someone-else", ResourceLink: &ltiplatform.ResourceLink{ID: "x"}}).Params.LTIMessageHint
	for _, tc := range []struct {
		name, oauth, code string
		mutate            func(url.Values)
	}{
		{"P-AUTH-02 no login_hint", "invalid_request", "MISSING_PARAMETER", func(q url.Values) { q.Del("login_hint") }},
		{"P-AUTH-02 no nonce", "invalid_request", "MISSING_PARAMETER", func(q url.Values) { q.Del("nonce") }},
		{"P-AUTH-02 no lti_message_hint", "invalid_request", "MISSING_PARAMETER", func(q url.Values) { q.Del("lti_message_hint") }},
		{"P-AUTH-02 no scope", "invalid_request", "MISSING_PARAMETER", func(q url.Values) { q.Del("scope") }},
		{"P-AUTH-03 scope is not openid", "invalid_scope", "INVALID_SCOPE", func(q url.Values) { q.Set("scope", "openid profile") }},
		{"P-AUTH-04 response_type code", "unsupported_response_type", "INVALID_RESPONSE_TYPE", func(q url.Values) { q.Set("response_type", "code") }},
		{"P-AUTH-05 hint issued for another client", "unauthorized_client", "CLIENT_MISMATCH", func(q url.Values) { q.Set("lti_message_hint", otherClientHint) }},
		{"P-AUTH-07 no response_mode", "invalid_request", "MISSING_PARAMETER", func(q url.Values) { q.Del("response_mode") }},
		{"P-AUTH-07 response_mode query", "invalid_request", "INVALID_RESPONSE_MODE", func(q url.Values) { q.Set("response_mode", "query") }},
		{"P-AUTH-08 prompt login", "invalid_request", "INVALID_PROMPT", func(q url.Values) { q.Set("prompt", "login") }},
		{"P-AUTH-09 login_hint of another user", "access_denied", "LOGIN_HINT_MISMATCH", func(q url.Values) { q.Set("login_hint", "mallory") }},
		{"P-AUTH-10 hint of another user", "access_denied", "LOGIN_HINT_MISMATCH", func(q url.Values) { q.Set("lti_message_hint", otherHint) }},
		{"P-AUTH-10 forged hint", "invalid_request", "INVALID_MESSAGE_HINT", func(q url.Values) { q.Set("lti_message_hint", "eyJhbGciOiJub25lIn0.e30.") }},
		{"P-AUTH-10 tampered hint", "invalid_request", "INVALID_MESSAGE_HINT", func(q url.Values) {
			hint := q.Get("lti_message_hint")
			q.Set("lti_message_hint", hint[:len(hint)-4]+"AAAA")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h.on(t)
			q := h.validAuth()
			tc.mutate(q)
			// P-AUTH-13: the error is a form auto-posted to the registered redirect_uri.
			form := h.oidcError(h.authorize(q, false), q.Get("redirect_uri"))
			if form.Get("error") != tc.oauth || !strings.HasPrefix(form.Get("error_description"), tc.code+":") {
				t.Fatalf("error=%q description=%q, want %s %s", form.Get("error"), form.Get("error_description"), tc.oauth, tc.code)
			}
			// P-AUTH-12: state echoed, also in errors.
			if q.Get("state") != "" && form.Get("state") != q.Get("state") {
				t.Fatalf("state %q not echoed", q.Get("state"))
			}
			if form.Get("id_token") != "" {
				t.Fatal("an error response carries an id_token")
			}
		})
	}
}

// hintForClient makes a message hint for a second tool with clientID, sealed by the same
// keyring, by registering that tool in this harness under another name.
func (h *harness) hintForClient(t *testing.T, clientID string) string {
	t.Helper()
	reg := h.reg.DeepCopy()
	reg.Name, reg.UID, reg.Spec.ClientID = "other-tool", "uid-other", clientID
	h.tools.Apply(reg)
	return h.createLaunch(platformmode.CreateLaunchRequest{ToolID: "other-tool", User: "user-1",
		ResourceLink: &ltiplatform.ResourceLink{ID: "x"}}).Params.LTIMessageHint
}

func TestAuthorizeNeverRedirectsToAnUnregisteredURI(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name, code string
		mutate     func(url.Values)
	}{
		{"P-AUTH-06 redirect_uri not registered", "INVALID_REDIRECT_URI", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/steal") }},
		{"P-AUTH-06 registered URI with a suffix", "INVALID_REDIRECT_URI", func(q url.Values) { q.Set("redirect_uri", q.Get("redirect_uri")+"/x") }},
		{"P-AUTH-06 no redirect_uri", "INVALID_REDIRECT_URI", func(q url.Values) { q.Del("redirect_uri") }},
		{"P-AUTH-05 unknown client", "UNKNOWN_CLIENT", func(q url.Values) { q.Set("client_id", "nobody") }},
		{"P-AUTH-05 no client_id", "UNKNOWN_CLIENT", func(q url.Values) { q.Del("client_id") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h.on(t)
			res := h.authorize(func() url.Values { q := h.validAuth(); tc.mutate(q); return q }(), false)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" ||
				!strings.Contains(res.Header.Get("Content-Type"), "text/html") || strings.Contains(string(b), "<form") ||
				!strings.Contains(string(b), tc.code) {
				t.Fatalf("want an error page with %s and no redirect, got %d %q %s", tc.code, res.StatusCode, res.Header.Get("Location"), b)
			}
		})
	}
	t.Run("P-AUTH-05 inactive tool", func(t *testing.T) {
		h := h.on(t)
		q := h.validAuth()
		reg := h.reg.DeepCopy()
		reg.Spec.Active = new(bool)
		h.tools.Apply(reg)
		res := h.authorize(q, false)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || res.Header.Get("Location") != "" {
			t.Fatalf("inactive tool: %d", res.StatusCode)
		}
	})
}

func TestDuplicateNonceWithinThirtySeconds(t *testing.T) {
	h := newHarness(t, nil)
	q := h.validAuth()
	h.payloadFrom(h.authorize(q, false), "/launch")

	h.clock.Advance(29 * time.Second)
	form := h.oidcError(h.authorize(q, false), q.Get("redirect_uri"))
	if form.Get("error") != "invalid_request" || !strings.HasPrefix(form.Get("error_description"), "DUPLICATE_NONCE:") || form.Get("state") != q.Get("state") {
		t.Fatalf("a nonce reused after 29 s: %v", form)
	}
	// The same nonce is fine for another tool: the window is per client.
	h.clock.Advance(2 * time.Second) // 31 s after the first use
	h.payloadFrom(h.authorize(q, false), "/launch")
}

func TestMessageHintExpiresAfterOneHour(t *testing.T) {
	h := newHarness(t, nil)
	q := h.validAuth()
	h.clock.Advance(59 * time.Minute)
	h.payloadFrom(h.authorize(q, false), "/launch") // still valid, and reusable within its hour
	h.clock.Advance(61 * time.Second)
	q.Set("nonce", "another-nonce")
	form := h.oidcError(h.authorize(q, false), q.Get("redirect_uri"))
	if form.Get("error") != "invalid_request" || !strings.HasPrefix(form.Get("error_description"), "MESSAGE_HINT_EXPIRED:") {
		t.Fatalf("P-AUTH-10 a hint of an hour and a second: %v", form)
	}
}

func TestPayloadIsSingleUseAndShortLived(t *testing.T) {
	h := newHarness(t, nil)
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})

	// Bad launch data is refused and does not use the payload up.
	bad := launchData(payload)
	bad.User.Roles = []string{"Wizard"}
	if status, code, desc := h.apiError("/api/launches/idtoken", bad); status != 400 || code != "INVALID_PARAMETERS" || !strings.HasPrefix(desc, "user.roles[0]") {
		t.Fatalf("bad roles: %d %s %s", status, code, desc)
	}
	if _, l := h.answerAndPost(launchData(payload)); !l.OK {
		t.Fatalf("tool refused: %s", l.Err)
	}
	if status, code, _ := h.apiError("/api/launches/idtoken", launchData(payload)); status != http.StatusConflict || code != "PAYLOAD_ALREADY_USED" {
		t.Fatalf("payload replay: %d %s", status, code)
	}

	payload2 := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u2", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
	tampered := payload2[:len(payload2)-6] + "AAAAAA"
	if status, code, _ := h.apiError("/api/launches/idtoken", launchData(tampered)); status != 400 || code != "INVALID_PAYLOAD" {
		t.Fatalf("tampered payload: %d %s", status, code)
	}
	h.clock.Advance(5*time.Minute + time.Second)
	if status, code, _ := h.apiError("/api/launches/idtoken", launchData(payload2)); status != 400 || code != "PAYLOAD_EXPIRED" {
		t.Fatalf("expired payload: %d %s", status, code)
	}
}

func TestLaunchDataErrorsNameTheField(t *testing.T) {
	h := newHarness(t, nil)
	long := strings.Repeat("x", 256)
	for _, tc := range []struct {
		field  string
		mutate func(*ltiplatform.LaunchData)
	}{
		{"user", func(d *ltiplatform.LaunchData) { d.User = nil }},
		{"user.roles", func(d *ltiplatform.LaunchData) { d.User.Roles = nil }},
		{"user.roles[1]", func(d *ltiplatform.LaunchData) { d.User.Roles = append(d.User.Roles, "Wizard") }},
		{"user.email", func(d *ltiplatform.LaunchData) { d.User.Email = "not an address" }},
		{"context.id", func(d *ltiplatform.LaunchData) { d.Context.ID = long }},
		{"context.type[0]", func(d *ltiplatform.LaunchData) { d.Context.Type = []string{"Lecture"} }},
		{"resourceLink.id", func(d *ltiplatform.LaunchData) { d.ResourceLink = &ltiplatform.ResourceLink{ID: long} }},
		{"presentation.documentTarget", func(d *ltiplatform.LaunchData) {
			d.Presentation = &ltiplatform.Presentation{DocumentTarget: "popup"}
		}},
		{"platform.guid", func(d *ltiplatform.LaunchData) { d.Platform = &ltiplatform.PlatformInfo{GUID: long} }},
		{"services.namesAndRoles.contextMembershipsUrl", func(d *ltiplatform.LaunchData) {
			d.Services.NamesAndRoles.ContextMembershipsURL = "javascript:alert(1)"
		}},
		{"deepLinking", func(d *ltiplatform.LaunchData) {
			d.DeepLinking = &ltiplatform.DeepLinking{AcceptTypes: []string{"link"}, AcceptPresentationDocumentTargets: []string{"iframe"}}
		}},
		{"custom", func(d *ltiplatform.LaunchData) { d.Custom = map[string]string{"resource id": "1"} }},
		{"custom.chapter", func(d *ltiplatform.LaunchData) { d.Custom["chapter"] = strings.Repeat("x", 1025) }},
		{"user.username", func(d *ltiplatform.LaunchData) { d.User.Username = "a\x00b" }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			h := h.on(t)
			payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
			d := launchData(payload)
			tc.mutate(&d)
			status, code, desc := h.apiError("/api/launches/idtoken", d)
			if status != 400 || code != "INVALID_PARAMETERS" || !strings.HasPrefix(desc, tc.field+":") {
				t.Fatalf("got %d %s %q, want 400 INVALID_PARAMETERS naming %s", status, code, desc, tc.field)
			}
		})
	}
}

func TestCreateLaunchRefusals(t *testing.T) {
	h := newHarness(t, func(r *ltiv1.ToolRegistration) { r.Spec.DeepLinkingURL = "" })
	for _, tc := range []struct {
		name   string
		req    platformmode.CreateLaunchRequest
		status int
		code   string
	}{
		{"unknown tool", platformmode.CreateLaunchRequest{ToolID: "nope", User: "u"}, 404, "TOOL_NOT_FOUND"},
		{"no user", platformmode.CreateLaunchRequest{ToolID: "sample-tool"}, 400, "INVALID_PARAMETERS"},
		{"bad message type", platformmode.CreateLaunchRequest{ToolID: "sample-tool", User: "u", MessageType: "LtiDataPrivacyLaunchRequest"}, 400, "INVALID_PARAMETERS"},
		{"deep linking without a deep-linking URL", platformmode.CreateLaunchRequest{ToolID: "sample-tool", User: "u", MessageType: ltiplatform.MessageDeepLinking}, 400, "INVALID_PARAMETERS"},
		{"other deployment", platformmode.CreateLaunchRequest{ToolID: "sample-tool", User: "u", DeploymentID: "9"}, 400, "INVALID_PARAMETERS"},
		{"target link not a URL", platformmode.CreateLaunchRequest{ToolID: "sample-tool", User: "u", TargetLinkURI: "javascript:alert(1)"}, 400, "INVALID_PARAMETERS"},
		{"data too large", platformmode.CreateLaunchRequest{ToolID: "sample-tool", User: "u", Data: json.RawMessage(`"` + strings.Repeat("a", 5000) + `"`)}, 400, "INVALID_PARAMETERS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, code, _ := h.on(t).apiError("/api/launches", tc.req); status != tc.status || code != tc.code {
				t.Fatalf("got %d %s, want %d %s", status, code, tc.status, tc.code)
			}
		})
	}
	reg := h.reg.DeepCopy()
	reg.Spec.Active = new(bool)
	h.tools.Apply(reg)
	if status, code, _ := h.apiError("/api/launches", platformmode.CreateLaunchRequest{ToolID: "sample-tool", User: "u"}); status != 403 || code != "TOOL_INACTIVE" {
		t.Fatalf("inactive tool: %d %s", status, code)
	}
}

func TestJWKSPublishesThePlatformKey(t *testing.T) {
	h := newHarness(t, nil)
	res, err := http.Get(h.ltiop.URL + "/lti/platform/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	set, err := jwk.ParseReader(res.Body)
	if err != nil || set.Len() != 1 || !strings.Contains(res.Header.Get("Cache-Control"), "max-age=300") {
		t.Fatalf("JWKS: %v %d %q", err, set.Len(), res.Header.Get("Cache-Control"))
	}
	k, _ := set.Key(0)
	if kid, _ := k.KeyID(); kid != h.signer.CurrentKID() {
		t.Fatalf("kid %s", kid)
	}
}

// A tool's spec.custom reaches the tool in the custom claim, under the launch's own
// parameters, with the launch's values in place of the substitution variables (issue #16
// §6: Moodle's "Publish as LTI tool" refuses a launch without custom id=<resource uuid>).
func TestToolCustomParametersReachTheTool(t *testing.T) {
	h := newHarness(t, func(r *ltiv1.ToolRegistration) {
		r.Spec.Custom = map[string]string{"id": "6f1c2b9e-published-resource", "chapter": "1", "user": "$User.id",
			"course": "$Context.id", "link": "$ResourceLink.id", "who": "$Person.name.full", "sis": "$CourseSection.sourcedId"}
	})
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "user-42", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-7"}})
	d := launchData(payload) // custom {"chapter": "3"}
	d.Custom["login"] = "$User.username"
	d.User.Username = "ada"

	// Bad launch data changes nothing: the payload can still be answered.
	bad := launchData(payload)
	bad.Custom = map[string]string{"": "x"}
	if status, code, _ := h.apiError("/api/launches/idtoken", bad); status != 400 || code != "INVALID_PARAMETERS" {
		t.Fatalf("empty custom key: %d %s", status, code)
	}

	_, l := h.answerAndPost(d)
	if !l.OK {
		t.Fatalf("the tool refused the launch: %s", l.Err)
	}
	got, _ := l.Claims[claim+"custom"].(map[string]any)
	want := map[string]any{"id": "6f1c2b9e-published-resource", "chapter": "3", "user": "user-42", "course": "course-1",
		"link": "rl-7", "who": "Ada Lovelace", "sis": "$CourseSection.sourcedId", "login": "ada"}
	if len(got) != len(want) {
		t.Fatalf("custom claim %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("custom[%s] = %v, want %v", k, got[k], v)
		}
	}
}
