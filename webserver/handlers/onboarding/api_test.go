package onboarding_test

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

const approveURL = "https://app.example/approve?tenant=7"

// pending opens the registration start in pre-approval mode and returns the id of the
// registration waiting for the integrator.
func (h *harness) pending() string {
	h.t.Helper()
	res := h.open(h.start(), false)
	if res.Status != http.StatusSeeOther {
		h.t.Fatalf("register: %d %s", res.Status, res.Body)
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Host != "app.example" || loc.Path != "/approve" || loc.Query().Get("tenant") != "7" {
		h.t.Fatalf("sent to %q", res.Header.Get("Location"))
	}
	id := loc.Query().Get("registrationId")
	if id == "" {
		h.t.Fatal("no registrationId")
	}
	return id
}

func preApproval(c *harnessConfig) { c.opts.PreApprovalURL = approveURL }

// With a pre-approval URL, /lti/register sends the frame to the integrator with a
// registrationId and registers nothing; GET /api/registrations/{id} shows the platform,
// and POST …/complete registers it with the integrator's choices.
func TestPreApproval(t *testing.T) {
	h := newHarness(t, preApproval, func(c *harnessConfig) { c.mode = lmssim.DeploymentInToolConfig })
	id := h.pending()
	if len(h.lms.Registrations()) != 0 || len(h.stored()) != 0 {
		t.Fatal("registered before approval")
	}

	got := h.call("GET", "/api/registrations/"+url.PathEscape(id), nil)
	if got.Status != http.StatusOK {
		t.Fatalf("get: %d %s", got.Status, got.Body)
	}
	m := got.JSON(t)
	for k, v := range map[string]any{
		"id": id, "url": h.lmsURL, "productFamilyCode": "moodle", "version": "1.0",
		"authenticationEndpoint": h.lmsURL + lmssim.AuthPath, "accesstokenEndpoint": h.lmsURL + lmssim.TokenPath,
		"jwksUrl": h.lmsURL + lmssim.JWKSPath, "registrationEndpoint": h.lmsURL + lmssim.RegisterPath,
	} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if !reflect.DeepEqual(m["messagesSupported"], []any{"LtiResourceLinkRequest", "LtiDeepLinkingRequest"}) || len(m["scopesSupported"].([]any)) == 0 {
		t.Errorf("messages %v, scopes %v", m["messagesSupported"], m["scopesSupported"])
	}
	raw := h.call("GET", "/api/registrations/"+url.PathEscape(id)+"?raw=true", nil).JSON(t)
	if raw["issuer"] != h.lmsURL || raw["registration_endpoint"] != h.lmsURL+lmssim.RegisterPath {
		t.Fatalf("raw configuration %v", raw)
	}

	done := h.call("POST", "/api/registrations/"+url.PathEscape(id)+"/complete", map[string]any{
		"platformName": "Approved Moodle", "autoActivate": true, "messages": []string{"LtiResourceLinkRequest"}})
	if done.Status != http.StatusOK {
		t.Fatalf("complete: %d %s", done.Status, done.Body)
	}
	out := done.JSON(t)
	pr := h.only()
	if out["platformId"] != pr.Name || !strings.Contains(out["html"].(string), "org.imsglobal.lti.close") {
		t.Fatalf("answer %v", out)
	}
	if pr.Spec.Name != "Approved Moodle" || !pr.Spec.IsActive() || !slices.Equal(pr.Status.DeploymentIDs, []string{"dr-deployment"}) {
		t.Fatalf("stored %+v %+v", pr.Spec, pr.Status)
	}
	sent := h.lms.Registrations()
	if len(sent) != 1 {
		t.Fatalf("the platform received %d registrations", len(sent))
	}
	msgs := sent[0]["https://purl.imsglobal.org/spec/lti-tool-configuration"].(map[string]any)["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["type"] != "LtiResourceLinkRequest" {
		t.Fatalf("messages sent %v", msgs)
	}

	// Single use: the pending registration cannot be completed twice.
	testhttp.WantRefusal(t, h.call("POST", "/api/registrations/"+url.PathEscape(id)+"/complete", map[string]any{}), 409, "REGISTRATION_ALREADY_COMPLETED")
	if len(h.lms.Registrations()) != 1 || len(h.stored()) != 1 {
		t.Fatal("a second completion registered again")
	}
}

// Refusals of GET and POST …/complete: the pending registration stays completable, and
// nothing reaches the platform or the API server.
func TestPendingRegistrationRefusals(t *testing.T) {
	h := newHarness(t, preApproval)
	id := h.pending()
	path := "/api/registrations/" + url.PathEscape(id)
	otherPurpose, err := h.keyring.Seal(sessions.PurposeLTIK, []byte(`{"u":"x","c":{}}`), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		header             []string
		status             int
		code, says         string
	}{
		{"an unknown id", "GET", "/api/registrations/garbage", nil, nil, 404, "REGISTRATION_NOT_FOUND", ""},
		{"a tampered id", "GET", "/api/registrations/" + url.PathEscape(id[:len(id)-2]+"AA"), nil, nil, 404, "REGISTRATION_NOT_FOUND", ""},
		{"a token of another purpose", "GET", "/api/registrations/" + url.PathEscape(otherPurpose), nil, nil, 404, "REGISTRATION_NOT_FOUND", ""},
		{"completing an unknown id", "POST", "/api/registrations/garbage/complete", map[string]any{}, nil, 404, "REGISTRATION_NOT_FOUND", ""},
		{"an unsupported message", "POST", path + "/complete", map[string]any{"messages": []string{"LtiResourceLinkRequest", "LtiStartProctoring"}}, nil, 400, "INVALID_PARAMETERS", "messages[1]"},
		{"an unknown member", "POST", path + "/complete", map[string]any{"name": "x"}, nil, 400, "INVALID_PARAMETERS", "name"},
		{"not JSON", "POST", path + "/complete", "{", nil, 400, "INVALID_REQUEST_BODY", ""},
		{"no body", "POST", path + "/complete", "", nil, 400, "INVALID_REQUEST_BODY", ""},
		{"a form body", "POST", path + "/complete", "a=b", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc := testhttp.WantRefusal(t, h.call(tc.method, tc.path, tc.body, tc.header...), tc.status, tc.code)
			if !strings.Contains(desc, tc.says) {
				t.Fatalf("description %q does not say %q", desc, tc.says)
			}
		})
	}
	if len(h.lms.Registrations()) != 0 || len(h.stored()) != 0 {
		t.Fatal("a refused request registered")
	}
	if res := h.call("POST", path+"/complete", map[string]any{}); res.Status != http.StatusOK {
		t.Fatalf("complete after the refusals: %d %s", res.Status, res.Body)
	}
	if pr := h.only(); pr.Spec.IsActive() {
		t.Fatal("activated without autoActivate or the AutoActivate option")
	}
}

// A pending registration waits at most an hour.
func TestPendingRegistrationExpires(t *testing.T) {
	h := newHarness(t, preApproval)
	id := h.pending()
	h.clock.Add(int64(time.Hour + time.Second))
	testhttp.WantRefusal(t, h.call("GET", "/api/registrations/"+url.PathEscape(id), nil), 404, "REGISTRATION_NOT_FOUND")
	testhttp.WantRefusal(t, h.call("POST", "/api/registrations/"+url.PathEscape(id)+"/complete", map[string]any{}), 404, "REGISTRATION_NOT_FOUND")
	if len(h.lms.Registrations()) != 0 || len(h.stored()) != 0 {
		t.Fatal("an expired registration went through")
	}
}

// When the platform refuses at completion, the error is passed on, and the pending
// registration is used up: registration tokens are single-use on most platforms, so the
// integrator starts over from the LMS rather than retrying.
func TestCompleteWhenThePlatformRefuses(t *testing.T) {
	h := newHarness(t, preApproval)
	id := h.pending()
	h.interceptLMS(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != "POST" || r.URL.Path != lmssim.RegisterPath {
			return false
		}
		http.Error(w, `{"error":"token_already_used"}`, http.StatusUnauthorized)
		return true
	})
	res := h.call("POST", "/api/registrations/"+url.PathEscape(id)+"/complete", map[string]any{})
	testhttp.WantRefusal(t, res, 502, "REGISTRATION_REFUSED")
	if d := res.JSON(t)["details"].(map[string]any); d["upstreamStatus"] != float64(401) {
		t.Fatalf("details %v", d)
	}
	if len(h.stored()) != 0 {
		t.Fatal("a refused registration was stored")
	}
	testhttp.WantRefusal(t, h.call("POST", "/api/registrations/"+url.PathEscape(id)+"/complete", map[string]any{}), 409, "REGISTRATION_ALREADY_COMPLETED")
}
