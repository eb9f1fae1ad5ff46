package platformmode

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"github.com/ltiop/ltiop/api/ltiwire"
	"strings"
	"sync"
	"time"
)

// A tool calls the services with the same access token for up to an hour (a roster sync
// reads page after page), and checking it — an RSA signature and a JSON decode — was a
// sixth of the server CPU of a roster page (BenchmarkRosterPage100). verifiedTokens
// remembers, per replica, the claims of access tokens it verified, keyed by the token's
// SHA-256, until the token expires.
//
// Only a token that verified (signed by our key, typ at+jwt, our issuer and audience) gets
// an entry, and at most maxVerifiedTokens are kept: nothing unauthenticated adds state, and
// what a credential adds is bounded. An entry stops counting as soon as the key that
// signed the token is no longer held (the signer forgets a retired key), as without the
// cache. What the call is then allowed to do is checked on every call as before (expiry,
// the tool active and ready with the token's client id, the grant, the scopes).

// maxVerifiedTokens bounds the cache: a few hundred bytes an entry.
const maxVerifiedTokens = 4096

type verifiedToken struct {
	claims accessTokenClaims
	kid    string // the key that signed it
}

type verifiedTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verifiedToken
}

// accessToken returns the claims of token when it is an access token this platform
// issued (not checking its expiry, which the caller answers with its own code).
func (p *Platform) accessToken(token string, now time.Time) (*accessTokenClaims, bool) {
	key := sha256.Sum256([]byte(token))
	if v, ok := p.verified.get(key, now); ok && p.signer.PublicKey(v.kid) != nil {
		return &v.claims, true
	}
	raw, err := p.signer.Verify(token, ltiwire.TypeAccessToken)
	var c accessTokenClaims
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Issuer != p.opts.Issuer || c.Audience != p.opts.Issuer {
		return nil, false
	}
	if kid := headerKID(token); kid != "" && now.Before(time.Unix(c.ExpiresAt, 0)) {
		p.verified.put(key, verifiedToken{claims: c, kid: kid}, now)
	}
	return &c, true
}

func (v *verifiedTokens) get(key [sha256.Size]byte, now time.Time) (verifiedToken, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.m[key]
	if ok && !now.Before(time.Unix(e.claims.ExpiresAt, 0)) {
		delete(v.m, key)
		return e, false
	}
	return e, ok
}

func (v *verifiedTokens) put(key [sha256.Size]byte, e verifiedToken, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = make(map[[sha256.Size]byte]verifiedToken)
	}
	if len(v.m) >= maxVerifiedTokens {
		for k, old := range v.m { // expired entries first
			if !now.Before(time.Unix(old.claims.ExpiresAt, 0)) {
				delete(v.m, k)
			}
		}
		for k := range v.m { // still full: any one (map order is random)
			if len(v.m) < maxVerifiedTokens {
				break
			}
			delete(v.m, k)
		}
	}
	v.m[key] = e
}

// len is the number of entries (tests).
func (v *verifiedTokens) len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.m)
}

// headerKID reads the kid of a compact JWS whose signature was verified.
func headerKID(token string) string {
	head, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		KID string `json:"kid"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.KID
}
