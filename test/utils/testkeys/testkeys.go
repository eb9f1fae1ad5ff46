// Package testkeys makes keys for tests: RSA keys, and the sealing and signing keys of the
// keyrings. RSA key generation is slow (more so under -race), so every test binary shares a
// few RSA keys generated once.
package testkeys

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/keys"
)

// SealingKey returns a new sealing key that seals from now+activationDelay.
func SealingKey(tb testing.TB, now time.Time, activationDelay time.Duration) keyring.SealingKey {
	tb.Helper()
	k, err := keyring.Sealing.NewKey(now, activationDelay)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// The fixture keys, each generated on first use: a test binary that needs one key does
// not wait for the others.
var (
	fixtureRSA = [3]func() (*rsa.PrivateKey, error){ // 2048 bits
		sync.OnceValues(keys.Generate), sync.OnceValues(keys.Generate), sync.OnceValues(keys.Generate),
	}
	fixtureWeak = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 1024) }) // 1024 bits
)

// RSAKey returns fixture RSA-2048 key i, 0 to 2: the same key for the same i in one test
// binary. Do not modify it.
func RSAKey(tb testing.TB, i int) *rsa.PrivateKey {
	tb.Helper()
	k, err := fixtureRSA[i]()
	if err != nil {
		tb.Fatalf("generating fixture key %d: %v", i, err)
	}
	return k
}

// MustRSAKey is RSAKey for package-level variables and TestMain, where there is no test to
// fail: it panics instead.
func MustRSAKey(i int) *rsa.PrivateKey {
	k, err := fixtureRSA[i]()
	if err != nil {
		panic(fmt.Sprintf("generating fixture key %d: %v", i, err))
	}
	return k
}

// RSAKeyPEM returns fixture key i (see RSAKey) PEM-encoded, as ltiop stores a private key
// in a Secret.
func RSAKeyPEM(tb testing.TB, i int) []byte {
	tb.Helper()
	b, err := keys.EncodePrivateKey(RSAKey(tb, i))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// WeakRSAKey returns a fixture RSA key of 1024 bits, too weak to sign with.
func WeakRSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	k, err := fixtureWeak()
	if err != nil {
		tb.Fatalf("generating the weak fixture key: %v", err)
	}
	return k
}

// SigningKey returns priv as a signing key (its kid is its thumbprint) that signs from
// notBefore and was created at created.
func SigningKey(tb testing.TB, priv *rsa.PrivateKey, notBefore, created time.Time) keyring.SigningKey {
	tb.Helper()
	kid, err := keys.KID(&priv.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return keyring.SigningKey{ID: kid, Private: priv, NotBefore: notBefore, Created: created}
}
