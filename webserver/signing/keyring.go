package signing

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/internal/keys"
)

// Common typ header values, whose signing options are built once per key.
const (
	// TypeJWT is the typ of id_tokens and of most JWTs (RFC 7519 §5.1).
	TypeJWT = "JWT"
	// TypeAccessToken is the typ of OAuth 2.0 access tokens in JWT form (RFC 9068 §2.1).
	TypeAccessToken = "at+jwt"
)

var presetTypes = []string{TypeJWT, TypeAccessToken}

// Keyring signs with the newest key whose NotBefore has passed, and publishes every key it
// holds. It is safe for concurrent use, and reads take no lock: Replace swaps the whole key
// set atomically. The zero value is an empty keyring.
type Keyring struct {
	ring atomic.Pointer[ring]
}

// ring is one immutable key set, with everything a request needs prepared.
type ring struct {
	keys []*ringKey // in signing order: NotBefore, then Created, then ID
	byID map[string]*ringKey
	jwks []byte // {"keys":[...]}, capacity clipped
}

type ringKey struct {
	id        string
	private   *rsa.PrivateKey
	notBefore time.Time
	created   time.Time
	// signWith holds a jws.WithKey option (RS256, the private key, the protected header
	// {kid,typ}) for each preset typ. The options and headers are never modified: jws.Sign
	// clones the header before adding alg.
	signWith map[string]jws.SignOption
}

var emptyRing = mustRing(nil)

func mustRing(keys []Key) *ring {
	r, err := newRing(keys)
	if err != nil {
		panic(err)
	}
	return r
}

// load returns the current key set.
func (k *Keyring) load() *ring {
	if r := k.ring.Load(); r != nil {
		return r
	}
	return emptyRing
}

// NewKeyring returns a keyring holding keys. An empty keyring is allowed (it is not Ready,
// and Sign fails) so that the web server can be built before the service Secret is read.
func NewKeyring(keys []Key) (*Keyring, error) {
	r, err := newRing(keys)
	if err != nil {
		return nil, err
	}
	k := &Keyring{}
	k.ring.Store(r)
	return k, nil
}

// Replace swaps in a new key set. Tokens signed with a key that is not in keys no longer
// verify with PublicKey, and the key leaves the JWKS. An empty key set is refused: keys are
// retired, never cleared.
func (k *Keyring) Replace(keys []Key) error {
	if len(keys) == 0 {
		return errors.New("signing: refusing to replace the platform keys with no keys")
	}
	r, err := newRing(keys)
	if err != nil {
		return err
	}
	k.ring.Store(r)
	return nil
}

func newRing(in []Key) (*ring, error) {
	r := &ring{keys: make([]*ringKey, 0, len(in)), byID: make(map[string]*ringKey, len(in))}
	for i, key := range in {
		if err := validateKey(key); err != nil {
			return nil, fmt.Errorf("signing: key %d: %w", i, err)
		}
		if _, dup := r.byID[key.ID]; dup {
			return nil, fmt.Errorf("signing: key %d: duplicate key %s", i, key.ID)
		}
		rk := &ringKey{id: key.ID, private: key.Private, notBefore: key.NotBefore, created: key.Created,
			signWith: make(map[string]jws.SignOption, len(presetTypes))}
		for _, typ := range presetTypes {
			opt, err := signOption(rk, typ)
			if err != nil {
				return nil, err
			}
			rk.signWith[typ] = opt
		}
		r.keys = append(r.keys, rk)
		r.byID[key.ID] = rk
	}
	slices.SortFunc(r.keys, func(a, b *ringKey) int {
		return compareKeys(a.notBefore, a.created, a.id, b.notBefore, b.created, b.id)
	})

	set := struct {
		Keys []jwk.Key `json:"keys"`
	}{Keys: make([]jwk.Key, 0, len(r.keys))}
	for _, rk := range r.keys {
		pub, err := keys.PublicJWK(&rk.private.PublicKey, rk.id)
		if err != nil {
			return nil, fmt.Errorf("signing: key %s: %w", rk.id, err)
		}
		set.Keys = append(set.Keys, pub)
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("signing: marshalling the JWKS: %w", err)
	}
	r.jwks = slices.Clip(jwks)
	return r, nil
}

// signOption is the jws.WithKey option that signs with key, protected header
// {"alg":"RS256","kid":…,"typ":typ} (no typ when typ is empty).
func signOption(key *ringKey, typ string) (jws.SignOption, error) {
	h := jws.NewHeaders()
	if err := h.Set(jws.KeyIDKey, key.id); err != nil {
		return nil, err
	}
	if typ != "" {
		if err := h.Set(jws.TypeKey, typ); err != nil {
			return nil, err
		}
	}
	return jws.WithKey(jwa.RS256(), key.private, jws.WithProtectedHeaders(h)), nil
}

// signer returns the key that signs at now: the newest one whose NotBefore has passed.
// When none has (the keys were just created and this replica's clock is behind the
// controller's), the earliest key signs: there is no older key a tool could know better.
func (r *ring) signer(now time.Time) *ringKey {
	for i := len(r.keys) - 1; i >= 0; i-- {
		if !r.keys[i].notBefore.After(now) {
			return r.keys[i]
		}
	}
	if len(r.keys) > 0 {
		return r.keys[0]
	}
	return nil
}

// Ready reports whether the keyring has a key to sign with now.
func (k *Keyring) Ready() bool { return k.load().signer(time.Now()) != nil }

// JWKS returns the platform JWKS, {"keys":[…]}: the public half of every key held,
// including those that do not sign yet, each with kty, n, e, kid, alg RS256 and use sig.
// It is marshalled once per Replace; callers must not modify it (appending is safe).
func (k *Keyring) JWKS() []byte { return k.load().jwks }

// Sign signs claims (a marshalled JSON object, used verbatim as the payload) with the key
// that signs now. The result is a compact JWS with the protected header
// {"alg":"RS256","kid":…,"typ":typ}; an empty typ leaves typ out.
func (k *Keyring) Sign(typ string, claims []byte) (string, error) {
	return k.SignAt(time.Now(), typ, claims)
}

// SignAt is Sign with the key that signs at now.
func (k *Keyring) SignAt(now time.Time, typ string, claims []byte) (string, error) {
	key := k.load().signer(now)
	if key == nil {
		return "", errors.New("signing: no platform signing key has been loaded yet")
	}
	opt, ok := key.signWith[typ]
	if !ok {
		var err error
		if opt, err = signOption(key, typ); err != nil {
			return "", fmt.Errorf("signing: header: %w", err)
		}
	}
	tok, err := jws.Sign(claims, opt)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return string(tok), nil
}

// PublicKey returns the public key of kid if the keyring holds it (whether it signs yet or
// not, or no longer), nil otherwise. The key is shared: do not modify it.
func (k *Keyring) PublicKey(kid string) *rsa.PublicKey {
	if key := k.load().byID[kid]; key != nil {
		return &key.private.PublicKey
	}
	return nil
}

// CurrentKID returns the kid of the key that signs now, or "" when the keyring is empty.
func (k *Keyring) CurrentKID() string {
	if key := k.load().signer(time.Now()); key != nil {
		return key.id
	}
	return ""
}

// KIDs returns the kids of the keys held, in signing order (the last active one signs).
func (k *Keyring) KIDs() []string {
	r := k.load()
	ids := make([]string, len(r.keys))
	for i, key := range r.keys {
		ids[i] = key.id
	}
	return ids
}
