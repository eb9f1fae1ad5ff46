package signing

import (
	"crypto/rand"
	"crypto/rsa"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keys"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// RSA key generation is slow (more so under -race): the tests share a few keys.
var (
	fixtureOnce sync.Once
	fixtureErr  error
	fixtureRSA  [3]*rsa.PrivateKey // 2048 bits
	fixtureWeak *rsa.PrivateKey    // 1024 bits
)

func fixtures(tb testing.TB) ([3]*rsa.PrivateKey, *rsa.PrivateKey) {
	tb.Helper()
	fixtureOnce.Do(func() {
		for i := range fixtureRSA {
			if fixtureRSA[i], fixtureErr = keys.Generate(); fixtureErr != nil {
				return
			}
		}
		fixtureWeak, fixtureErr = rsa.GenerateKey(rand.Reader, 1024)
	})
	if fixtureErr != nil {
		tb.Fatalf("generating fixture keys: %v", fixtureErr)
	}
	return fixtureRSA, fixtureWeak
}

// fixtureKey returns fixture key i as a Key that signs from notBefore, created an hour
// before t0.
func fixtureKey(tb testing.TB, i int, notBefore time.Time) Key {
	tb.Helper()
	rsaKeys, _ := fixtures(tb)
	return keyOf(tb, rsaKeys[i], notBefore)
}

func keyOf(tb testing.TB, priv *rsa.PrivateKey, notBefore time.Time) Key {
	tb.Helper()
	kid, err := keys.KID(&priv.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return Key{ID: kid, Private: priv, NotBefore: notBefore, Created: t0.Add(-time.Hour)}
}

// weakKey is the 1024-bit fixture as a Key (jwx computes no thumbprint of so weak a key:
// the kid is made up).
func weakKey(tb testing.TB) Key {
	tb.Helper()
	_, weak := fixtures(tb)
	return Key{ID: "weak-key", Private: weak, NotBefore: t0, Created: t0}
}

func mustKeyring(tb testing.TB, ks ...Key) *Keyring {
	tb.Helper()
	k, err := NewKeyring(ks)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// idTokenClaims is a small id_token claim set, already marshalled as Sign takes it.
var idTokenClaims = []byte(`{"iss":"https://lti.test.example","aud":"tool-client","sub":"user-1",` +
	`"exp":1772370000,"iat":1772366400,"nonce":"n-0123456789",` +
	`"https://purl.imsglobal.org/spec/lti/claim/message_type":"LtiResourceLinkRequest",` +
	`"https://purl.imsglobal.org/spec/lti/claim/version":"1.3.0",` +
	`"https://purl.imsglobal.org/spec/lti/claim/deployment_id":"1",` +
	`"https://purl.imsglobal.org/spec/lti/claim/target_link_uri":"https://tool.example/launch",` +
	`"https://purl.imsglobal.org/spec/lti/claim/resource_link":{"id":"rl-1"},` +
	`"https://purl.imsglobal.org/spec/lti/claim/roles":["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]}`)
