package toolsim

import (
	"context"
	"errors"
	"fmt"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

var errUnknownKID = errors.New("unknown kid")

// platformKey returns the platform's public key named kid from the JWKS at
// cfg.PlatformJWKSURL. The key set is cached; a kid not in the cache makes the tool fetch
// the set once more before it gives up (T-TOK-08, T-JWKS-02). The key must be an RSA
// signing key for RS256 (T-TOK-09).
func (t *Tool) platformKey(ctx context.Context, cfg Config, kid string) (jwk.Key, error) {
	if cfg.PlatformJWKSURL == "" {
		return nil, errors.New("no platform JWKS URL configured")
	}
	t.keyMu.Lock()
	defer t.keyMu.Unlock()
	var set jwk.Set
	if t.platformKU == cfg.PlatformJWKSURL {
		set = t.platformKS
	}
	k, ok := lookupKID(set, kid)
	if !ok {
		fetched, err := jwk.Fetch(ctx, cfg.PlatformJWKSURL, jwk.WithHTTPClient(t.httpClient(cfg)))
		if err != nil {
			return nil, err
		}
		t.platformKS, t.platformKU = fetched, cfg.PlatformJWKSURL
		if k, ok = lookupKID(fetched, kid); !ok {
			return nil, fmt.Errorf("%w: %q is not in the platform JWKS", errUnknownKID, trim(kid))
		}
	}
	if kty := k.KeyType().String(); kty != "RSA" {
		return nil, fmt.Errorf("%w: key %q is %s, not RSA", errUnknownKID, trim(kid), kty)
	}
	if alg, ok := k.Algorithm(); ok && alg.String() != "RS256" {
		return nil, fmt.Errorf("%w: key %q is for %s, not RS256", errUnknownKID, trim(kid), alg.String())
	}
	if use, ok := k.KeyUsage(); ok && use != "sig" {
		return nil, fmt.Errorf("%w: key %q has use %q, not sig", errUnknownKID, trim(kid), use)
	}
	return k, nil
}

func lookupKID(set jwk.Set, kid string) (jwk.Key, bool) {
	if set == nil {
		return nil, false
	}
	return set.LookupKeyID(kid)
}
