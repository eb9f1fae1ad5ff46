// Package ratelimit limits requests per client IP with token buckets, for the endpoints
// anyone can reach without a credential. The buckets live in one LRU of bounded size, so
// a flood of distinct addresses costs a fixed amount of memory: the least recently seen
// client is forgotten (its bucket starts full again when it returns).
package ratelimit

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DefaultMaxClients bounds the buckets kept across all route groups: some 150 bytes
// each with the map entry, so about 15 MB at most.
const DefaultMaxClients = 100_000

var limitedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ltiop_rate_limited_total",
	Help: "Requests refused with 429 by the per-client rate limits, by route pattern.",
}, []string{"route"})

func init() { metrics.Registry.MustRegister(limitedTotal) }

// Limit is a token bucket: Rate tokens a second up to Burst. A zero Rate or Burst turns
// the limit off.
type Limit struct {
	Rate  float64
	Burst int
}

// Off reports whether the limit lets everything through.
func (l Limit) Off() bool { return l.Rate <= 0 || l.Burst <= 0 }

// key is one client of one route group. netip.Addr is comparable, so a lookup allocates
// nothing.
type key struct {
	group uint32
	addr  netip.Addr
}

// bucket is one client's tokens, and its place in the LRU list (most recent at head).
type bucket struct {
	k          key
	tokens     float64
	last       int64 // unix nanoseconds of the last refill
	prev, next *bucket
}

// Limiter holds the buckets of every route group.
type Limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	max     int
	buckets map[key]*bucket
	head    *bucket // most recently used
	tail    *bucket // least recently used: evicted first
	groups  uint32
	trusted []netip.Prefix
}

// New returns a Limiter keeping at most maxClients buckets (DefaultMaxClients when not
// positive). now is the clock (time.Now when nil). The client address is read from
// X-Forwarded-For only when the socket peer is in trustedProxies.
func New(maxClients int, trustedProxies []netip.Prefix, now func() time.Time) *Limiter {
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, max: maxClients, buckets: make(map[key]*bucket), trusted: trustedProxies}
}

// Len is the number of buckets kept.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// Group is a set of routes sharing one limit and one bucket per client.
type Group struct {
	l     *Limiter
	id    uint32
	limit Limit
}

// Group returns a new route group with limit; its routes share each client's bucket.
func (l *Limiter) Group(limit Limit) *Group {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groups++
	return &Group{l: l, id: l.groups, limit: limit}
}

// Deny answers a refused request; retryAfter is whole seconds, at least 1.
type Deny func(w http.ResponseWriter, r *http.Request, retryAfter int)

// Middleware limits next per client address; over the limit it sets Retry-After, counts
// the refusal under the request's route pattern and lets deny write the answer. An off
// limit returns next as it is.
func (g *Group) Middleware(deny Deny) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if g.limit.Off() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ok, wait := g.Allow(g.l.ClientAddr(r))
			if ok {
				next.ServeHTTP(w, r)
				return
			}
			secs := int(math.Ceil(wait.Seconds()))
			if secs < 1 {
				secs = 1
			}
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			limitedTotal.WithLabelValues(r.Pattern).Inc()
			deny(w, r, secs)
		})
	}
}

// Allow takes a token from addr's bucket; when there is none it says how long until one
// is there.
func (g *Group) Allow(addr netip.Addr) (bool, time.Duration) {
	if g.limit.Off() {
		return true, 0
	}
	l := g.l
	now := l.now().UnixNano()
	k := key{g.id, addr}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[k]
	if b == nil {
		b = l.insert(k)
		b.tokens, b.last = float64(g.limit.Burst), now
	} else {
		l.toFront(b)
		if elapsed := now - b.last; elapsed > 0 {
			b.tokens = math.Min(float64(g.limit.Burst), b.tokens+float64(elapsed)*g.limit.Rate/1e9)
			b.last = now
		}
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / g.limit.Rate * 1e9)
}

// insert adds a bucket for k at the head, evicting the least recently used when full.
// The evicted bucket is reused, so a flood of new addresses allocates nothing more.
func (l *Limiter) insert(k key) *bucket {
	var b *bucket
	if len(l.buckets) >= l.max && l.tail != nil {
		b = l.tail
		l.unlink(b)
		delete(l.buckets, b.k)
		*b = bucket{}
	} else {
		b = &bucket{}
	}
	b.k = k
	l.buckets[k] = b
	l.pushFront(b)
	return b
}

func (l *Limiter) toFront(b *bucket) {
	if l.head == b {
		return
	}
	l.unlink(b)
	l.pushFront(b)
}

func (l *Limiter) pushFront(b *bucket) {
	b.prev, b.next = nil, l.head
	if l.head != nil {
		l.head.prev = b
	}
	l.head = b
	if l.tail == nil {
		l.tail = b
	}
}

func (l *Limiter) unlink(b *bucket) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		l.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.prev, b.next = nil, nil
}

// ClientAddr is the address a request is counted against: the socket peer, unless that
// peer is a trusted proxy; then the right-most X-Forwarded-For entry that is not itself
// a trusted proxy (entries left of it are whatever the client chose to send). IPv6
// clients are counted per /64, the block one subscriber usually holds.
func (l *Limiter) ClientAddr(r *http.Request) netip.Addr {
	addr := peer(r.RemoteAddr)
	if len(l.trusted) > 0 && l.isTrusted(addr) {
		addr = l.forwardedFor(r.Header.Values("X-Forwarded-For"), addr)
	}
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			addr = p.Addr()
		}
	}
	return addr
}

// forwardedFor walks the X-Forwarded-For entries from the right. It stops at the first
// untrusted address, or at an entry that is not an address (then the last good one,
// a trusted proxy, is the client as far as we can tell).
func (l *Limiter) forwardedFor(headers []string, addr netip.Addr) netip.Addr {
	for i := len(headers) - 1; i >= 0; i-- {
		h := headers[i]
		for h != "" {
			var entry string
			if j := strings.LastIndexByte(h, ','); j >= 0 {
				entry, h = h[j+1:], h[:j]
			} else {
				entry, h = h, ""
			}
			a, ok := forwardedAddr(strings.TrimSpace(entry))
			if !ok {
				return addr
			}
			addr = a.Unmap()
			if !l.isTrusted(addr) {
				return addr
			}
		}
	}
	return addr
}

// forwardedAddr reads one X-Forwarded-For entry: an address (198.51.100.7, 2001:db8::7),
// an IPv6 address in brackets ([2001:db8::7]), or either with the client's port
// (198.51.100.7:51234, [2001:db8::7]:51234), as some proxies write it.
func forwardedAddr(entry string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(entry); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(entry); err == nil {
		return ap.Addr(), true
	}
	if len(entry) > 2 && entry[0] == '[' && entry[len(entry)-1] == ']' {
		if a, err := netip.ParseAddr(entry[1 : len(entry)-1]); err == nil && a.Is6() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func (l *Limiter) isTrusted(a netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer parses RemoteAddr ("ip:port"); an unparsable one (never from net/http's server)
// counts as the zero address, one shared bucket.
func peer(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		a, _ := netip.ParseAddr(remote)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}
