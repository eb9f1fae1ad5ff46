package toolmode

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// ltikCacheSize bounds the opened ltiks a replica keeps (each holds a launch's claims).
const ltikCacheSize = 1024

// ltikCache remembers recently opened ltiks: an integrator calls several endpoints per
// launch, and opening (decrypt, inflate, parse) costs more than the rest of a request.
// Keyed by the SHA-256 of the whole token, so only the exact same ltik hits; entries
// expire with the ltik. Eviction is first-in first-out.
type ltikCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]cachedLaunch
	order   [][sha256.Size]byte // ring of keys, oldest at next
	next    int
}

type cachedLaunch struct {
	launch  *Launch
	claims  *lti.Claims
	expires time.Time
	keyID   string // the sealing key that opened the ltik
}

func newLtikCache() *ltikCache {
	return &ltikCache{entries: make(map[[sha256.Size]byte]cachedLaunch, ltikCacheSize),
		order: make([][sha256.Size]byte, 0, ltikCacheSize)}
}

// get returns the launch of ltik if it was opened before, has not expired at now, and the
// key that opened it is still held (holds): retiring or removing a sealing key revokes its
// ltiks at once, cached or not.
func (c *ltikCache) get(ltik string, now time.Time, holds func(kid string) bool) (*Launch, *lti.Claims, bool) {
	k := sha256.Sum256([]byte(ltik))
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) || !holds(e.keyID) {
		return nil, nil, false
	}
	return e.launch, e.claims, true
}

func (c *ltikCache) put(ltik string, l *Launch, claims *lti.Claims, expires time.Time, keyID string) {
	k := sha256.Sum256([]byte(ltik))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	if len(c.order) < ltikCacheSize {
		c.order = append(c.order, k)
	} else {
		delete(c.entries, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % ltikCacheSize
	}
	c.entries[k] = cachedLaunch{launch: l, claims: claims, expires: expires, keyID: keyID}
}
