package keyring_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestEncodeDecodeSealingKeys(t *testing.T) {
	a := testkeys.SealingKey(t, t0, 0)
	b := testkeys.SealingKey(t, t0, time.Minute)
	data, err := keyring.Sealing.Encode([]keyring.SealingKey{b, a})
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw[0]["id"] != a.ID || raw[1]["id"] != b.ID {
		t.Fatalf("encoded %s: want both keys in sealing order", data)
	}
	for _, field := range []string{"id", "secret", "notBefore", "created"} {
		if _, ok := raw[0][field]; !ok {
			t.Errorf("no %q in %v", field, raw[0])
		}
	}
	if raw[0]["secret"] != base64.StdEncoding.EncodeToString(a.Secret) {
		t.Errorf("secret is not standard base64 of the key")
	}
	if raw[1]["notBefore"] != t0.Add(time.Minute).Format(time.RFC3339) {
		t.Errorf("notBefore = %v", raw[1]["notBefore"])
	}

	keys, err := keyring.Sealing.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("decoded %d keys", len(keys))
	}
	for i, want := range []keyring.SealingKey{a, b} {
		got := keys[i]
		if got.ID != want.ID || !bytes.Equal(got.Secret, want.Secret) || !got.NotBefore.Equal(want.NotBefore) || !got.Created.Equal(want.Created) {
			t.Errorf("key %d = %+v, want %+v", i, got, want)
		}
	}
	var ring keyring.Ring[keyring.SealingKey, struct{}]
	if err := ring.Replace(keys, nil); err != nil {
		t.Errorf("decoded keys make no ring: %v", err)
	}
	if _, err := keyring.Sealing.Encode(nil); err == nil {
		t.Error("encoded an empty keyring")
	}
	if _, err := keyring.Sealing.Encode([]keyring.SealingKey{a, a}); err == nil {
		t.Error("encoded duplicate ids")
	}
}

// TestSealingKeyringFormat pins the keyring.json layout, which older replicas read.
func TestSealingKeyringFormat(t *testing.T) {
	k := keyring.SealingKey{ID: "k1", Secret: bytes.Repeat([]byte{1}, keyring.SealingKeySize),
		NotBefore: t0.In(time.FixedZone("X", 3600)), Created: t0.Add(-time.Hour)}
	data, err := keyring.Sealing.Encode([]keyring.SealingKey{k})
	if err != nil {
		t.Fatal(err)
	}
	want := `[
  {
    "id": "k1",
    "secret": "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
    "notBefore": "2026-03-01T12:00:00Z",
    "created": "2026-03-01T11:00:00Z"
  }
]`
	if string(data) != want {
		t.Errorf("encoded\n%s\nwant\n%s", data, want)
	}
}

func TestDecodeSealingKeysRejects(t *testing.T) {
	good := testkeys.SealingKey(t, t0, 0)
	secret := base64.StdEncoding.EncodeToString(good.Secret)
	entry := func(id, secret, notBefore string) string {
		return `{"id":"` + id + `","secret":"` + secret + `","notBefore":"` + notBefore + `","created":"2026-03-01T12:00:00Z"}`
	}
	nb := "2026-03-01T12:00:00Z"
	for name, data := range map[string]string{
		"empty":          "",
		"not json":       "{{{" + secret,
		"object":         `{"keys":[]}`,
		"no keys":        `[]`,
		"null":           `null`,
		"bad base64":     "[" + entry("a", "!!"+secret, nb) + "]",
		"short secret":   "[" + entry("a", base64.StdEncoding.EncodeToString(good.Secret[:31]), nb) + "]",
		"no id":          "[" + entry("", secret, nb) + "]",
		"bad id":         "[" + entry("a b", secret, nb) + "]",
		"duplicate id":   "[" + entry("a", secret, nb) + "," + entry("a", secret, nb) + "]",
		"no notBefore":   `[{"id":"a","secret":"` + secret + `"}]`,
		"bad notBefore":  "[" + entry("a", secret, "yesterday") + "]",
		"wrong type":     `[{"id":1,"secret":"` + secret + `","notBefore":"` + nb + `"}]`,
		"secret as list": `[{"id":"a","secret":[1,2],"notBefore":"` + nb + `"}]`,
	} {
		_, err := keyring.Sealing.Decode([]byte(data))
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("%s: the error quotes key material: %v", name, err)
		}
	}
}

func TestNewSealingKey(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 700_000_000, time.FixedZone("X", 3600))
	a := testkeys.SealingKey(t, now, time.Minute)
	b := testkeys.SealingKey(t, now, time.Minute)
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a.ID) || a.ID == b.ID {
		t.Errorf("ids %q, %q: want 16 distinct hex characters", a.ID, b.ID)
	}
	if len(a.Secret) != keyring.SealingKeySize || bytes.Equal(a.Secret, b.Secret) || bytes.Equal(a.Secret, make([]byte, keyring.SealingKeySize)) {
		t.Errorf("secrets are not %d random bytes", keyring.SealingKeySize)
	}
	if !a.NotBefore.Equal(time.Date(2026, 3, 1, 11, 1, 0, 0, time.UTC)) || a.NotBefore.Location() != time.UTC {
		t.Errorf("NotBefore = %v, want now+1m in UTC, whole seconds", a.NotBefore)
	}
	if !a.Created.Equal(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("Created = %v", a.Created)
	}
	if err := a.Validate(); err != nil {
		t.Error(err)
	}
}

func TestSealingKeyValidate(t *testing.T) {
	good := testkeys.SealingKey(t, t0, 0)
	for name, mutate := range map[string]func(*keyring.SealingKey){
		"no id":        func(k *keyring.SealingKey) { k.ID = "" },
		"long id":      func(k *keyring.SealingKey) { k.ID = strings.Repeat("a", 65) },
		"bad id":       func(k *keyring.SealingKey) { k.ID = "a/b" },
		"short secret": func(k *keyring.SealingKey) { k.Secret = k.Secret[:16] },
		"no notBefore": func(k *keyring.SealingKey) { k.NotBefore = time.Time{} },
	} {
		k := good
		mutate(&k)
		if err := k.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}
