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
