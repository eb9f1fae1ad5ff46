package keyring

import (
	"bytes"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
)

// minSigningBits is the smallest RSA modulus a platform signing key may have.
const minSigningBits = 2048

// SigningKey is one platform signing key: the RSA key ltiop signs with as a learning
// platform, published in its platform JWKS from the moment it is held.
type SigningKey struct {
	// ID is the kid: the RFC 7638 SHA-256 thumbprint of the public key (keys.KID), so a kid
	// can never name two different keys.
	ID string
	// Private is the RSA key, at least 2048 bits.
	Private *rsa.PrivateKey
	// NotBefore is when the key starts signing. It is published in the JWKS at once, so
	// tools that cache the JWKS learn it before they see a token it signed.
	NotBefore time.Time
	// Created is when the key was generated.
	Created time.Time
}

// Info returns the key's id and times.
func (k SigningKey) Info() Info { return Info{ID: k.ID, NotBefore: k.NotBefore, Created: k.Created} }

// Validate checks that the key can be held: an RSA key of at least 2048 bits whose ID is its
// thumbprint, with a NotBefore. Its errors never quote key material.
func (k SigningKey) Validate() error {
	if k.Private == nil || k.Private.N == nil {
		return errors.New("no private key")
	}
	if bits := k.Private.N.BitLen(); bits < minSigningBits {
		return fmt.Errorf("RSA key has %d bits, at least %d are required", bits, minSigningBits)
	}
	kid, err := keys.KID(&k.Private.PublicKey)
	if err != nil {
		return fmt.Errorf("key id: %w", err)
	}
	if k.ID != kid {
		return fmt.Errorf("kid is not the thumbprint of the key (%s)", kid)
	}
	if k.NotBefore.IsZero() {
		return fmt.Errorf("key %s: notBefore is missing", k.ID)
	}
	return nil
}

// SigningKind is the Kind of the platform signing keys; Signing is its value.
type SigningKind struct{}

// Signing makes, encodes and decodes platform signing keys.
var Signing SigningKind

var _ Kind[SigningKey] = Signing

func (SigningKind) String() string { return "platform signing keys" }

// DataKey is ltiv1.SecretKeyPlatformKeys.
func (SigningKind) DataKey() string { return ltiv1.SecretKeyPlatformKeys }

// NewKey generates an RSA-2048 key that signs from now+activationDelay. Times are UTC,
// whole seconds.
func (SigningKind) NewKey(now time.Time, activationDelay time.Duration) (SigningKey, error) {
	priv, err := keys.Generate()
	if err != nil {
		return SigningKey{}, fmt.Errorf("keyring: generating a signing key: %w", err)
	}
	kid, err := keys.KID(&priv.PublicKey)
	if err != nil {
		return SigningKey{}, fmt.Errorf("keyring: key id: %w", err)
	}
	return SigningKey{
		ID:        kid,
		Private:   priv,
		NotBefore: now.Add(activationDelay).UTC().Truncate(time.Second),
		Created:   now.UTC().Truncate(time.Second),
	}, nil
}

// signingKeyJSON is one platform signing key as stored in the service Secret.
type signingKeyJSON struct {
	KID        string    `json:"kid"`
	PrivateKey string    `json:"privateKey"` // PKCS#8 PEM
	NotBefore  time.Time `json:"notBefore"`
	Created    time.Time `json:"created"`
}

// Encode renders keys as the platform-keys.json of the service Secret: a JSON array of
// {"kid","privateKey" (PKCS#8 PEM),"notBefore","created" (RFC 3339)}, in signing order.
func (SigningKind) Encode(set []SigningKey) ([]byte, error) {
	if len(set) == 0 {
		return nil, errors.New("keyring: a platform key set needs at least one key")
	}
	sorted := append([]SigningKey(nil), set...)
	Sort(sorted)
	out := make([]signingKeyJSON, len(sorted))
	seen := make(map[string]bool, len(sorted))
	for i, k := range sorted {
		if err := k.Validate(); err != nil {
			return nil, fmt.Errorf("keyring: key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("keyring: duplicate key %s", k.ID)
		}
		seen[k.ID] = true
		pemKey, err := keys.EncodePrivateKey(k.Private)
		if err != nil {
			return nil, fmt.Errorf("keyring: key %s: %w", k.ID, err)
		}
		out[i] = signingKeyJSON{
			KID:        k.ID,
			PrivateKey: string(pemKey),
			NotBefore:  k.NotBefore.UTC(),
			Created:    k.Created.UTC(),
		}
	}
	return json.MarshalIndent(out, "", "  ") //nolint:gosec // G117: the key ring is serialized to be stored in its Kubernetes Secret
}

// Decode reads a platform-keys.json. It fails on anything but a non-empty array of RSA keys
// of at least 2048 bits, each with a notBefore and the kid that is its thumbprint, with
// distinct kids. The keys come back in signing order. Its errors never quote the data (it
// holds private keys).
func (SigningKind) Decode(data []byte) ([]SigningKey, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("platform key set is empty")
	}
	var in []signingKeyJSON
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
	out := make([]SigningKey, len(in))
	seen := make(map[string]bool, len(in))
	for i, kj := range in {
		priv, err := keys.ParsePrivateKey([]byte(kj.PrivateKey))
		if err != nil {
			return nil, fmt.Errorf("key %d: private key: %w", i, err)
		}
		k := SigningKey{ID: kj.KID, Private: priv, NotBefore: kj.NotBefore, Created: kj.Created}
		if err := k.Validate(); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("key %d: duplicate key %s", i, k.ID)
		}
		seen[k.ID] = true
		out[i] = k
	}
	Sort(out)
	return out, nil
}
