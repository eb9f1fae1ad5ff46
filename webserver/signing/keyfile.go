package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ltiop/ltiop/internal/keys"
)

// keyJSON is one key as stored in the service Secret.
type keyJSON struct {
	KID        string    `json:"kid"`
	PrivateKey string    `json:"privateKey"` // PKCS#8 PEM
	NotBefore  time.Time `json:"notBefore"`
	Created    time.Time `json:"created"`
}

// EncodeKeys renders keys as the platform-keys.json of the service Secret: a JSON array of
// {"kid","privateKey" (PKCS#8 PEM),"notBefore","created" (RFC 3339)}, in signing order.
func EncodeKeys(set []Key) ([]byte, error) {
	if len(set) == 0 {
		return nil, errors.New("signing: a key set needs at least one key")
	}
	sorted := append([]Key(nil), set...)
	SortKeys(sorted)
	out := make([]keyJSON, len(sorted))
	seen := make(map[string]bool, len(sorted))
	for i, k := range sorted {
		if err := validateKey(k); err != nil {
			return nil, fmt.Errorf("signing: key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("signing: duplicate key %s", k.ID)
		}
		seen[k.ID] = true
		pemKey, err := keys.EncodePrivateKey(k.Private)
		if err != nil {
			return nil, fmt.Errorf("signing: key %s: %w", k.ID, err)
		}
		out[i] = keyJSON{
			KID:        k.ID,
			PrivateKey: string(pemKey),
			NotBefore:  k.NotBefore.UTC(),
			Created:    k.Created.UTC(),
		}
	}
	return json.MarshalIndent(out, "", "  ")
}

// DecodeKeys reads a platform-keys.json. It fails on anything but a non-empty array of
// RSA keys of at least 2048 bits, each with a notBefore and the kid that is its
// thumbprint, with distinct kids. The keys come back in signing order. Its errors never
// quote the data (it holds private keys).
func DecodeKeys(data []byte) ([]Key, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("platform key set is empty")
	}
	var in []keyJSON
	if err := json.Unmarshal(data, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, fmt.Errorf("platform key set is not an array of keys (%s)", typeErr.Field)
		}
		return nil, errors.New("platform key set does not parse as a JSON array of keys")
	}
	if len(in) == 0 {
		return nil, errors.New("platform key set holds no keys")
	}
	out := make([]Key, len(in))
	seen := make(map[string]bool, len(in))
	for i, kj := range in {
		priv, err := keys.ParsePrivateKey([]byte(kj.PrivateKey))
		if err != nil {
			return nil, fmt.Errorf("key %d: private key: %w", i, err)
		}
		k := Key{ID: kj.KID, Private: priv, NotBefore: kj.NotBefore, Created: kj.Created}
		if err := validateKey(k); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("key %d: duplicate key %s", i, k.ID)
		}
		seen[k.ID] = true
		out[i] = k
	}
	SortKeys(out)
	return out, nil
}
