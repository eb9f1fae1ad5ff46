package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

// clock is a settable time source: the tests move it instead of sleeping.
type clock struct{ t time.Time }

func (c *clock) now() time.Time             { return c.t }
func (c *clock) add(d time.Duration)        { c.t = c.t.Add(d) }
func newClock() *clock                      { return &clock{t: time.Unix(1_700_000_000, 0)} }
func addr(s string) netip.Addr              { return netip.MustParseAddr(s) }
func ok(http.ResponseWriter, *http.Request) {}

func deny(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusTooManyRequests) }

func serve(h http.Handler, remote string, xff ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/lti/login", nil)
	r.RemoteAddr = remote
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A burst from one address is served, the next request is refused with Retry-After,
// another address is unaffected, and tokens come back with time.
func TestBurstThenRefill(t *testing.T) {
	c := newClock()
	l := ratelimit.New(0, nil, c.now)
	h := l.Group(ratelimit.Limit{Rate: 2, Burst: 5}).Middleware(deny)(http.HandlerFunc(ok))
	for i := range 5 {
		if w := serve(h, "203.0.113.7:1000"); w.Code != http.StatusOK {
			t.Fatalf("request %d of the burst: %d", i+1, w.Code)
		}
	}
	w := serve(h, "203.0.113.7:1001")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("after the burst: %d Retry-After %q, want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	if w := serve(h, "198.51.100.9:1000"); w.Code != http.StatusOK {
		t.Errorf("another client: %d, want 200", w.Code)
	}
	c.add(499 * time.Millisecond) // 0.998 of a token
	if w := serve(h, "203.0.113.7:1000"); w.Code != http.StatusTooManyRequests {
		t.Errorf("before a token is back: %d", w.Code)
	}
	c.add(2 * time.Millisecond)
	if w := serve(h, "203.0.113.7:1000"); w.Code != http.StatusOK {
		t.Errorf("once a token is back: %d", w.Code)
	}
	c.add(time.Hour) // refills up to the burst, not beyond
	for i := range 5 {
		if w := serve(h, "203.0.113.7:1000"); w.Code != http.StatusOK {
			t.Fatalf("request %d after an hour: %d", i+1, w.Code)
		}
	}
	if w := serve(h, "203.0.113.7:1000"); w.Code != http.StatusTooManyRequests {
		t.Errorf("the bucket grew beyond its burst")
	}
}

// Retry-After is the wait for one token, rounded up to whole seconds.
func TestRetryAfterRoundsUp(t *testing.T) {
	c := newClock()
	l := ratelimit.New(0, nil, c.now)
	g := l.Group(ratelimit.Limit{Rate: 0.1, Burst: 1})
	h := g.Middleware(deny)(http.HandlerFunc(ok))
	serve(h, "192.0.2.1:1")
	c.add(500 * time.Millisecond)
	if got := serve(h, "192.0.2.1:1").Header().Get("Retry-After"); got != "10" {
		t.Errorf("Retry-After = %q, want 10 (9.5 s rounded up)", got)
	}
}

// Zero rate or zero burst turns the limit off: the handler is not even wrapped.
func TestZeroDisables(t *testing.T) {
	l := ratelimit.New(0, nil, nil)
	for _, lim := range []ratelimit.Limit{{}, {Rate: 0, Burst: 10}, {Rate: 10, Burst: 0}} {
		h := l.Group(lim).Middleware(deny)(http.HandlerFunc(ok))
		for range 1000 {
			if w := serve(h, "192.0.2.1:1"); w.Code != http.StatusOK {
				t.Fatalf("%+v: %d", lim, w.Code)
			}
		}
	}
	if l.Len() != 0 {
		t.Errorf("an off limit kept %d buckets", l.Len())
	}
}

// Groups have their own buckets: exhausting one leaves the other alone.
func TestGroupsAreSeparate(t *testing.T) {
	l := ratelimit.New(0, nil, newClock().now)
	a := l.Group(ratelimit.Limit{Rate: 1, Burst: 1}).Middleware(deny)(http.HandlerFunc(ok))
	b := l.Group(ratelimit.Limit{Rate: 1, Burst: 1}).Middleware(deny)(http.HandlerFunc(ok))
	serve(a, "192.0.2.1:1")
	if w := serve(a, "192.0.2.1:1"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("group a not limited")
	}
	if w := serve(b, "192.0.2.1:1"); w.Code != http.StatusOK {
		t.Errorf("group b limited by group a's use: %d", w.Code)
	}
}

// A flood of distinct addresses keeps at most maxClients buckets, evicting the least
// recently used: a client seen recently keeps its (empty) bucket.
func TestFloodOfAddressesIsBounded(t *testing.T) {
	const maxBuckets = 1000
	l := ratelimit.New(maxBuckets, nil, newClock().now)
	g := l.Group(ratelimit.Limit{Rate: 1, Burst: 1})
	victim := addr("198.51.100.1")
	g.Allow(victim)
	for i := range 50 * maxBuckets {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		g.Allow(a)
		if i%100 == 0 {
			g.Allow(victim) // keep it recent
		}
		if n := l.Len(); n > maxBuckets {
			t.Fatalf("after %d addresses: %d buckets, bound %d", i+1, n, maxBuckets)
		}
	}
	if l.Len() != maxBuckets {
		t.Errorf("%d buckets, want the bound %d", l.Len(), maxBuckets)
	}
	if allowed, _ := g.Allow(victim); allowed {
		t.Errorf("the recently used client's bucket was evicted (it is full again)")
	}
	if allowed, _ := g.Allow(addr("10.0.0.1")); !allowed {
		t.Errorf("the least recently used client's bucket was kept")
	}
}

// The default bound holds for a flood of 150,000 addresses.
func TestDefaultBound(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 150,000 addresses")
	}
	l := ratelimit.New(0, nil, newClock().now)
	g := l.Group(ratelimit.Limit{Rate: 1, Burst: 1})
	for i := range 150_000 {
		g.Allow(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	if l.Len() != ratelimit.DefaultMaxClients {
		t.Errorf("%d buckets, want %d", l.Len(), ratelimit.DefaultMaxClients)
	}
}

// X-Forwarded-For from a peer that is not a trusted proxy is ignored: a client cannot
// pick a fresh address per request.
func TestSpoofedForwardedForIgnored(t *testing.T) {
	l := ratelimit.New(0, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, newClock().now)
	h := l.Group(ratelimit.Limit{Rate: 1, Burst: 3}).Middleware(deny)(http.HandlerFunc(ok))
	for i := range 3 {
		serve(h, "203.0.113.7:1000", "198.51.100."+strconv.Itoa(i))
	}
	if w := serve(h, "203.0.113.7:1000", "198.51.100.99"); w.Code != http.StatusTooManyRequests {
		t.Errorf("a spoofed X-Forwarded-For from an untrusted peer bought a fresh bucket: %d", w.Code)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "203.0.113.7:1000"
	r.Header.Set("X-Forwarded-For", "1.2.3.4")
	if got := l.ClientAddr(r); got != addr("203.0.113.7") {
		t.Errorf("client = %s, want the socket peer", got)
	}
}

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	l := ratelimit.New(0, trusted, nil)
	for _, tc := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"192.0.2.1:5", nil, "192.0.2.1"},
		{"10.1.1.1:5", nil, "10.1.1.1"},                                             // a trusted peer with no header is the client
		{"10.1.1.1:5", []string{"198.51.100.2"}, "198.51.100.2"},                    // one proxy
		{"10.1.1.1:5", []string{"6.6.6.6, 198.51.100.2, 10.2.2.2"}, "198.51.100.2"}, // right-most untrusted; the client's own claim is left of it
		{"10.1.1.1:5", []string{"6.6.6.6", "198.51.100.2"}, "198.51.100.2"},         // several header lines
		{"10.1.1.1:5", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3"},                  // all trusted: the left-most
		{"10.1.1.1:5", []string{"6.6.6.6, garbage"}, "10.1.1.1"},                    // unparsable: stop at the last good one
		{"[::ffff:192.0.2.1]:5", nil, "192.0.2.1"},                                  // IPv4-mapped
		{"[2001:db8:1:2:3:4:5:6]:5", nil, "2001:db8:1:2::"},                         // IPv6 per /64
		{"[fd00::1]:5", []string{"2001:db8:9:9::1"}, "2001:db8:9:9::"},
		{"10.1.1.1:5", []string{"198.51.100.2:51234"}, "198.51.100.2"},               // with the client's port
		{"10.1.1.1:5", []string{"[2001:db8:9:9::1]:51234"}, "2001:db8:9:9::"},        // IPv6 with a port
		{"10.1.1.1:5", []string{"[2001:db8:9:9::1]"}, "2001:db8:9:9::"},              // IPv6 in brackets
		{"10.1.1.1:5", []string{"198.51.100.2:51234, 10.2.2.2:443"}, "198.51.100.2"}, // ports on every hop
		{"10.1.1.1:5", []string{"6.6.6.6, [198.51.100.2]"}, "10.1.1.1"},              // brackets around IPv4: not a form proxies write
		{"10.1.1.1:5", []string{"6.6.6.6, 198.51.100.2:99999"}, "10.1.1.1"},          // a port out of range: not an entry
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := l.ClientAddr(r); got != addr(tc.want) {
			t.Errorf("%s %q: client %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
}

// BenchmarkAllowed is the overhead on the allowed path (target: well under 1 µs).
func BenchmarkAllowed(b *testing.B) {
	l := ratelimit.New(0, nil, nil)
	h := l.Group(ratelimit.Limit{Rate: 1e9, Burst: 1 << 30}).Middleware(deny)(http.HandlerFunc(ok))
	r := httptest.NewRequest("POST", "/lti/launch", nil)
	r.RemoteAddr = "203.0.113.7:51234"
	w := httptest.NewRecorder()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.ServeHTTP(w, r)
	}
}

// BenchmarkAllowedManyClients spreads the requests over 10,000 addresses behind a
// trusted proxy, the worst case of the allowed path.
func BenchmarkAllowedManyClients(b *testing.B) {
	l := ratelimit.New(0, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, nil)
	h := l.Group(ratelimit.Limit{Rate: 1e9, Burst: 1 << 30}).Middleware(deny)(http.HandlerFunc(ok))
	reqs := make([]*http.Request, 10_000)
	for i := range reqs {
		r := httptest.NewRequest("POST", "/lti/launch", nil)
		r.RemoteAddr = "10.0.0.1:443"
		r.Header.Set("X-Forwarded-For", netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}).String())
		reqs[i] = r
	}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h.ServeHTTP(w, reqs[i%len(reqs)])
	}
}

// The attack of issue #28 item 4: behind a proxy that writes X-Forwarded-For entries with
// the client's port (198.51.100.7:51234, [2001:db8::7]:51234), one client spends its
// bucket and every other client behind that proxy must still be served: each entry is
// parsed with its port, not left to fall back to the proxy's shared bucket.
func TestForwardedForWithPortsDoesNotLetOneClientLockOutAll(t *testing.T) {
	for _, tc := range []struct{ name, attacker, victim string }{
		{"IPv4 with a port", "198.51.100.7:51234", "198.51.100.8:40000"},
		{"IPv6 with a port", "[2001:db8::7]:51234", "[2001:db8:1::8]:40000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ratelimit.New(0, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, newClock().now)
			h := l.Group(ratelimit.Limit{Rate: 0.001, Burst: 3}).Middleware(deny)(http.HandlerFunc(ok))
			for range 10 {
				serve(h, "10.0.0.1:443", tc.attacker)
			}
			if w := serve(h, "10.0.0.1:443", tc.attacker); w.Code != http.StatusTooManyRequests {
				t.Fatalf("the attacker is not limited: %d", w.Code)
			}
			if w := serve(h, "10.0.0.1:443", tc.victim); w.Code != http.StatusOK {
				t.Errorf("another client behind the same proxy: %d, want 200 (the attacker locked out everyone)", w.Code)
			}
		})
	}
}
