package admin_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/webserver/admin"
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
