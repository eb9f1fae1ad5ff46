package webserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testmetrics"
	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// limitedServer is a server whose handlers are mostly absent (they answer 500): what is
// tested is what happens before them.
func limitedServer(l webserver.RateLimits) http.Handler {
	return webserver.New(webserver.Options{MaxBodyBytes: 1 << 20, RateLimits: l},
		webserver.Handlers{APIKey: httpapi.NewAPIKey("s", "k"), Keys: http.NotFoundHandler(), KeySet: http.NotFoundHandler()}).Handler()
}

func request(h http.Handler, method, path, remote string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Walks every route of the route table: with a burst of one, the second request from an
// address is refused on exactly the routes the table puts in a rate-limit group (issue #13
// §5: the routes anyone can reach; TestRouteTableLimitsEveryOpenRoute holds the table to
// that), and nowhere else.
func TestRateLimitedRouteSet(t *testing.T) {
	one := ratelimit.Limit{Rate: 1, Burst: 1}
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	srv := webserver.New(webserver.Options{MaxBodyBytes: 1 << 20, RateLimits: webserver.RateLimits{
		Launch: one, Register: one, PlatformAuthorize: one, PlatformToken: one, OAuth: one, Notices: one, Now: clock.now,
	}}, webserver.Handlers{APIKey: httpapi.NewAPIKey("s", "k"), Keys: http.NotFoundHandler(), KeySet: http.NotFoundHandler(),
		Tools: &admin.Tools{}, ToolDynReg: &admin.ToolDynReg{}})
	groups := map[webserver.RateLimitGroup]bool{}
	for i, rt := range srv.Routes() {
		route := rt.Method + " " + rt.Path
		path := strings.NewReplacer("{platformId}", "p1", "{id}", "x1", "{token}", "t1").Replace(rt.Path)
		remote := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}).String() + ":4000" // its own address: groups share buckets
		request(srv.Handler(), rt.Method, path, remote)
		second := request(srv.Handler(), rt.Method, path, remote)
		if limited, want := second.Code == http.StatusTooManyRequests, rt.RateLimit != ""; limited != want {
			t.Errorf("%s: second request %d; rate-limited %v, want %v (group %q)", route, second.Code, limited, want, rt.RateLimit)
		}
		groups[rt.RateLimit] = true
	}
	for _, g := range []webserver.RateLimitGroup{webserver.LimitLaunch, webserver.LimitRegister, webserver.LimitPlatformAuthorize,
		webserver.LimitPlatformToken, webserver.LimitOAuth, webserver.LimitNotices} {
		if !groups[g] {
			t.Errorf("no route of the table is in rate-limit group %s", g)
		}
	}
}

// The attack: one address sends its burst, then is refused with 429, Retry-After and
// RATE_LIMITED in the page, the envelope or the OAuth error as the endpoint answers;
// another address is served; tokens come back with time.
func TestRateLimitBurstFromOneAddress(t *testing.T) {
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	h := limitedServer(webserver.RateLimits{
		Launch: ratelimit.Limit{Rate: 10, Burst: 200}, PlatformToken: ratelimit.Limit{Rate: 0.25, Burst: 3}, Now: clock.now,
	})
	before := rateLimitedCount(t, "POST /lti/launch")
	attacker := "203.0.113.7:5555"
	for i := range 200 {
		if w := request(h, "POST", "/lti/launch", attacker); w.Code == http.StatusTooManyRequests {
			t.Fatalf("request %d of the burst of 200 refused", i+1)
		}
	}
	w := request(h, "POST", "/lti/launch", attacker)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("after the burst: %d, Retry-After %q; want 429, 1", w.Code, w.Header().Get("Retry-After"))
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(w.Body.String(), "RATE_LIMITED") {
		t.Errorf("browser answer: %s %q, want the HTML error page naming RATE_LIMITED", ct, w.Body.String())
	}
	w = request(h, "GET", "/lti/login?iss=x", attacker, "Accept", "application/json") // same group, same bucket
	var env httpapi.Envelope
	if w.Code != http.StatusTooManyRequests || json.Unmarshal(w.Body.Bytes(), &env) != nil ||
		env.Status != 429 || env.Error != "Too Many Requests" || env.Details.Message != "RATE_LIMITED" || w.Header().Get("Retry-After") == "" {
		t.Errorf("JSON answer: %d %s", w.Code, w.Body)
	}
	if got := rateLimitedCount(t, "POST /lti/launch") - before; got != 1 {
		t.Errorf("ltiop_rate_limited_total{route=\"POST /lti/launch\"} grew by %v, want 1", got)
	}
	if w := request(h, "POST", "/lti/launch", "198.51.100.20:5555"); w.Code == http.StatusTooManyRequests {
		t.Errorf("another address refused")
	}
	clock.add(100 * time.Millisecond) // one token at 10/s
	if w := request(h, "POST", "/lti/launch", attacker); w.Code == http.StatusTooManyRequests {
		t.Errorf("refused after a token came back")
	}
	if w := request(h, "POST", "/lti/launch", attacker); w.Code != http.StatusTooManyRequests {
		t.Errorf("a second request on one refilled token: %d", w.Code)
	}

	// The token endpoint answers tools in the OAuth 2.0 error form.
	for range 3 {
		request(h, "POST", "/lti/platform/token", attacker)
	}
	w = request(h, "POST", "/lti/platform/token", attacker)
	var oauth struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "4" || json.Unmarshal(w.Body.Bytes(), &oauth) != nil ||
		oauth.Error != "temporarily_unavailable" || !strings.HasPrefix(oauth.ErrorDescription, "RATE_LIMITED:") {
		t.Errorf("token endpoint: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
}

// A zero limit turns its group off; the others stay on.
func TestRateLimitZeroDisables(t *testing.T) {
	h := limitedServer(webserver.RateLimits{OAuth: ratelimit.Limit{Rate: 1, Burst: 1}})
	for range 500 {
		if w := request(h, "POST", "/lti/launch", "203.0.113.7:1"); w.Code == http.StatusTooManyRequests {
			t.Fatal("a zero launch limit refused a request")
		}
	}
	request(h, "GET", "/oauth/callback", "203.0.113.7:1")
	if w := request(h, "GET", "/oauth/callback", "203.0.113.7:1"); w.Code != http.StatusTooManyRequests {
		t.Errorf("the oauth limit is off too: %d", w.Code)
	}
}

// An X-Forwarded-For from a peer that is not a trusted proxy buys no fresh bucket; from a
// trusted proxy it names the client.
func TestRateLimitForwardedFor(t *testing.T) {
	h := limitedServer(webserver.RateLimits{Register: ratelimit.Limit{Rate: 1, Burst: 2},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	for i := range 3 {
		w := request(h, "GET", "/lti/register", "203.0.113.7:1", "X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
		if limited := w.Code == http.StatusTooManyRequests; limited != (i == 2) {
			t.Errorf("spoofed request %d: %d", i+1, w.Code)
		}
	}
	for i := range 3 {
		w := request(h, "GET", "/lti/register", "10.0.0.2:1", "X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
		if w.Code == http.StatusTooManyRequests {
			t.Errorf("client %d behind the trusted proxy refused", i)
		}
	}
}

func rateLimitedCount(t *testing.T, route string) float64 {
	t.Helper()
	return testmetrics.Value(t, "ltiop_rate_limited_total", map[string]string{"route": route})
}
