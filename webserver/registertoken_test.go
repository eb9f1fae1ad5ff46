package webserver_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/ratelimit"
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
// pattern instead.
func TestRegisterTokenIsNotLogged(t *testing.T) {
	var mu sync.Mutex
	var logs strings.Builder
	log.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 1}))

	const token = "s3cret-registration-token-0123456789"
	h := limitedServer(webserver.RateLimits{})
	// The onboarding handlers are absent here, so the handler panics: both log lines run.
	request(h, "GET", "/lti/register/"+token, "192.0.2.78:4000")
	request(h, "GET", "/lti/register?openid_configuration=x", "192.0.2.78:4000")

	mu.Lock()
	defer mu.Unlock()
	out := logs.String()
	if !strings.Contains(out, `"path"="/lti/register/{token}"`) || !strings.Contains(out, `"path"="/lti/register"`) {
		t.Fatalf("the requests were not logged as expected:\n%s", out)
	}
	if strings.Contains(out, token) {
		t.Fatalf("the registration token is in the logs:\n%s", out)
	}
}
