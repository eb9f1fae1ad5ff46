package registry

import (
	"container/list"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// Key-set cache bounds: max-age is honoured within them (T-JWKS-01).
const (
	defaultKeySetTTL = 5 * time.Minute
	minKeySetTTL     = 30 * time.Second
	maxKeySetTTL     = 24 * time.Hour
	// An unknown kid triggers at most one refetch per key set in this interval (T-JWKS-02).
	refetchInterval = 10 * time.Second
	maxKeySetBytes  = 1 << 20
	fetchTimeout    = 5 * time.Second
	maxKeySets      = 10000
	// Past maxKeySets one set is evicted: the first expired one among this many least
	// recently used, else the least recently used.
	evictionScan = 1024
	// A failed fetch is remembered for failureTTL plus up to failureJitter, so a platform
	// that is down costs one fetch per set and replica every 10–30 s, not one per launch,
	// and replicas do not retry in lockstep.
	failureTTL    = 10 * time.Second
	failureJitter = 20 * time.Second
	// The last good keys of a set outlive its max-age by this much while refetches fail:
	// a platform's short outage must not stop its launches, a long one must not keep a key
	// it may have withdrawn in use forever.
	defaultStaleIfError = time.Hour
	// Lookups waiting on one set's fetch beyond this answer the outage at once, so a
	// stuck platform cannot pile up the replica's goroutines.
	maxKeySetWaiters = 64
)

// PeerKeys resolves the RSA public keys of the parties ltiop verifies: platforms (their
// id_tokens, in tool mode) and tools (their client assertions and deep-linking responses,
// in platform mode). Key sets (JWK_SET) are fetched and cached; JWK_KEY and RSA_KEY keys
// are parsed once per registration change.
type PeerKeys struct {
	clients      outbound.Clients
	now          func() time.Time
	staleIfError time.Duration

	mu      sync.Mutex
	sets    map[setKey]*keySet
	lru     *list.List // of *keySet, the most recently used in front
	maxSets int
}

// setKey names a cached key set: its URL, and the source whose policy fetched it, so that
// a registration of one source is never answered from a fetch another's policy allowed.
type setKey struct {
	source outbound.Source
	url    string
}

// NewPeerKeys returns a resolver fetching the key sets of the operator's registrations
// with client, one from outbound.NewClient, so that a key set URL (or a redirect) cannot
// reach inside the network; nil: the production policy (https, public addresses only).
// Those of dynamic registrations get the production policy: see NewPeerKeysBySource.
func NewPeerKeys(client *http.Client) *PeerKeys {
	return NewPeerKeysBySource(outbound.Clients{Operator: client})
}

// NewPeerKeysBySource returns a resolver fetching each registration's key set with the
// client of its Source. A source without a client gets the production policy.
func NewPeerKeysBySource(clients outbound.Clients) *PeerKeys {
	return &PeerKeys{clients: clients, now: time.Now, staleIfError: defaultStaleIfError, sets: map[setKey]*keySet{}, lru: list.New(), maxSets: maxKeySets}
}

// WithClock makes pk read the time from now (tests, simulations) and returns pk; call it
// before pk is used.
func (pk *PeerKeys) WithClock(now func() time.Time) *PeerKeys {
	pk.now = now
	return pk
}

type keySet struct {
	key  setKey
	elem *list.Element // in PeerKeys.lru; guarded by PeerKeys.mu

	mu          sync.Mutex // guards the fields below; never held during a fetch
	keys        map[string]*rsa.PublicKey
	fetched     time.Time // of keys, for the stale-if-error bound
	expires     time.Time
	lastFetch   time.Time // last attempt, for the unknown-kid rate limit (T-JWKS-02)
	failedUntil time.Time // a failed fetch is remembered until then
	lastErr     error
	flight      *fetchCall // the fetch in progress (single flight), nil if none
	waiters     int
}

// fetchCall is one fetch of a key set; done is closed once its result is in the keySet.
type fetchCall struct {
	done chan struct{}
	err  error
}

// PlatformKey returns the key of platform p with the given kid, as an lti.KeyFunc does:
// lti.ErrUnknownKey when p has no usable key with that kid, even after refetching its key
// set; any other error when the key set could not be obtained, an outage on the platform's
// side rather than a bad token (T-JWKS-03).
func (pk *PeerKeys) PlatformKey(ctx context.Context, p *Platform, kid string) (*rsa.PublicKey, error) {
	return pk.keyOf(ctx, p.Source, p.ID, p.Spec.AuthConfig, &p.static, kid)
}

// keyOf resolves kid for a registration of source whose key is ac: the static key parsed
// once per change (JWK_KEY, RSA_KEY) or a key of the fetched set (JWK_SET).
func (pk *PeerKeys) keyOf(ctx context.Context, source outbound.Source, id string, ac ltiv1.AuthConfig, static *staticKey, kid string) (*rsa.PublicKey, error) {
	switch ac.Method {
	case ltiv1.AuthMethodRSAKey, ltiv1.AuthMethodJWKKey:
		if static.key == nil {
			return nil, fmt.Errorf("registration %s: %w", id, static.err)
		}
		if static.kid != "" && static.kid != kid {
			return nil, lti.ErrUnknownKey
		}
		return static.key, nil
	case ltiv1.AuthMethodJWKSet:
		return pk.fromSet(ctx, setKey{source: source, url: ac.Key}, kid)
	default:
		return nil, fmt.Errorf("registration %s: unsupported key method %q", id, ac.Method)
	}
}

func (pk *PeerKeys) fromSet(ctx context.Context, sk setKey, kid string) (*rsa.PublicKey, error) {
	url := sk.url
	pk.mu.Lock()
	set := pk.sets[sk]
	if set == nil {
		if len(pk.sets) >= pk.maxSets {
			pk.evictOne()
		}
		set = &keySet{key: sk}
		set.elem = pk.lru.PushFront(set)
		pk.sets[sk] = set
	} else {
		pk.lru.MoveToFront(set.elem)
	}
	pk.mu.Unlock()

	set.mu.Lock()
	now := pk.now()
	key, found := set.keys[kid]
	fresh := now.Before(set.expires)
	switch {
	case found && fresh:
		set.mu.Unlock()
		return key, nil
	case now.Before(set.failedUntil):
		// The last fetch failed a moment ago: answer from what is known, without fetching.
		key, err := pk.stale(set, kid, now, set.lastErr)
		set.mu.Unlock()
		return key, err
	case fresh && now.Sub(set.lastFetch) < refetchInterval:
		set.mu.Unlock()
		return nil, lti.ErrUnknownKey // refetched a moment ago: the kid really is unknown
	}
	call := set.flight
	if call == nil {
		call = &fetchCall{done: make(chan struct{})}
		set.flight = call
		set.lastFetch = now
		// Detached from the caller: its leaving must not cancel the fetch the others
		// wait on; fetch bounds it with its own timeout.
		go pk.runFetch(context.WithoutCancel(ctx), set, call)
	} else if set.waiters >= maxKeySetWaiters {
		key, err := pk.stale(set, kid, now, fmt.Errorf("key set %s: too many lookups waiting on its fetch", url))
		set.mu.Unlock()
		return key, err
	}
	set.waiters++
	set.mu.Unlock()

	select {
	case <-call.done:
	case <-ctx.Done():
		set.mu.Lock()
		set.waiters--
		set.mu.Unlock()
		// An outage from this request's point of view, never an unknown key (T-JWKS-03).
		return nil, fmt.Errorf("waiting for key set %s: %w", url, ctx.Err())
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	set.waiters--
	if call.err != nil {
		return pk.stale(set, kid, pk.now(), call.err)
	}
	if key, found = set.keys[kid]; found {
		return key, nil
	}
	return nil, lti.ErrUnknownKey
}

// evictOne makes room for one set: bounded, and never by dropping the whole cache, which
// would cost one fetch per set again (issue #28 §6). The first expired set among the
// least recently used goes, else the least recently used. The caller holds pk.mu.
func (pk *PeerKeys) evictOne() {
	victim := pk.lru.Back()
	now := pk.now()
	for e, n := victim, 0; e != nil && n < evictionScan; e, n = e.Prev(), n+1 {
		if e.Value.(*keySet).expired(now) {
			victim = e
			break
		}
	}
	if victim != nil {
		delete(pk.sets, pk.lru.Remove(victim).(*keySet).key)
	}
}

// expired tells a set whose keys are past their max-age, with no failure to remember
// and no fetch under way: keeping it saves nothing.
func (s *keySet) expired(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flight == nil && !now.Before(s.expires) && !now.Before(s.failedUntil)
}

// stale answers kid from the last good keys when the key set cannot be obtained now (err):
// the key while they are younger than the stale-if-error bound, else err, an outage and
// never an unknown key (T-JWKS-03). The caller holds set.mu.
func (pk *PeerKeys) stale(set *keySet, kid string, now time.Time, err error) (*rsa.PublicKey, error) {
	if key, found := set.keys[kid]; found && now.Sub(set.fetched) < pk.staleIfError {
		return key, nil // the platform is down but this key was good: keep launches working
	}
	return nil, err
}

// runFetch performs call and records its result in set.
func (pk *PeerKeys) runFetch(ctx context.Context, set *keySet, call *fetchCall) {
	keys, ttl, err := pk.fetch(ctx, set.key.source, set.key.url)
	set.mu.Lock()
	now := pk.now()
	if err != nil {
		set.failedUntil = now.Add(failureTTL + rand.N(failureJitter)) //nolint:gosec // G404: retry jitter, not a secret
		set.lastErr = err
	} else {
		set.keys, set.fetched, set.expires = keys, now, now.Add(ttl)
		set.failedUntil, set.lastErr = time.Time{}, nil
	}
	call.err = err
	set.flight = nil
	set.mu.Unlock()
	close(call.done)
}

// StatusError is a key set URL's answer other than 200.
type StatusError struct{ Status int }

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d", e.Status) }

// ErrNotKeySet is the error of an answer that is not a JSON Web Key Set (errors.Is).
var ErrNotKeySet = errors.New("not a JSON Web Key Set")

// FetchKeySet fetches the key set at url, of a registration of source, now, as a launch
// would but without the cache (neither read nor filled), and returns how many usable
// signing keys it holds: the registration check (POST /api/platforms/{id}/check).
func (pk *PeerKeys) FetchKeySet(ctx context.Context, source outbound.Source, url string) (int, error) {
	keys, _, err := pk.fetch(ctx, source, url)
	return len(keys), err
}

// fetch loads a key set and its cache lifetime, with the client of source's policy.
func (pk *PeerKeys) fetch(ctx context.Context, source outbound.Source, url string) (map[string]*rsa.PublicKey, time.Duration, error) {
	ctx, cancel := context.WithTimeout(outbound.WithTarget(ctx, outbound.TargetJWKS), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("key set %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	req.Header.Set("User-Agent", version.UserAgent())
	res, err := pk.clients.For(source).Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("fetching key set %s: %w", outbound.RedactURL(url), outbound.Redact(err))
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("fetching key set %s: %w", url, &StatusError{Status: res.StatusCode})
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxKeySetBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("reading key set %s: %w", url, err)
	}
	if len(body) > maxKeySetBytes {
		return nil, 0, fmt.Errorf("key set %s is larger than %d bytes", url, maxKeySetBytes)
	}
	parsed, err := ParseKeySet(body)
	if err != nil {
		return nil, 0, fmt.Errorf("key set %s: %w", url, err)
	}
	return parsed, cacheTTL(res.Header.Get("Cache-Control")), nil
}

// ParseKeySet returns the usable signing keys of a JWKS by kid (T-TOK-09): RSA keys of at
// least 2048 bits, with alg RS256 or none (D2L omits it, T-QUIRK-07), use sig or none.
// Other keys are skipped, not errors: a set may hold encryption or EC keys too.
func ParseKeySet(data []byte) (map[string]*rsa.PublicKey, error) {
	// Keys are parsed one by one: one key jwx refuses (a 1024-bit leftover, an unknown
	// type) must not take the platform's other keys down with it.
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotKeySet, err)
	}
	out := make(map[string]*rsa.PublicKey, len(set.Keys))
	for _, raw := range set.Keys {
		k, err := jwk.ParseKey(raw)
		if err != nil {
			continue
		}
		kid, ok := k.KeyID()
		if !ok || kid == "" || k.KeyType().String() != "RSA" {
			continue
		}
		if alg, ok := k.Algorithm(); ok && alg.String() != "RS256" {
			continue
		}
		if use, ok := k.KeyUsage(); ok && use != "sig" {
			continue
		}
		var pub rsa.PublicKey
		if err := jwk.Export(k, &pub); err != nil || pub.N.BitLen() < keys.Bits {
			continue
		}
		out[kid] = &pub
	}
	return out, nil
}

// cacheTTL reads max-age from Cache-Control, bounded.
func cacheTTL(cacheControl string) time.Duration {
	ttl := defaultKeySetTTL
	for _, d := range strings.Split(cacheControl, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(name) {
		case "no-store", "no-cache":
			return minKeySetTTL
		case "max-age":
			if n, err := strconv.Atoi(strings.Trim(value, `"`)); err == nil {
				ttl = time.Duration(n) * time.Second
			}
		}
	}
	return min(max(ttl, minKeySetTTL), maxKeySetTTL)
}
