package webserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

// /lti/register/{token} shares /lti/register's bucket: a client guessing tokens is held
// to the registration rate, whichever of the two URLs it uses.
func TestRegisterTokenRouteSharesTheRegisterRateLimit(t *testing.T) {
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	h := limitedServer(webserver.RateLimits{Register: ratelimit.Limit{Rate: 1, Burst: 2}, Now: clock.now})
	const remote = "192.0.2.77:4000"
	request(h, "GET", "/lti/register", remote)
	request(h, "GET", "/lti/register/guess-1", remote)
	if res := request(h, "GET", "/lti/register/guess-2", remote); res.Code != http.StatusTooManyRequests {
		t.Fatalf("third registration attempt from one address: %d, want 429", res.Code)
	}
	if res := request(h, "GET", "/lti/register", remote); res.Code != http.StatusTooManyRequests {
		t.Fatalf("/lti/register after the token route used the bucket: %d, want 429", res.Code)
	}
}

// The registration token is in the path: request logs (and the panic log) show the route
// pattern instead. (This package logs everything at debug level into logs, see TestMain.)
func TestRegisterTokenIsNotLogged(t *testing.T) {
	const token = "s3cret-registration-token-0123456789"
	h := limitedServer(webserver.RateLimits{})
	// The onboarding handlers are absent here, so the handler panics: both log lines run.
	withToken := request(h, "GET", "/lti/register/"+token, "192.0.2.78:4000")
	without := request(h, "GET", "/lti/register?openid_configuration=x", "192.0.2.78:4000")

	for id, want := range map[string]string{
		withToken.Header().Get("X-Request-Id"): "/lti/register/{token}",
		without.Header().Get("X-Request-Id"):   "/lti/register",
	} {
		lines := logs.requestLines(t, id)
		if len(lines) != 1 || lines[0]["path"] != want {
			t.Fatalf("request %s logged as %v, want path %q", id, lines, want)
		}
	}
	if logs.contains(token) {
		t.Fatal("the registration token is in the logs")
	}
}

// A platform-mode service URL carries the sealed grant of a launch: request logs show the
// route pattern instead.
func TestServiceGrantIsNotLogged(t *testing.T) {
	const grant = "sealed-service-grant-0123456789abcdef"
	h := limitedServer(webserver.RateLimits{})
	res := request(h, "GET", "/lti/platform/services/"+grant+"/memberships", "192.0.2.79:4000")
	lines := logs.requestLines(t, res.Header().Get("X-Request-Id"))
	if len(lines) != 1 || lines[0]["path"] != "/lti/platform/services/{grant}/memberships" {
		t.Fatalf("logged as %v", lines)
	}
	if logs.contains(grant) {
		t.Fatal("the service grant is in the logs")
	}
}

// Issue #34 item 5: a request under a secret path that no route matches (a 404, or a 405
// under another method) has no pattern to log instead of its path: the path is cut at the
// secret's segment, which logs show as the route's wildcard.
func TestSecretIsNotLoggedForUnmatchedPaths(t *testing.T) {
	h := limitedServer(webserver.RateLimits{})
	for _, tc := range []struct {
		method, path, secret string
		status               int
		logged               string
	}{
		{"POST", "/lti/register/reg-token-405-0123456789", "reg-token-405", 405, "/lti/register/{token}"},
		{"GET", "/lti/register/reg-token-404-0123456789/more", "reg-token-404", 404, "/lti/register/{token}/…"},
		{"GET", "/lti/platform/services/grant-bare-0123456789", "grant-bare", 404, "/lti/platform/services/{grant}"},
		{"GET", "/lti/platform/services/grant-typo-0123456789/membershipz", "grant-typo", 404, "/lti/platform/services/{grant}/…"},
		{"DELETE", "/lti/platform/services/grant-405-0123456789/memberships", "grant-405", 405, "/lti/platform/services/{grant}/…"},
		{"GET", "/lti/platform/services/grant-deep-0123456789/lineitems/1/scores/2", "grant-deep", 404, "/lti/platform/services/{grant}/…"},
		{"GET", "/lti/platform/services/grant-slash-0123456789/", "grant-slash", 404, "/lti/platform/services/{grant}"},
		// Decoded before it is matched: an escaped slash is still a segment boundary in logs.
		{"GET", "/lti/platform/services/grant-escaped-0123456789%2Fmemberships%2Fx", "grant-escaped", 404, "/lti/platform/services/{grant}/…"},
		{"GET", "/lti//register/reg-token-double-0123456789/x", "reg-token-double", 404, "/lti/register/{token}/…"},
		// Cleaned by the router's redirect, whose route logs its pattern.
		{"GET", "/lti/platform/./services/grant-dot-0123456789/memberships", "grant-dot", 307, "/lti/platform/services/{grant}/memberships"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			res := request(h, tc.method, tc.path, "192.0.2.80:4000")
			if res.Code != tc.status {
				t.Fatalf("status %d, want %d", res.Code, tc.status)
			}
			lines := logs.requestLines(t, res.Header().Get("X-Request-Id"))
			if len(lines) != 1 || lines[0]["path"] != tc.logged {
				t.Fatalf("logged as %v, want path %q", lines, tc.logged)
			}
			if logs.contains(tc.secret) {
				t.Fatalf("%q is in the logs", tc.secret)
			}
		})
	}
}
