package registry

import (
	"container/list"
	"crypto"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/webserver/stores/precomputed"
)

// ToolKey is a registration's tool key: its kid, its public half marshalled once as the
// registration's own key set (whose one JWK /lti/keys also joins), and its private half
// as a crypto.Signer. The private key is parsed when something signs with it, and only
// the maxParsedKeys last used stay parsed: a parsed 2048-bit key holds ~4.5 KB of
// precomputed values (45 MB at 10,000 registrations) for keys that sign only client
// assertions and deep-linking responses, never anything of a launch.
type ToolKey struct {
	KID string
	// pem is the Secret's private key as the informer cache holds it (shared, not copied;
	// an update of the Secret replaces the cached object, never its bytes). It parsed when
	// the key was made.
	pem []byte
	set *precomputed.Body
}

// newToolKey parses the Secret's PEM once, to check it and marshal its public half. The
// others are the PEMs of keys published beside it while a rotation is under way (the next
// key, the retiring one): they sign nothing here, and one that does not parse is left out.
func newToolKey(pemBytes []byte, others ...[]byte) (*ToolKey, error) {
	private, err := keys.ParsePrivateKey(pemBytes)
	if err != nil {
		return nil, err
	}
	kid, err := keys.KID(&private.PublicKey)
	if err != nil {
		return nil, err
	}
	k := &ToolKey{KID: kid, pem: pemBytes}
	published := []*rsa.PublicKey{&private.PublicKey}
	for _, o := range others {
		if len(o) == 0 {
			continue
		}
		if p, err := keys.ParsePrivateKey(o); err == nil {
			published = append(published, &p.PublicKey)
		}
	}
	return k, k.publish(published)
}

// publish marshals the public keys once, as the registration's own key set: the key that
// signs first, then the others.
func (k *ToolKey) publish(public []*rsa.PublicKey) error {
	pieces := make([][]byte, 0, len(public))
	seen := map[string]bool{}
	for _, pub := range public {
		kid, err := keys.KID(pub)
		if err != nil {
			return err
		}
		if seen[kid] {
			continue
		}
		seen[kid] = true
		j, err := keys.PublicJWK(pub, kid)
		if err != nil {
			return err
		}
		jwkJSON, err := json.Marshal(j)
		if err != nil {
			return err
		}
		pieces = append(pieces, jwkJSON)
	}
	k.set = precomputed.New(keySetJSON(pieces))
	return nil
}

// jwk is the key's JWKs (comma-separated, the one that signs first), cut from its key set
// (`{"keys":[` JWKs `]}`) rather than kept twice.
func (k *ToolKey) jwk() []byte {
	raw := k.set.Bytes()
	return raw[len(`{"keys":[`) : len(raw)-len(`]}`)]
}

// Public returns the *rsa.PublicKey (crypto.Signer); nil if the key cannot be parsed.
func (k *ToolKey) Public() crypto.PublicKey {
	private, err := k.private()
	if err != nil {
		return nil
	}
	return &private.PublicKey
}

// Sign signs digest with the private key (crypto.Signer), parsing it if it is not parsed.
func (k *ToolKey) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	private, err := k.private()
	if err != nil {
		return nil, err
	}
	return private.Sign(rand, digest, opts)
}

func (k *ToolKey) private() (*rsa.PrivateKey, error) { return parsedKeys.get(k) }

// maxParsedKeys bounds the parsed private keys kept (~4.5 KB each): more than the
// registrations that sign within a few minutes on one replica, while the access tokens
// of service calls are cached for their lifetime. A key used past it is parsed again
// (a fraction of a millisecond, beside the signature's own millisecond).
const maxParsedKeys = 256

// parsedKeys holds the private keys last used for signing, least recently used first out.
var parsedKeys = newParsedKeyCache(maxParsedKeys)

type parsedKeyCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *parsedKey, most recently used at the front
	byKey map[*ToolKey]*list.Element
}

type parsedKey struct {
	key     *ToolKey
	private *rsa.PrivateKey
}

func newParsedKeyCache(maxKeys int) *parsedKeyCache {
	return &parsedKeyCache{max: maxKeys, order: list.New(), byKey: map[*ToolKey]*list.Element{}}
}

// get returns k's parsed private key, parsing it outside the lock on a miss.
func (c *parsedKeyCache) get(k *ToolKey) (*rsa.PrivateKey, error) {
	c.mu.Lock()
	if e, ok := c.byKey[k]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*parsedKey).private, nil
	}
	c.mu.Unlock()
	if k.pem == nil {
		return nil, fmt.Errorf("tool key %s has no private half", k.KID)
	}
	private, err := keys.ParsePrivateKey(k.pem)
	if err != nil {
		return nil, fmt.Errorf("tool key %s: %w", k.KID, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok { // parsed meanwhile by another signer
		c.order.MoveToFront(e)
		return e.Value.(*parsedKey).private, nil
	}
	c.byKey[k] = c.order.PushFront(&parsedKey{key: k, private: private})
	for c.order.Len() > c.max {
		oldest := c.order.Remove(c.order.Back()).(*parsedKey)
		delete(c.byKey, oldest.key)
	}
	return private, nil
}

// len is the number of parsed keys held.
func (c *parsedKeyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
