package signing

import (
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixtureKey returns fixture key i as a signing key that signs from notBefore, created an hour
// before t0.
func fixtureKey(tb testing.TB, i int, notBefore time.Time) keyring.SigningKey {
	tb.Helper()
	return testkeys.SigningKey(tb, testkeys.RSAKey(tb, i), notBefore, t0.Add(-time.Hour))
}

// weakKey is the 1024-bit fixture as a signing key (jwx computes no thumbprint of so weak a key:
// the kid is made up).
func weakKey(tb testing.TB) keyring.SigningKey {
	tb.Helper()
	return keyring.SigningKey{ID: "weak-key", Private: testkeys.WeakRSAKey(tb), NotBefore: t0, Created: t0}
}

func mustKeyring(tb testing.TB, ks ...keyring.SigningKey) *Keyring {
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
