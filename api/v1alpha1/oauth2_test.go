package v1alpha1

import "testing"

func TestOAuth2Endpoints(t *testing.T) {
	for _, tc := range []struct {
		issuer, authorize, token string
		given                    *OAuth2Client
		ok                       bool
	}{
		{"https://canvas.instructure.com", "", "", &OAuth2Client{}, false},
		{"https://canvas.school.edu", "https://canvas.school.edu/login/oauth2/auth", "https://canvas.school.edu/login/oauth2/token", &OAuth2Client{}, true},
		{"https://school.brightspace.com", "https://auth.brightspace.com/oauth2/auth", "https://auth.brightspace.com/core/connect/token", &OAuth2Client{}, true},
		{"https://moodle.school.edu", "", "", &OAuth2Client{}, false},
		{"https://canvas.instructure.com", "https://s.instructure.com/a", "https://s.instructure.com/t",
			&OAuth2Client{AuthorizeURL: "https://s.instructure.com/a", TokenURL: "https://s.instructure.com/t"}, true},
	} {
		a, tk, ok := tc.given.Endpoints(tc.issuer)
		if ok != tc.ok || (ok && (a != tc.authorize || tk != tc.token)) {
			t.Errorf("Endpoints(%q) = %q, %q, %v; want %q, %q, %v", tc.issuer, a, tk, ok, tc.authorize, tc.token, tc.ok)
		}
	}
}
