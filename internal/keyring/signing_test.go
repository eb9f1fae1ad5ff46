package keyring_test

import (
	"crypto/rsa"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

// signingKey returns fixture RSA key i as a signing key that signs from notBefore, created
// an hour before t0.
func signingKey(tb testing.TB, i int, notBefore time.Time) keyring.SigningKey {
	tb.Helper()
	return testkeys.SigningKey(tb, testkeys.RSAKey(tb, i), notBefore, t0.Add(-time.Hour))
}

// weakSigningKey is the 1024-bit fixture as a signing key (jwx computes no thumbprint of so
// weak a key: the kid is made up).
func weakSigningKey(tb testing.TB) keyring.SigningKey {
	tb.Helper()
	return keyring.SigningKey{ID: "weak-key", Private: testkeys.WeakRSAKey(tb), NotBefore: t0, Created: t0}
}

func TestEncodeDecodeSigningKeys(t *testing.T) {
	a := signingKey(t, 0, t0)
	b := signingKey(t, 1, t0.Add(10*time.Minute))
	data, err := keyring.Signing.Encode([]keyring.SigningKey{b, a})
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw[0]["kid"] != a.ID || raw[1]["kid"] != b.ID {
		t.Fatalf("encoded %d keys: want both keys in signing order", len(raw))
	}
	for _, field := range []string{"kid", "privateKey", "notBefore", "created"} {
		if _, ok := raw[0][field]; !ok {
			t.Errorf("no %q in the encoded key", field)
		}
	}
	if len(raw[0]) != 4 {
		t.Errorf("the encoded key has %d members, want 4", len(raw[0]))
	}
	if pemKey, _ := raw[0]["privateKey"].(string); !strings.HasPrefix(pemKey, "-----BEGIN PRIVATE KEY-----\n") {
		t.Errorf("privateKey is not a PKCS#8 PEM block")
	}
	if raw[1]["notBefore"] != t0.Add(10*time.Minute).Format(time.RFC3339) {
		t.Errorf("notBefore = %v", raw[1]["notBefore"])
	}

	got, err := keyring.Signing.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("decoded %d keys", len(got))
	}
	for i, want := range []keyring.SigningKey{a, b} {
		k := got[i]
		if k.ID != want.ID || !k.Private.Equal(want.Private) || !k.NotBefore.Equal(want.NotBefore) || !k.Created.Equal(want.Created) {
			t.Errorf("key %d = {%s %v %v}, want {%s %v %v}", i, k.ID, k.NotBefore, k.Created, want.ID, want.NotBefore, want.Created)
		}
	}
	var ring keyring.Ring[keyring.SigningKey, struct{}]
	if err := ring.Replace(got, nil); err != nil {
		t.Errorf("decoded keys make no ring: %v", err)
	}

	// Encoding refuses what decoding would refuse.
	for name, set := range map[string][]keyring.SigningKey{
		"empty":          nil,
		"duplicate":      {a, a},
		"weak":           {weakSigningKey(t)},
		"wrong kid":      {{ID: b.ID, Private: a.Private, NotBefore: t0}},
		"no notBefore":   {{ID: a.ID, Private: a.Private}},
		"no private key": {{ID: a.ID, NotBefore: t0}},
	} {
		if _, err := keyring.Signing.Encode(set); err == nil {
			t.Errorf("%s: encoded", name)
		}
		if name != "empty" {
			if err := ring.Replace(set, nil); err == nil {
				t.Errorf("%s: a ring took it", name)
			}
		}
	}
}

func TestDecodeSigningKeysRejects(t *testing.T) {
	weak := testkeys.WeakRSAKey(t)
	pemOf := func(priv *rsa.PrivateKey) string {
		b, err := keys.EncodePrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	kidOf := func(priv *rsa.PrivateKey) string {
		kid, err := keys.KID(&priv.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		return kid
	}
	entry := func(kid, pemKey, notBefore string) string {
		pemJSON, _ := json.Marshal(pemKey)
		return `{"kid":"` + kid + `","privateKey":` + string(pemJSON) + `,"notBefore":"` + notBefore + `","created":"2026-03-01T12:00:00Z"}`
	}
	good, goodKID := pemOf(testkeys.RSAKey(t, 0)), kidOf(testkeys.RSAKey(t, 0))
	nb := "2026-03-01T12:00:00Z"
	body := strings.Split(strings.TrimSpace(good), "\n")[3] // a line of key material
	for name, data := range map[string]string{
		"empty":           "",
		"blank":           " \n ",
		"not json":        "{{{" + good,
		"object":          `{"keys":[]}`,
		"no keys":         `[]`,
		"null":            `null`,
		"not PEM":         "[" + entry(goodKID, "MIIE"+body, nb) + "]",
		"broken PEM":      "[" + entry(goodKID, strings.Replace(good, body, body[:len(body)/2], 1), nb) + "]",
		"public key":      "[" + entry(goodKID, "-----BEGIN PUBLIC KEY-----\n"+body+"\n-----END PUBLIC KEY-----\n", nb) + "]",
		"weak key":        "[" + entry("weak-key", pemOf(weak), nb) + "]",
		"kid mismatch":    "[" + entry(kidOf(testkeys.RSAKey(t, 1)), good, nb) + "]",
		"no kid":          "[" + entry("", good, nb) + "]",
		"duplicate":       "[" + entry(goodKID, good, nb) + "," + entry(goodKID, good, nb) + "]",
		"bad notBefore":   "[" + entry(goodKID, good, "yesterday") + "]",
		"kid as number":   `[{"kid":1}]`,
		"key as list":     `[{"kid":"` + goodKID + `","privateKey":[1,2],"notBefore":"` + nb + `"}]`,
		"one bad of two":  "[" + entry(goodKID, good, nb) + "," + entry("weak-key", pemOf(weak), nb) + "]",
		"missing private": `[{"kid":"` + goodKID + `","notBefore":"` + nb + `"}]`,
	} {
		_, err := keyring.Signing.Decode([]byte(data))
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if strings.Contains(err.Error(), body[:16]) || strings.Contains(err.Error(), "PRIVATE KEY-----") {
			t.Errorf("%s: the error quotes key material: %v", name, err)
		}
	}

	// A key without notBefore, spelled out.
	pemJSON, _ := json.Marshal(good)
	if _, err := keyring.Signing.Decode([]byte(`[{"kid":"` + goodKID + `","privateKey":` + string(pemJSON) + `}]`)); err == nil {
		t.Error("decoded a key without notBefore")
	}
}

func TestNewSigningKey(t *testing.T) {
	if testing.Short() {
		t.Skip("generates RSA keys")
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 700_000_000, time.FixedZone("X", 3600))
	a, err := keyring.Signing.NewKey(now, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := keyring.Signing.NewKey(now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Private.N.BitLen() != 2048 || a.Private.Equal(b.Private) {
		t.Errorf("want two different RSA-2048 keys, got %d bits", a.Private.N.BitLen())
	}
	if kid, _ := keys.KID(&a.Private.PublicKey); a.ID != kid || a.ID == b.ID {
		t.Errorf("ID %q is not the thumbprint %q", a.ID, kid)
	}
	if !a.NotBefore.Equal(time.Date(2026, 3, 1, 11, 10, 0, 0, time.UTC)) || a.NotBefore.Location() != time.UTC {
		t.Errorf("NotBefore = %v, want now+10m in UTC, whole seconds", a.NotBefore)
	}
	if !a.Created.Equal(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)) || !b.NotBefore.Equal(b.Created) {
		t.Errorf("Created = %v, %v; NotBefore without delay = %v", a.Created, b.Created, b.NotBefore)
	}
	if err := a.Validate(); err != nil {
		t.Error(err)
	}
}
