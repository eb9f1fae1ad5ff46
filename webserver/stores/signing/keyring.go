package signing

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/keys"
)

// presetTypes are the common typ header values, whose signing options are built once per key.
var presetTypes = []string{ltiwire.TypeJWT, ltiwire.TypeAccessToken}

// Keyring signs with the newest key whose NotBefore has passed, and publishes every key it
// holds. It is safe for concurrent use, and reads take no lock: Replace swaps the whole key
// set atomically, and a key that leaves the set no longer verifies and leaves the JWKS. The
// zero value is an empty keyring. Replace, Attach, Ready and IDs are keyring.Keyring's.
type Keyring struct {
	ring
}

// ring is the part of Keyring every keyring of the service Secret has.
type ring = keyring.Keyring[keyring.SigningKey, *published, platformKeys]

// platformKeys are the platform signing keys, prepared as signing options and a JWKS.
type platformKeys struct{ keyring.SigningKind }

// Name names the keyring in errors and logs.
func (platformKeys) Name() string { return "signing" }

// published is what a key set gives every request, made once per set.
type published struct {
	// signWith holds, by kid, a jws.WithKey option (RS256, the private key, the protected
	// header {kid,typ}) for each preset typ. The options and headers are never modified:
	// jws.Sign clones the header before adding alg.
	signWith map[string]map[string]jws.SignOption
	jwks     []byte // {"keys":[...]}, capacity clipped
}

// emptyJWKS is the JWKS of the empty keyring, capacity clipped.
var emptyJWKS = slices.Clip([]byte(`{"keys":[]}`))

// NewKeyring returns a keyring holding keys. An empty keyring is allowed (it is not Ready,
// and Sign fails) so that the web server can be built before the service Secret is read.
func NewKeyring(keys []keyring.SigningKey) (*Keyring, error) {
	k := &Keyring{}
	if len(keys) == 0 {
		return k, nil
	}
	if err := k.Replace(keys); err != nil {
		return nil, err
	}
	return k, nil
}

// Prepare makes a key set (in signing order) ready for requests: the signing options of
// every key and the JWKS.
func (platformKeys) Prepare(sorted []keyring.SigningKey) (*published, error) {
	p := &published{signWith: make(map[string]map[string]jws.SignOption, len(sorted))}
	for _, key := range sorted {
		opts := make(map[string]jws.SignOption, len(presetTypes))
		for _, typ := range presetTypes {
			opt, err := signOption(key, typ)
			if err != nil {
				return nil, err
			}
			opts[typ] = opt
		}
		p.signWith[key.ID] = opts
	}

	doc := struct {
		Keys []jwk.Key `json:"keys"`
	}{Keys: make([]jwk.Key, 0, len(sorted))}
	for _, key := range sorted {
		pub, err := keys.PublicJWK(&key.Private.PublicKey, key.ID)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", key.ID, err)
		}
		doc.Keys = append(doc.Keys, pub)
	}
	jwks, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshalling the JWKS: %w", err)
	}
	p.jwks = slices.Clip(jwks)
	return p, nil
}

// signOption is the jws.WithKey option that signs with key, protected header
// {"alg":"RS256","kid":…,"typ":typ} (no typ when typ is empty).
func signOption(key keyring.SigningKey, typ string) (jws.SignOption, error) {
	h := jws.NewHeaders()
	if err := h.Set(jws.KeyIDKey, key.ID); err != nil {
		return nil, err
	}
	if typ != "" {
		if err := h.Set(jws.TypeKey, typ); err != nil {
			return nil, err
		}
	}
	return jws.WithKey(jwa.RS256(), key.Private, jws.WithProtectedHeaders(h)), nil
}

// JWKS returns the platform JWKS, {"keys":[…]}: the public half of every key held,
// including those that do not sign yet, each with kty, n, e, kid, alg RS256 and use sig.
// It is marshalled once per Replace; callers must not modify it (appending is safe).
func (k *Keyring) JWKS() []byte {
	if p := keyring.Keys(&k.ring).Data(); p != nil {
		return p.jwks
	}
	return emptyJWKS
}

// Sign signs claims (a marshalled JSON object, used verbatim as the payload) with the key
// that signs now. The result is a compact JWS with the protected header
// {"alg":"RS256","kid":…,"typ":typ}; an empty typ leaves typ out.
func (k *Keyring) Sign(typ string, claims []byte) (string, error) {
	return k.SignAt(time.Now(), typ, claims)
}

// SignAt is Sign with the key that signs at now.
func (k *Keyring) SignAt(now time.Time, typ string, claims []byte) (string, error) {
	set := keyring.Keys(&k.ring)
	key, ok := set.Current(now)
	if !ok {
		return "", errors.New("signing: no platform signing key has been loaded yet")
	}
	opt, ok := set.Data().signWith[key.ID][typ]
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

// MaxTokenLength is the longest token Verify looks at; anything longer is refused without
// being parsed.
const MaxTokenLength = 64 << 10

// ErrNotOurs is every refusal of Verify: the token is not one this keyring signed with the
// expected typ (the reason is left out: a caller answers all alike).
var ErrNotOurs = errors.New("signing: not a token of this keyring")

// Verify checks a compact JWS this keyring signed: one signature, RS256, the typ expected
// (so a token of one kind never passes for another), a kid the keyring holds and the
// signature. It returns the payload; its claims (iss, aud, exp) are the caller's to check.
func (k *Keyring) Verify(token, typ string) ([]byte, error) {
	if token == "" || len(token) > MaxTokenLength || strings.Count(token, ".") != 2 {
		return nil, ErrNotOurs
	}
	msg, err := jws.ParseString(token)
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, ErrNotOurs
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	if alg, _ := h.Algorithm(); alg != jwa.RS256() {
		return nil, ErrNotOurs
	}
	if t, _ := h.Type(); t != typ {
		return nil, ErrNotOurs
	}
	kid, _ := h.KeyID()
	pub := k.PublicKey(kid)
	if pub == nil {
		return nil, ErrNotOurs
	}
	// jwx's compact fast path, as webserver/protocol/lti: unlike jws.Verify it refuses a "crit"
	// header (RFC 7515 §4.1.11; we understand no extension) and a "b64" one (RFC 7797).
	payload, err := jws.VerifyCompactFast(pub, []byte(token), jwa.RS256())
	if err != nil {
		return nil, ErrNotOurs
	}
	return payload, nil
}

// PublicKey returns the public key of kid if the keyring holds it (whether it signs yet or
// not, or no longer), nil otherwise. The key is shared: do not modify it.
func (k *Keyring) PublicKey(kid string) *rsa.PublicKey {
	if key, ok := keyring.Keys(&k.ring).Lookup(kid); ok {
		return &key.Private.PublicKey
	}
	return nil
}

// CurrentKID returns the kid of the key that signs now, or "" when the keyring is empty.
func (k *Keyring) CurrentKID() string {
	key, _ := keyring.Keys(&k.ring).Current(time.Now())
	return key.ID
}
