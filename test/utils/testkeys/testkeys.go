// Package testkeys makes keys for tests: RSA keys, and the sealing and signing keys of the
// keyrings. RSA key generation is slow (more so under -race), so every test binary shares a
// few RSA keys generated once.
package testkeys

import (
	"crypto/rand"
	"crypto/rsa"
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

var (
	fixtureOnce sync.Once
	fixtureErr  error
	fixtureRSA  [3]*rsa.PrivateKey // 2048 bits
	fixtureWeak *rsa.PrivateKey    // 1024 bits
)

func fixtures() error {
	fixtureOnce.Do(func() {
		for i := range fixtureRSA {
			if fixtureRSA[i], fixtureErr = keys.Generate(); fixtureErr != nil {
				return
			}
		}
		fixtureWeak, fixtureErr = rsa.GenerateKey(rand.Reader, 1024)
	})
	return fixtureErr
}

// RSAKey returns fixture RSA-2048 key i, 0 to 2: the same key for the same i in one test
// binary. Do not modify it.
func RSAKey(tb testing.TB, i int) *rsa.PrivateKey {
	tb.Helper()
	if err := fixtures(); err != nil {
		tb.Fatalf("generating fixture keys: %v", err)
	}
	return fixtureRSA[i]
}

// MustRSAKey is RSAKey for package-level variables and TestMain, where there is no test to
// fail: it panics instead.
func MustRSAKey(i int) *rsa.PrivateKey {
	if err := fixtures(); err != nil {
		panic("generating fixture keys: " + err.Error())
	}
	return fixtureRSA[i]
}

// WeakRSAKey returns a fixture RSA key of 1024 bits, too weak to sign with.
func WeakRSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	if err := fixtures(); err != nil {
		tb.Fatalf("generating fixture keys: %v", err)
	}
	return fixtureWeak
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
