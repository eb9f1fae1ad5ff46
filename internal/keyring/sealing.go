package keyring

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// SealingKeySize is the length of a sealing key: A256GCM takes a 256-bit key.
const SealingKeySize = 32

// SealingKey is one key of the sealing keyring: SealingKeySize random bytes for A256GCM, an
// id, and the time from which it may seal.
type SealingKey struct {
	// ID names the key in the kid header of the tokens it seals.
	ID string
	// Secret is the A256GCM key, SealingKeySize bytes.
	Secret []byte
	// NotBefore is when the key starts sealing. Until then it only opens: every replica
	// learns a new key before any replica seals with it.
	NotBefore time.Time
	// Created is when the key was generated.
	Created time.Time
}

// Info returns the key's id and times.
func (k SealingKey) Info() Info { return Info{ID: k.ID, NotBefore: k.NotBefore, Created: k.Created} }

// Validate checks that the key can be used in a keyring.
func (k SealingKey) Validate() error {
	if !ValidID(k.ID) {
		return fmt.Errorf("id must be 1 to 64 characters of A-Z a-z 0-9 - _")
	}
	if len(k.Secret) != SealingKeySize {
		return fmt.Errorf("key %s: secret must be %d bytes, not %d", k.ID, SealingKeySize, len(k.Secret))
	}
	if k.NotBefore.IsZero() {
		return fmt.Errorf("key %s: notBefore is missing", k.ID)
	}
	return nil
}

// ValidID reports whether id is shaped like the ids ltiop makes for keys and sealed tokens:
// 1 to 64 base64url characters.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// SealingKind is the Kind of the sealing keyring; Sealing is its value.
type SealingKind struct{}

// Sealing makes, encodes and decodes sealing keys.
var Sealing SealingKind

var _ Kind[SealingKey] = Sealing

func (SealingKind) String() string { return "sealing keyring" }

// DataKey is ltiv1.SecretKeySealingKeyring.
func (SealingKind) DataKey() string { return ltiv1.SecretKeySealingKeyring }

// NewKey generates a sealing key that may seal from now+activationDelay. Times are UTC,
// whole seconds. The id is 8 random bytes in hex.
func (SealingKind) NewKey(now time.Time, activationDelay time.Duration) (SealingKey, error) {
	secret := make([]byte, SealingKeySize)
	if _, err := rand.Read(secret); err != nil {
		return SealingKey{}, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return SealingKey{}, err
	}
	return SealingKey{
		ID:        hex.EncodeToString(id[:]),
		Secret:    secret,
		NotBefore: now.Add(activationDelay).UTC().Truncate(time.Second),
		Created:   now.UTC().Truncate(time.Second),
	}, nil
}

// sealingKeyJSON is one sealing key as stored in the service Secret.
type sealingKeyJSON struct {
	ID        string    `json:"id"`
	Secret    string    `json:"secret"` // standard base64 of SealingKeySize bytes
	NotBefore time.Time `json:"notBefore"`
	Created   time.Time `json:"created"`
}

// Encode renders keys as the keyring.json of the service Secret: a JSON array of
// {"id","secret" (standard base64),"notBefore","created" (RFC 3339)}, in sealing order.
func (SealingKind) Encode(keys []SealingKey) ([]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("keyring: a sealing keyring needs at least one key")
	}
	sorted := append([]SealingKey(nil), keys...)
	Sort(sorted)
	out := make([]sealingKeyJSON, len(sorted))
	seen := make(map[string]bool, len(sorted))
	for i, k := range sorted {
		if err := k.Validate(); err != nil {
			return nil, fmt.Errorf("keyring: %w", err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("keyring: duplicate key id %q", k.ID)
		}
		seen[k.ID] = true
		out[i] = sealingKeyJSON{
			ID:        k.ID,
			Secret:    base64.StdEncoding.EncodeToString(k.Secret),
			NotBefore: k.NotBefore.UTC(),
			Created:   k.Created.UTC(),
		}
	}
	return json.MarshalIndent(out, "", "  ") //nolint:gosec // G117: the key ring is serialized to be stored in its Kubernetes Secret
}

// Decode reads a keyring.json. It fails on anything but a non-empty array of valid keys with
// distinct ids. The keys come back in sealing order. Its errors never quote the data.
func (SealingKind) Decode(data []byte) ([]SealingKey, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("keyring is empty")
	}
	var in []sealingKeyJSON
	if err := json.Unmarshal(data, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fmt.Errorf("keyring is not an array of keys (%s)", typeErr.Field)
		}
		return nil, errors.New("keyring does not parse as a JSON array of keys")
	}
	if len(in) == 0 {
		return nil, errors.New("keyring holds no keys")
	}
	keys := make([]SealingKey, len(in))
	seen := make(map[string]bool, len(in))
	for i, kj := range in {
		secret, err := base64.StdEncoding.DecodeString(kj.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %d: secret is not standard base64", i)
		}
		k := SealingKey{ID: kj.ID, Secret: secret, NotBefore: kj.NotBefore, Created: kj.Created}
		if err := k.Validate(); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("key %d: duplicate id %q", i, k.ID)
		}
		seen[k.ID] = true
		keys[i] = k
	}
	Sort(keys)
	return keys, nil
}
