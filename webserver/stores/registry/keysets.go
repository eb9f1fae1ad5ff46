package registry

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ltiop/ltiop/webserver/stores/precomputed"
)

// KeySet returns the key set of the registration named id (its metadata.name, or the
// KeySetAlias dynamic registration gave its LMS): its own keys only, built when its key
// changed. found is false when no registration has that name; set is nil while the
// controller has not made the registration's key yet.
func (r *Registry) KeySet(id string) (set *precomputed.Body, found bool) {
	r.mu.RLock()
	p := r.byID[id]
	if p == nil {
		p = r.byAlias[id]
	}
	r.mu.RUnlock()
	if p == nil {
		return nil, false
	}
	if p.Key == nil {
		return nil, true
	}
	return p.Key.set, true
}

// JWKS returns /lti/keys, the key set of every listed registration, as last built. fresh
// is false while a change waits for its rebuild (well under a second at 10,000
// registrations): a request is never held up by one, it gets the previous set instead.
func (r *Registry) JWKS() (set *precomputed.Body, fresh bool) {
	b := r.all.current.Load()
	return b.body, b.version == r.all.version.Load()
}

// listed says whether a registration's key belongs in /lti/keys: only active ones. An
// inactive registration signs nothing an LMS must verify, and never-activated dynamic
// registrations must not grow the set.
func listed(p *Platform) bool { return p.Key != nil && p.Spec.IsActive() }

// maxRebuildPause bounds the pause between two rebuilds of /lti/keys.
const maxRebuildPause = 2 * time.Second

// allKeys is /lti/keys. Every registry change bumps version and makes sure one builder
// goroutine runs; the builder copies the key pointers under the read lock, then sorts,
// joins, hashes and compresses outside it and publishes the result atomically. Between
// builds it pauses twenty times the last build's cost, so a burst of changes (10,000
// registrations being created) costs at most about 5% of a core, not one rebuild each.
type allKeys struct {
	version  atomic.Uint64 // bumped under the registry's write lock
	current  atomic.Pointer[builtKeys]
	building atomic.Bool // a builder goroutine runs

	// Owned by the running builder (the building flag orders them between builders).
	lastEnd  time.Time
	lastCost time.Duration
}

type builtKeys struct {
	body    *precomputed.Body
	version uint64 // the registry version it was built from
}

func (a *allKeys) init() {
	a.current.Store(&builtKeys{body: precomputed.New(keySetJSON(nil))})
}

// changed records a change; the caller holds the registry's write lock.
func (a *allKeys) changed(r *Registry) {
	a.version.Add(1)
	if a.building.CompareAndSwap(false, true) {
		go a.build(r)
	}
}

func (a *allKeys) build(r *Registry) {
	for {
		if wait := time.Until(a.lastEnd.Add(min(20*a.lastCost, maxRebuildPause))); wait > 0 {
			time.Sleep(wait) // the pause that bounds the builder's share of the CPU
		}
		start := time.Now()
		v := a.rebuild(r)
		a.lastEnd = time.Now()
		a.lastCost = a.lastEnd.Sub(start)

		a.building.Store(false)
		// A change after the copy found the flag set and left the rebuild to this builder.
		if a.version.Load() == v || !a.building.CompareAndSwap(false, true) {
			return
		}
	}
}

// rebuild builds and publishes /lti/keys from the registry as it is, and returns the
// version built.
func (a *allKeys) rebuild(r *Registry) uint64 {
	r.mu.RLock()
	v := a.version.Load() // stable: changes bump it under the write lock
	ks := make([]*ToolKey, 0, len(r.byID))
	for _, p := range r.byID {
		if listed(p) {
			ks = append(ks, p.Key)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(ks, func(x, y *ToolKey) int { return strings.Compare(x.KID, y.KID) })
	pieces := make([][]byte, len(ks))
	for i, k := range ks {
		pieces[i] = k.jwk()
	}
	a.current.Store(&builtKeys{body: precomputed.New(keySetJSON(pieces)), version: v})
	return v
}

// keySetJSON joins marshalled JWKs into a JWKS document, {"keys":[…]}.
func keySetJSON(jwks [][]byte) []byte {
	n := len(`{"keys":[]}`) + len(jwks)
	for _, k := range jwks {
		n += len(k)
	}
	out := make([]byte, 0, n)
	out = append(out, `{"keys":[`...)
	for i, k := range jwks {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, k...)
	}
	return append(out, `]}`...)
}
