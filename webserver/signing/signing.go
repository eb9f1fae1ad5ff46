// Package signing holds the platform-mode signing key: the RSA key ltiop signs with when it
// acts as a learning platform (id_tokens sent to tools, access tokens of its token endpoint,
// short-lived payloads), and the public keys it publishes at the platform JWKS URL.
//
// The keys live in the service Secret (data key SecretKeyPlatformKeys), which the
// controller creates and rotates; a Keyring follows that Secret. Rotation publishes first
// and signs later: every key held is in the JWKS at once, and a key signs only from its
// NotBefore, which the controller puts far enough ahead for tools' JWKS caches to expire.
// An old key stays, published and verifying, until tokens it signed can no longer be in use.
package signing

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ltiop/ltiop/internal/keys"
)

// SecretKeyPlatformKeys is the data key of the platform signing keys in the service Secret
// (JSON, see EncodeKeys).
const SecretKeyPlatformKeys = "platform-keys.json"

// Alg is the one signature algorithm of platform mode (LTI Security Framework §5.1.1).
const Alg = "RS256"

// minBits is the smallest RSA modulus a platform key may have.
const minBits = 2048

// Key is one platform signing key.
type Key struct {
	// ID is the kid: the RFC 7638 SHA-256 thumbprint of the public key (keys.KID), so a kid
	// can never name two different keys.
	ID string
	// Private is the RSA key, at least 2048 bits.
	Private *rsa.PrivateKey
	// NotBefore is when the key starts signing. It is published in the JWKS at once, so
	// tools that cache the JWKS learn it before they see a token it signed.
	NotBefore time.Time
	// Created is when the key was generated.
	Created time.Time
}

// NewKey generates an RSA-2048 key that signs from now+activationDelay. Times are UTC,
// whole seconds.
func NewKey(now time.Time, activationDelay time.Duration) (Key, error) {
	priv, err := keys.Generate()
	if err != nil {
		return Key{}, fmt.Errorf("signing: generating a key: %w", err)
	}
	kid, err := keys.KID(&priv.PublicKey)
	if err != nil {
		return Key{}, fmt.Errorf("signing: key id: %w", err)
	}
	return Key{
		ID:        kid,
		Private:   priv,
		NotBefore: now.Add(activationDelay).UTC().Truncate(time.Second),
		Created:   now.UTC().Truncate(time.Second),
	}, nil
}

// SortKeys puts keys in signing order: by NotBefore, then Created, then ID. The last key
// whose NotBefore has passed is the one that signs.
func SortKeys(keys []Key) {
	slices.SortFunc(keys, func(a, b Key) int {
		return compareKeys(a.NotBefore, a.Created, a.ID, b.NotBefore, b.Created, b.ID)
	})
}

func compareKeys(aNB, aCreated time.Time, aID string, bNB, bCreated time.Time, bID string) int {
	if c := aNB.Compare(bNB); c != 0 {
		return c
	}
	if c := aCreated.Compare(bCreated); c != 0 {
		return c
	}
	return strings.Compare(aID, bID)
}

// validateKey checks that key can be held by a keyring: an RSA key of at least minBits
// whose ID is its thumbprint, with a NotBefore. Its errors never quote key material.
func validateKey(key Key) error {
	if key.Private == nil || key.Private.N == nil {
		return errors.New("no private key")
	}
	if bits := key.Private.N.BitLen(); bits < minBits {
		return fmt.Errorf("RSA key has %d bits, at least %d are required", bits, minBits)
	}
	kid, err := keys.KID(&key.Private.PublicKey)
	if err != nil {
		return fmt.Errorf("key id: %w", err)
	}
	if key.ID != kid {
		return fmt.Errorf("kid is not the thumbprint of the key (%s)", kid)
	}
	if key.NotBefore.IsZero() {
		return fmt.Errorf("key %s: notBefore is missing", key.ID)
	}
	return nil
}
