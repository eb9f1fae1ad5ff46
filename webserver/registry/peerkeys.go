package registry

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver/lti"
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
)

// PeerKeys resolves the RSA public keys of the parties ltiop verifies: platforms (their
// id_tokens, in tool mode) and tools (their client assertions and deep-linking responses,
// in platform mode). Key sets (JWK_SET) are fetched and cached; JWK_KEY and RSA_KEY keys
// are parsed once per registration change.
type PeerKeys struct {
	client *http.Client
	now    func() time.Time

	mu   sync.Mutex
	sets map[string]*keySet // by key set URL
}

// NewPeerKeys returns a resolver using client for fetches (nil: a client with timeouts).
func NewPeerKeys(client *http.Client) *PeerKeys {
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	return &PeerKeys{client: client, now: time.Now, sets: map[string]*keySet{}}
}

type keySet struct {
	mu        sync.Mutex // one fetch at a time per key set (single flight)
	keys      map[string]*rsa.PublicKey
	expires   time.Time
	lastFetch time.Time
}

// PlatformKey returns the key of platform p with the given kid, as an lti.KeyFunc does:
// lti.ErrUnknownKey when p has no usable key with that kid, even after refetching its key
// set; any other error when the key set could not be obtained, an outage on the platform's
// side rather than a bad token (T-JWKS-03).
func (pk *PeerKeys) PlatformKey(ctx context.Context, p *Platform, kid string) (*rsa.PublicKey, error) {
	return pk.keyOf(ctx, p.ID, p.Spec.AuthConfig, p.staticKey, p.staticKID, p.staticKeyErr, kid)
}

// keyOf resolves kid for a registration whose key is ac: the static key parsed once per
// change (JWK_KEY, RSA_KEY) or a key of the fetched set (JWK_SET).
func (pk *PeerKeys) keyOf(ctx context.Context, id string, ac ltiv1.AuthConfig, static *rsa.PublicKey, staticKID string, staticErr error, kid string) (*rsa.PublicKey, error) {
	switch ac.Method {
	case ltiv1.AuthMethodRSAKey, ltiv1.AuthMethodJWKKey:
		if static == nil {
			return nil, fmt.Errorf("registration %s: %w", id, staticErr)
		}
		if staticKID != "" && staticKID != kid {
			return nil, lti.ErrUnknownKey
		}
		return static, nil
	case ltiv1.AuthMethodJWKSet:
		return pk.fromSet(ctx, ac.Key, kid)
	default:
		return nil, fmt.Errorf("registration %s: unsupported key method %q", id, ac.Method)
	}
}

func (pk *PeerKeys) fromSet(ctx context.Context, url, kid string) (*rsa.PublicKey, error) {
	pk.mu.Lock()
	set := pk.sets[url]
	if set == nil {
		if len(pk.sets) >= maxKeySets {
			pk.sets = map[string]*keySet{} // bounded: start over rather than grow without limit
		}
		set = &keySet{}
		pk.sets[url] = set
	}
	pk.mu.Unlock()

	set.mu.Lock()
	defer set.mu.Unlock()
	now := pk.now()
	key, found := set.keys[kid]
	fresh := now.Before(set.expires)
	switch {
	case found && fresh:
		return key, nil
	case fresh && now.Sub(set.lastFetch) < refetchInterval:
		return nil, lti.ErrUnknownKey // refetched a moment ago: the kid really is unknown
	}
	if err := pk.fetch(ctx, url, set, now); err != nil {
		if found {
			return key, nil // the platform is down but this key was good: keep launches working
		}
		return nil, err
	}
	if key, found = set.keys[kid]; found {
		return key, nil
	}
	return nil, lti.ErrUnknownKey
}

// fetch loads the key set; the caller holds set.mu.
func (pk *PeerKeys) fetch(ctx context.Context, url string, set *keySet, now time.Time) error {
	set.lastFetch = now
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("key set %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	req.Header.Set("User-Agent", version.UserAgent())
	res, err := pk.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching key set %s: %w", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching key set %s: HTTP %d", url, res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxKeySetBytes+1))
	if err != nil {
		return fmt.Errorf("reading key set %s: %w", url, err)
	}
	if len(body) > maxKeySetBytes {
		return fmt.Errorf("key set %s is larger than %d bytes", url, maxKeySetBytes)
	}
	parsed, err := ParseKeySet(body)
	if err != nil {
		return fmt.Errorf("key set %s: %w", url, err)
	}
	set.keys = parsed
	set.expires = now.Add(cacheTTL(res.Header.Get("Cache-Control")))
	return nil
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
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
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
