package onboarding_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

// Issue #16 §5: GET /api/registrations/{id} (and ?raw=true) and POST …/complete in the
// names and shapes the LTIAAS Node SDK validates and sends, beside ltiop's own.
func TestRegistrationInTheLTIAASSDKShapes(t *testing.T) {
	h := newHarness(t, preApproval, func(c *harnessConfig) { c.mode = lmssim.DeploymentInToolConfig })
	start := h.start()
	su, _ := url.Parse(start)
	token := su.Query().Get("registration_token")
	res := h.open(start, false)
	loc, _ := url.Parse(res.Header.Get("Location"))
	id := loc.Query().Get("registrationId")
	if res.Status != http.StatusSeeOther || id == "" || token == "" {
		t.Fatalf("register: %d %s (token %q)", res.Status, res.Header.Get("Location"), token)
	}
	path := "/api/registrations/" + url.PathEscape(id)

	m := h.call("GET", path, nil).JSON(t)
	if m["url"] != h.lmsURL || m["familyCode"] != "moodle" || m["version"] != "1.0" {
		t.Errorf("url %v, familyCode %v, version %v", m["url"], m["familyCode"], m["version"])
	}
	if s, _ := m["supportedScopes"].([]any); len(s) != len(lmssim.AllScopes()) {
		t.Errorf("supportedScopes %v", m["supportedScopes"])
	}
	wantMessages := []any{map[string]any{"type": "LtiResourceLinkRequest"},
		map[string]any{"type": "LtiDeepLinkingRequest", "placements": []any{"ContentArea"}}}
	if !reflect.DeepEqual(m["supportedMessages"], wantMessages) {
		t.Errorf("supportedMessages %v", m["supportedMessages"])
	}
	if m["productFamilyCode"] != "moodle" || m["messagesSupported"] == nil || m["scopesSupported"] == nil {
		t.Errorf("ltiop's own names are gone: %v", m)
	}

	raw := h.call("GET", path+"?raw=true", nil).JSON(t)
	oidc, _ := raw["openIdConfiguration"].(map[string]any)
	if oidc["issuer"] != h.lmsURL || oidc["registration_endpoint"] != h.lmsURL+lmssim.RegisterPath || oidc["https://purl.imsglobal.org/spec/lti-platform-configuration"] == nil {
		t.Errorf("openIdConfiguration %v", oidc)
	}
	if raw["registrationToken"] != token {
		t.Errorf("registrationToken %v, want the platform's", raw["registrationToken"])
	}
	if raw["issuer"] != h.lmsURL {
		t.Errorf("the configuration's own members are gone from the top level: %v", raw)
	}

	// The SDK's messages: objects, with the placements to ask for.
	for _, bad := range []struct {
		body any
		says string
	}{
		{[]any{map[string]any{"type": "LtiStartProctoring"}}, "messages[0]"},
		{[]any{map[string]any{"type": "LtiDeepLinkingRequest", "placements": []string{""}}}, "messages[0].placements"},
		{[]any{"LtiResourceLinkRequest", map[string]any{"type": "LtiDeepLinkingRequest", "placements": make([]string, 21)}}, "messages[1].placements"},
		{[]any{map[string]any{"type": "LtiResourceLinkRequest", "label": "x"}}, "messages[0]: must be a message type or an object {type, placements}"},
		{[]any{42}, "messages[0]: must be a message type"},
	} {
		desc := testhttp.WantRefusal(t, h.call("POST", path+"/complete", map[string]any{"messages": bad.body}), 400, "INVALID_PARAMETERS")
		if !strings.Contains(desc, bad.says) {
			t.Errorf("%v: description %q does not say %q", bad.body, desc, bad.says)
		}
	}
	if len(h.lms.Registrations()) != 0 {
		t.Fatal("a refused completion registered")
	}
	done := h.call("POST", path+"/complete", map[string]any{"platformName": "SDK Moodle", "messages": []any{
		map[string]any{"type": "LtiResourceLinkRequest"},
		map[string]any{"type": "LtiDeepLinkingRequest", "placements": []string{"RichTextEditor"}},
	}})
	if done.Status != http.StatusOK {
		t.Fatalf("complete: %d %s", done.Status, done.Body)
	}
	if out := done.JSON(t); out["platformId"] != h.only().Name || out["html"] == "" {
		t.Fatalf("answer %v", out)
	}
	sent := h.lms.Registrations()
	msgs := sent[0]["https://purl.imsglobal.org/spec/lti-tool-configuration"].(map[string]any)["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["type"] != "LtiResourceLinkRequest" ||
		!reflect.DeepEqual(msgs[1].(map[string]any)["placements"], []any{"RichTextEditor"}) {
		t.Fatalf("messages sent %v", msgs)
	}
}

// The attack of issue #28 item 7: ?raw=true answers the LMS's registration token, a bearer
// credential for the LMS's registration endpoint. Once the registration is completed it
// has served its purpose, and nobody holding the id may read it any more.
func TestRawRegistrationTokenIsNotReadableOnceCompleted(t *testing.T) {
	h := newHarness(t, preApproval, func(c *harnessConfig) { c.mode = lmssim.DeploymentInToolConfig })
	start := h.start()
	su, _ := url.Parse(start)
	token := su.Query().Get("registration_token")
	res := h.open(start, false)
	loc, _ := url.Parse(res.Header.Get("Location"))
	path := "/api/registrations/" + url.PathEscape(loc.Query().Get("registrationId"))
	if raw := h.call("GET", path+"?raw=true", nil); raw.Status != http.StatusOK || token == "" {
		t.Fatalf("before completion: %d (token %q)", raw.Status, token)
	}
	if done := h.call("POST", path+"/complete", map[string]any{}); done.Status != http.StatusOK {
		t.Fatalf("complete: %d %s", done.Status, done.Body)
	}
	for _, q := range []string{"?raw=true", "?raw=1"} {
		after := h.call("GET", path+q, nil)
		if strings.Contains(string(after.Body), token) {
			t.Fatalf("%s after completion answered the registration token: %d", q, after.Status)
		}
		testhttp.WantRefusal(t, after, http.StatusConflict, "REGISTRATION_ALREADY_COMPLETED")
	}
	if view := h.call("GET", path, nil); view.Status != http.StatusOK {
		t.Errorf("the registration's view (no token) after completion: %d", view.Status)
	}
}
