package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// start begins a registration as the integrator does and returns the answer.
func (h *toolsHarness) start(preApproved bool) admin.StartAnswer {
	h.t.Helper()
	r := h.call("POST", "/api/tools/registrations", map[string]any{"initiationUrl": "https://tool.example.com/lti/register?x=1", "preApproved": preApproved})
	var a admin.StartAnswer
	if err := json.Unmarshal([]byte(r.Body), &a); err != nil || r.Status != 201 {
		h.t.Fatalf("start: %d %s", r.Status, r.Body)
	}
	return a
}

func newRegisteringTool(t *testing.T) *toolsim.Tool {
	t.Helper()
	tool, err := toolsim.New(toolsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

var scopesWanted = []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore), "https://purl.imsglobal.org/spec/lti/scope/noticehandlers"}

// TestToolDynamicRegistration: a tool registers itself with ltiop as the platform (LTI DR
// 1.0): the integrator starts it, the tool reads the platform configuration and registers,
// and a ToolRegistration exists, inactive until approved unless pre-approved.
func TestToolDynamicRegistration(t *testing.T) {
	h := newToolsHarness(t)
	a := h.start(false)
	u, _ := url.Parse(a.URL)
	if u.Host != "tool.example.com" || u.Query().Get("x") != "1" || u.Query().Get("registration_token") != a.RegistrationToken ||
		u.Query().Get("openid_configuration") != h.api.URL+"/lti/platform/openid-configuration" || time.Until(a.ExpiresAt) < 50*time.Minute {
		t.Fatalf("start answer: %+v", a)
	}

	r := h.call("GET", "/lti/platform/openid-configuration", nil)
	var pc map[string]any
	_ = json.Unmarshal([]byte(r.Body), &pc)
	lpc, _ := pc["https://purl.imsglobal.org/spec/lti-platform-configuration"].(map[string]any)
	if r.Status != 200 || pc["registration_endpoint"] != h.api.URL+"/lti/platform/register" || pc["issuer"] != "https://lti.example.com" ||
		lpc["product_family_code"] != "ltiop" || !strings.Contains(r.Body, "LtiDeepLinkingRequest") || !strings.Contains(r.Body, "Context.id") {
		t.Fatalf("configuration: %d %s", r.Status, r.Body)
	}

	tool := newRegisteringTool(t)
	reg, err := tool.Register(context.Background(), a.URL, "https://tool.example.com", scopesWanted, true)
	if err != nil {
		t.Fatal(err)
	}
	if reg.ClientID == "" || reg.DeploymentID != "1" || reg.Scope != scopesWanted[0]+" "+scopesWanted[1] {
		t.Fatalf("registration: %+v", reg) // the notice-handler scope is not granted: left out
	}
	got := h.tools.ByClientID(reg.ClientID)
	if got == nil || got.Spec.IsActive() || string(got.Spec.LoginURL) != "https://tool.example.com/login" ||
		string(got.Spec.DeepLinkingURL) != "https://tool.example.com/deeplink-launch" || got.Spec.AuthConfig.Key != "https://tool.example.com/jwks" ||
		len(got.Spec.RedirectionURIs) != 2 || len(got.Spec.Scopes) != 2 {
		t.Fatalf("tool registration: %+v", got)
	}
	if c := tool.Config(); c.ClientID != reg.ClientID || c.TokenEndpoint != h.api.URL+"/lti/platform/token" || c.Issuer != "https://lti.example.com" {
		t.Fatalf("the tool took %+v", c)
	}

	// The token is single use.
	if _, err := newRegisteringTool(t).Register(context.Background(), a.URL, "https://tool2.example.com", scopesWanted, false); err == nil ||
		!strings.Contains(err.Error(), "REGISTRATION_TOKEN_ALREADY_USED") {
		t.Fatalf("second use: %v", err)
	}

	// Pre-approved: active at once; named as the integrator asked.
	r = h.call("POST", "/api/tools/registrations", map[string]any{"initiationUrl": "https://tool3.example.com/r", "preApproved": true, "toolId": "tool-three"})
	var named admin.StartAnswer
	_ = json.Unmarshal([]byte(r.Body), &named)
	pre, err := newRegisteringTool(t).Register(context.Background(), named.URL, "https://tool3.example.com", nil, false)
	if err != nil || !h.tools.ByClientID(pre.ClientID).Spec.IsActive() || h.tools.ByClientID(pre.ClientID).ID != "tool-three" {
		t.Fatalf("pre-approved: %v", err)
	}
	if r = h.call("POST", "/api/tools/registrations", map[string]any{"initiationUrl": "https://tool3.example.com/r", "toolId": "tool-three"}); r.Status != 409 {
		t.Fatalf("an existing toolId: %d %s", r.Status, r.Body)
	}
}

func TestToolDynamicRegistrationRefusals(t *testing.T) {
	h := newToolsHarness(t)
	before := h.writes.Passed()
	// No token, a forged one, an expired one.
	for name, token := range map[string]string{"no token": "", "forged": "eyJhbGciOiJkaXIifQ..x.y.z"} {
		init := "https://tool.example.com/r?openid_configuration=" + url.QueryEscape(h.api.URL+"/lti/platform/openid-configuration") +
			"&registration_token=" + url.QueryEscape(token)
		if _, err := newRegisteringTool(t).Register(context.Background(), init, "https://tool.example.com", nil, false); err == nil ||
			!strings.Contains(err.Error(), "INVALID_REGISTRATION_TOKEN") {
			t.Errorf("%s: %v", name, err)
		}
	}
	a := h.start(false)
	h.dynreg.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := newRegisteringTool(t).Register(context.Background(), a.URL, "https://tool.example.com", nil, false); err == nil ||
		!strings.Contains(err.Error(), "INVALID_REGISTRATION_TOKEN") {
		t.Errorf("expired: %v", err)
	}
	h.dynreg.Now = nil
	// Bad metadata: http URLs outside dev mode, a fragment, no token spent.
	for name, base := range map[string]string{"http": "http://tool.example.com", "fragment": "https://tool.example.com/#x"} {
		_, err := newRegisteringTool(t).Register(context.Background(), a.URL, base, nil, false)
		if err == nil || !strings.Contains(err.Error(), "INVALID_CLIENT_METADATA") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := h.writes.Passed() - before; n != 0 {
		t.Fatalf("%d refused registrations were written", n)
	}
	// The token still works after refusals.
	if _, err := newRegisteringTool(t).Register(context.Background(), a.URL, "https://tool.example.com", nil, false); err != nil {
		t.Fatalf("after refusals: %v", err)
	}
	if r := h.call("POST", "/api/tools/registrations", map[string]any{"initiationUrl": "javascript:alert(1)"}); r.Status != 400 {
		t.Fatalf("bad initiation URL: %d", r.Status)
	}
}

// TestToolDynamicRegistrationMoodle posts the registration Moodle 4.x's enrol_lti ("Publish
// as LTI tool", enrol/lti/register.php) sends: scopes inside the tool configuration, and
// messages with label, placements and allowLearner. All of it is accepted.
func TestToolDynamicRegistrationMoodle(t *testing.T) {
	h := newToolsHarness(t)
	a := h.start(false)
	token := a.RegistrationToken
	body := map[string]any{
		"application_type": "web", "grant_types": []string{"client_credentials", "implicit"}, "response_types": []string{"id_token"},
		"initiate_login_uri": "https://moodle.example.edu/enrol/lti/login.php?id=d2f1c0a9",
		"redirect_uris":      []string{"https://moodle.example.edu/enrol/lti/launch.php", "https://moodle.example.edu/enrol/lti/launch_deeplink.php"},
		"client_name":        "Moodle", "jwks_uri": "https://moodle.example.edu/enrol/lti/jwks.php",
		"logo_uri": "https://moodle.example.edu/theme/image.php/boost/core/1/moodlelogo", "token_endpoint_auth_method": "private_key_jwt",
		"https://purl.imsglobal.org/spec/lti-tool-configuration": map[string]any{
			"domain": "moodle.example.edu", "target_link_uri": "https://moodle.example.edu/enrol/lti/launch.php", "custom_parameters": []any{},
			"scopes": []string{"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem", "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
				"https://purl.imsglobal.org/spec/lti-ags/scope/score", "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"},
			"claims": []string{"iss", "sub", "aud", "given_name", "family_name", "email", "picture"},
			"messages": []map[string]any{
				{"type": "LtiDeepLinkingRequest", "allowLearner": false, "target_link_uri": "https://moodle.example.edu/enrol/lti/launch_deeplink.php",
					"label": "Moodle (deep linking)", "placements": []string{"ContentArea"}},
				{"type": "LtiResourceLinkRequest", "allowLearner": true, "target_link_uri": "https://moodle.example.edu/enrol/lti/launch.php",
					"label": "Moodle", "placements": []string{"ContentArea"}},
			},
		},
	}
	r := testhttp.Do(t, http.DefaultClient, testhttp.NewRequest(t, "POST", h.api.URL+"/lti/platform/register", body, "Authorization", "Bearer "+token))
	var ans map[string]any
	if err := json.Unmarshal([]byte(r.Body), &ans); err != nil || r.Status != 200 {
		t.Fatalf("Moodle's registration: %d %s", r.Status, r.Body)
	}
	tc, _ := ans["https://purl.imsglobal.org/spec/lti-tool-configuration"].(map[string]any)
	clientID, _ := ans["client_id"].(string)
	got := h.tools.ByClientID(clientID)
	if got == nil || tc["deployment_id"] != "1" || len(got.Spec.Scopes) != 4 || string(got.Spec.DeepLinkingURL) != "https://moodle.example.edu/enrol/lti/launch_deeplink.php" ||
		string(got.Spec.LoginURL) != "https://moodle.example.edu/enrol/lti/login.php?id=d2f1c0a9" || got.Spec.Name != "Moodle" {
		t.Fatalf("registered: %+v, answer %s", got, r.Body)
	}
}

// TestToolRegistrationPage: the page ltiop serves frames the tool's initiation URL (and no
// other), with a CSP that lets only that origin in a frame and only its own script run,
// and relays the closing message; its token registers nothing.
func TestToolRegistrationPage(t *testing.T) {
	h := newToolsHarness(t)
	a := h.start(false)
	if !strings.HasPrefix(a.PageURL, h.api.URL+"/lti/platform/registration?page=") {
		t.Fatalf("pageUrl %q", a.PageURL)
	}
	r := testhttp.Do(t, http.DefaultClient, testhttp.NewRequest(t, "GET", a.PageURL, nil))
	csp := r.Header.Get("Content-Security-Policy")
	if r.Status != 200 || !strings.Contains(r.Body, `src="`+strings.ReplaceAll(a.URL, "&", "&amp;")+`"`) ||
		!strings.Contains(r.Body, "org.imsglobal.lti.close") || !strings.Contains(csp, "frame-src https://tool.example.com;") ||
		!strings.Contains(csp, "script-src 'nonce-") {
		t.Fatalf("page: %d %s\nCSP %s", r.Status, r.Body, csp)
	}
	page, _ := url.Parse(a.PageURL)
	pageToken := page.Query().Get("page")
	init := "https://tool.example.com/r?openid_configuration=" + url.QueryEscape(h.api.URL+"/lti/platform/openid-configuration") +
		"&registration_token=" + url.QueryEscape(pageToken)
	if _, err := newRegisteringTool(t).Register(context.Background(), init, "https://tool.example.com", nil, false); err == nil ||
		!strings.Contains(err.Error(), "INVALID_REGISTRATION_TOKEN") {
		t.Fatalf("the page's token registered: %v", err)
	}
	for _, bad := range []string{"", "forged", a.RegistrationToken} {
		r = testhttp.Do(t, http.DefaultClient, testhttp.NewRequest(t, "GET", h.api.URL+"/lti/platform/registration?page="+url.QueryEscape(bad), nil))
		if r.Status != 400 || strings.Contains(r.Body, "<iframe") {
			t.Errorf("page %q: %d", bad, r.Status)
		}
	}
}

// registration is the body a tool posts to /lti/platform/register: its login, redirect
// and target link URLs on pages, its key set at jwks.
func registration(pages, jwks string, scopes ...string) map[string]any {
	return map[string]any{
		"application_type": "web", "response_types": []string{"id_token"}, "grant_types": []string{"implicit", "client_credentials"},
		"initiate_login_uri": pages + "/login", "redirect_uris": []string{pages + "/launch"}, "client_name": "a tool",
		"jwks_uri": jwks, "token_endpoint_auth_method": "private_key_jwt", "scope": strings.Join(scopes, " "),
		"https://purl.imsglobal.org/spec/lti-tool-configuration": map[string]any{"domain": "tool.example.com", "target_link_uri": pages + "/launch"},
	}
}

// register posts body as a tool does, with the registration token of a.
func (h *toolsHarness) register(a admin.StartAnswer, body map[string]any) testhttp.Reply {
	h.t.Helper()
	return testhttp.Do(h.t, http.DefaultClient, testhttp.NewRequest(h.t, "POST", h.api.URL+"/lti/platform/register", body,
		"Authorization", "Bearer "+a.RegistrationToken))
}

// The attack of issue #34 item 3: a tool registering itself names a key set inside the
// cluster (the Kubernetes API's Service address, the metadata service). ltiop fetches
// it at every launch of the tool under dynamic registration's policy, so it is refused
// now, with the DR error shape naming jwks_uri: nothing written, the token not spent.
func TestToolRegistrationKeySetOutsideDynamicRegistrationsPolicyRefused(t *testing.T) {
	h := newToolsHarness(t)
	a := h.start(false)
	before := h.writes.Passed()
	for _, jwks := range []string{"https://10.96.0.1/api/v1/namespaces/kube-system/secrets", "https://169.254.169.254/latest/meta-data/", "https://[fd00:ec2::254]/"} {
		r := h.register(a, registration("https://tool.example.com", jwks))
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal([]byte(r.Body), &e)
		if r.Status != http.StatusBadRequest || e.Error != "invalid_client_metadata" ||
			!strings.HasPrefix(e.Description, "URL_NOT_ALLOWED: jwks_uri") || strings.Contains(r.Body, "10.96") {
			t.Errorf("%s: %d %s", jwks, r.Status, r.Body)
		}
	}
	if n := h.writes.Passed() - before; n != 0 {
		t.Fatalf("%d refused registrations were written", n)
	}
	// The token is not spent; the URLs only the browser visits are not the policy's.
	r := h.register(a, registration("https://10.96.0.1", "https://tool.example.com/jwks"))
	if r.Status != http.StatusOK {
		t.Fatalf("a tool whose pages are on a private address: %d %s", r.Status, r.Body)
	}
}

// Within dynamicRegistration.allowCidrs, the tool's key set is accepted; every tool that
// registered itself is labelled as dynamic registration's, so its key set is fetched
// under that allowance (registry.SourceOf), never outboundAllowCidrs.
func TestToolRegistrationLabelledAsDynamicRegistrations(t *testing.T) {
	h := newToolsHarness(t)
	h.dynreg.Outbound = outbound.Policy{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}}
	for _, jwks := range []string{"https://tool.example.com/jwks", "https://10.20.0.5/jwks"} {
		r := h.register(h.start(false), registration("https://tool.example.com", jwks))
		var answer struct {
			ClientID string `json:"client_id"`
		}
		if err := json.Unmarshal([]byte(r.Body), &answer); err != nil || r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", jwks, r.Status, r.Body)
		}
		got := h.tools.ByClientID(answer.ClientID)
		if got == nil || got.Source != outbound.SourceDynamicRegistration || got.Spec.AuthConfig.Key != jwks ||
			h.stored(got.ID).Labels[ltiv1.LabelOrigin] != ltiv1.OriginDynamicRegistration {
			t.Fatalf("%s: registered %+v", jwks, got)
		}
	}
	// A tool the integrator writes is the operator's.
	if r := h.call("POST", "/api/tools", toolBody("by-api", "by-api")); r.Status != http.StatusCreated ||
		h.tools.Get("by-api").Source != outbound.SourceOperator || len(h.stored("by-api").Labels) != 0 {
		t.Fatalf("by the API: %d %s", r.Status, r.Body)
	}
}

// Issue #34 item 1: the integrator caps the scopes a tool registering itself may get
// (DR 1.0 §3.6.2: those not granted are left out of the answer). A tool asking for every
// scope gets the cap; [] grants none; without a cap, all ltiop serves.
func TestToolRegistrationScopeCap(t *testing.T) {
	h := newToolsHarness(t)
	every := append([]string{"openid"}, scopeStrings...)
	for _, tc := range []struct {
		name string
		cap  any // the start request's scopes; nil: absent
		want []string
	}{
		{"capped", []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore)}, []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore)}},
		{"none", []string{}, nil},
		{"no cap", nil, scopeStrings},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := map[string]any{"initiationUrl": "https://tool.example.com/r"}
			if tc.cap != nil {
				start["scopes"] = tc.cap
			}
			r := h.call("POST", "/api/tools/registrations", start)
			var a admin.StartAnswer
			if err := json.Unmarshal([]byte(r.Body), &a); err != nil || r.Status != http.StatusCreated {
				t.Fatalf("start: %d %s", r.Status, r.Body)
			}
			reg, err := newRegisteringTool(t).Register(context.Background(), a.URL, "https://tool.example.com", every, false)
			if err != nil {
				t.Fatal(err)
			}
			got := h.tools.ByClientID(reg.ClientID)
			if reg.Scope != strings.Join(tc.want, " ") || got == nil || !slices.Equal(got.Scopes(), tc.want) {
				t.Fatalf("granted %q, stored %v, want %v", reg.Scope, got.Scopes(), tc.want)
			}
		})
	}
	r := h.call("POST", "/api/tools/registrations", map[string]any{"initiationUrl": "https://tool.example.com/r",
		"scopes": []string{"https://purl.imsglobal.org/spec/lti/scope/noticehandlers"}})
	if desc := testhttp.WantError(t, r, http.StatusBadRequest, httpapi.CodeInvalidParameters); !strings.Contains(desc, "scopes[0]") {
		t.Fatalf("a cap with a scope ltiop does not serve: %s", desc)
	}
}

// scopeStrings are the scopes a tool may be given, in knownScopes' order.
var scopeStrings = []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSLineItem), string(ltiv1.ScopeAGSLineItemRead),
	string(ltiv1.ScopeAGSResultRead), string(ltiv1.ScopeAGSScore)}
