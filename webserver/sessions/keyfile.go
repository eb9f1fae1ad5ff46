package sessions

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// keyJSON is one key as stored in the service Secret.
type keyJSON struct {
	ID        string    `json:"id"`
	Secret    string    `json:"secret"` // standard base64 of KeySize bytes
	NotBefore time.Time `json:"notBefore"`
	Created   time.Time `json:"created"`
}

// EncodeKeyring renders keys as the keyring.json of the service Secret: a JSON array of
// {"id","secret" (standard base64),"notBefore","created" (RFC 3339)}, in sealing order.
func EncodeKeyring(keys []Key) ([]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("sessions: a keyring needs at least one key")
	}
	sorted := append([]Key(nil), keys...)
	SortKeys(sorted)
	out := make([]keyJSON, len(sorted))
	seen := make(map[string]bool, len(sorted))
	for i, k := range sorted {
		if err := ValidateKey(k); err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("sessions: duplicate key id %q", k.ID)
		}
		seen[k.ID] = true
		out[i] = keyJSON{
			ID:        k.ID,
			Secret:    base64.StdEncoding.EncodeToString(k.Secret),
			NotBefore: k.NotBefore.UTC(),
			Created:   k.Created.UTC(),
		}
	}
	return json.MarshalIndent(out, "", "  ")
}

// DecodeKeyring reads a keyring.json. It fails on anything but a non-empty array of valid
// keys with distinct ids. Its errors never quote the data (it holds key material).
func DecodeKeyring(data []byte) ([]Key, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("keyring is empty")
	}
	var in []keyJSON
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
	keys := make([]Key, len(in))
	seen := make(map[string]bool, len(in))
	for i, kj := range in {
		secret, err := base64.StdEncoding.DecodeString(kj.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %d: secret is not standard base64", i)
		}
		k := Key{ID: kj.ID, Secret: secret, NotBefore: kj.NotBefore, Created: kj.Created}
		if err := ValidateKey(k); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("key %d: duplicate id %q", i, k.ID)
		}
		seen[k.ID] = true
		keys[i] = k
	}
	SortKeys(keys)
	return keys, nil
}

// NewKey generates a sealing key that may seal from now+activationDelay. Times are UTC,
// whole seconds. The id is 8 random bytes in hex.
func NewKey(now time.Time, activationDelay time.Duration) (Key, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Key{}, err
	}
	created := now.UTC().Truncate(time.Second)
	return Key{
		ID:        hex.EncodeToString(id[:]),
		Secret:    secret,
		NotBefore: now.Add(activationDelay).UTC().Truncate(time.Second),
		Created:   created,
	}, nil
}
