package toolmode_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzLogin feeds arbitrary query strings to /lti/login. Whatever comes in, the answer is
// a redirect to the registered authentication endpoint only (T-LOGIN-07), or a refusal.
func FuzzLogin(f *testing.F) {
	rg := newRig(f)
	valid := url.Values{"iss": {rg.lms.Issuer}, "client_id": {rg.lms.ClientID}, "login_hint": {"u"},
		"target_link_uri": {rg.ltiop.URL + "/lti/launch"}}
	f.Add(valid.Encode())
	f.Add(valid.Encode() + "&lti_message_hint=%7B%7D&lti_storage_target=_parent")
	f.Add("iss=&login_hint=&target_link_uri=")
	f.Add("iss=" + url.QueryEscape(rg.lms.Issuer) + "&login_hint=u&target_link_uri=https%3A%2F%2Fevil.example")
	f.Add("%zz&;;==&iss=%00")
	auth := rg.lms.Issuer + "/auth?"
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/lti/login", nil)
		req.URL.RawQuery = query
		w := httptest.NewRecorder()
		rg.tool.Login(w, req)
		switch w.Code {
		case http.StatusFound:
			if loc := w.Header().Get("Location"); !strings.HasPrefix(loc, auth) {
				t.Fatalf("redirect to %q, not to the registered endpoint", loc)
			}
		case http.StatusOK: // the platform-storage page, which also leads only to auth
			if !strings.Contains(w.Body.String(), "lti.put_data") {
				t.Fatalf("200 without the storage page: %s", w.Body.String())
			}
		case http.StatusBadRequest, http.StatusForbidden:
		default:
			t.Fatalf("unexpected status %d", w.Code)
		}
	})
}
