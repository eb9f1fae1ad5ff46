package signing

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/keyring"
)

// FuzzDecodeKeys: keyring.Signing.Decode never panics, and whatever it accepts is a usable key set
// that encodes back to a file that decodes to the same keys.
func FuzzDecodeKeys(f *testing.F) {
	a := fixtureKey(f, 0, t0)
	b := fixtureKey(f, 1, t0.Add(10*time.Minute))
	valid, err := keyring.Signing.Encode([]keyring.SigningKey{a, b})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := keyring.Signing.Decode(valid); err != nil {
		f.Fatalf("the seed does not decode: %v", err)
	}
	one, err := keyring.Signing.Encode([]keyring.SigningKey{a})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(one)
	f.Add(bytes.Replace(valid, []byte(a.ID), []byte(b.ID), 1))
	f.Add(bytes.Replace(valid, []byte("2026-03-01T12:00:00Z"), []byte("0001-01-01T00:00:00Z"), 1))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{}]`))
	f.Add([]byte(`[{"kid":"x","privateKey":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n","notBefore":"2026-03-01T12:00:00Z"}]`))

	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := keyring.Signing.Decode(data)
		if err != nil {
			if got != nil {
				t.Fatalf("an error with keys: %v", err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("decoded no keys without an error")
		}
		k, err := NewKeyring(got)
		if err != nil {
			t.Fatalf("decoded keys make no keyring: %v", err)
		}
		if _, err := k.SignAt(t0, ltiwire.TypeJWT, []byte(`{}`)); err != nil {
			t.Fatalf("decoded keys do not sign: %v", err)
		}
		again, err := keyring.Signing.Encode(got)
		if err != nil {
			t.Fatalf("decoded keys do not encode: %v", err)
		}
		back, err := keyring.Signing.Decode(again)
		if err != nil {
			t.Fatalf("re-encoded keys do not decode: %v", err)
		}
		if !slices.EqualFunc(got, back, func(x, y keyring.SigningKey) bool {
			return x.ID == y.ID && x.Private.Equal(y.Private) && x.NotBefore.Equal(y.NotBefore) && x.Created.Equal(y.Created)
		}) {
			t.Fatal("the keys changed in a round trip")
		}
	})
}
