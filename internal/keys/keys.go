// Package keys handles RSA key material: the tool keys ltiop generates for each registration
// (PKCS#8 PEM in Secrets, RFC 7638 key ids, JWKs) and the public keys platforms give us.
package keys

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Bits is the size of the RSA keys ltiop generates.
const Bits = 2048

// minBits is the smallest RSA modulus accepted from anyone (RFC 7518 §3.3).
const minBits = 2048

// Generate returns a new RSA private key of Bits bits.
func Generate() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, Bits)
}

// EncodePrivateKey returns the key as a PKCS#8 "PRIVATE KEY" PEM block.
func EncodePrivateKey(key *rsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads a PKCS#8 (or, for keys brought from elsewhere, PKCS#1) PEM RSA key.
func ParsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
	}
	if err != nil {
		return nil, err
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, not RSA", key)
	}
	if rsaKey.N.BitLen() < minBits {
		return nil, fmt.Errorf("RSA key has %d bits, at least %d are required", rsaKey.N.BitLen(), minBits)
	}
	return rsaKey, nil
}

// PublicKeyPEM returns the public key as a PKIX "PUBLIC KEY" PEM block, the form LMSs accept.
func PublicKeyPEM(pub *rsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// KID returns the RFC 7638 SHA-256 thumbprint of the public key, base64url-encoded.
// Derived from the key itself, a kid can never name two different keys (SEC §6.3).
func KID(pub *rsa.PublicKey) (string, error) {
	k, err := jwk.Import(pub)
	if err != nil {
		return "", err
	}
	sum, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// PublicJWK returns the public key as a JWK with kid, alg RS256 and use sig (T-JWKS-04).
func PublicJWK(pub *rsa.PublicKey, kid string) (jwk.Key, error) {
	k, err := jwk.Import(pub)
	if err != nil {
		return nil, err
	}
	for name, value := range map[string]any{
		jwk.KeyIDKey:     kid,
		jwk.AlgorithmKey: jwa.RS256(),
		jwk.KeyUsageKey:  jwk.ForSignature,
	} {
		if err := k.Set(name, value); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// ParsePublicKeyPEM reads a PEM RSA public key: PKIX "PUBLIC KEY", PKCS#1 "RSA PUBLIC KEY",
// or the public key of a "CERTIFICATE" (some LMSs hand out certificates).
func ParsePublicKeyPEM(data string) (*rsa.PublicKey, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(data)))
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("unexpected PEM block %q (want PUBLIC KEY)", block.Type)
	}
	if err != nil {
		return nil, err
	}
	return checkRSAPublic(key)
}

// ParsePublicJWK reads one RSA public key given as a JWK. A private JWK is refused: it is
// a secret pasted by mistake, and keeping it would spread it further.
func ParsePublicJWK(data string) (*rsa.PublicKey, error) {
	var probe map[string]any
	if err := json.Unmarshal([]byte(data), &probe); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, isSet := probe["keys"]; isSet {
		return nil, errors.New("this is a key set; use method JWK_SET with its URL, or give one key")
	}
	if kty, _ := probe["kty"].(string); kty != "RSA" {
		return nil, fmt.Errorf("key type %q is not RSA", probe["kty"])
	}
	if _, private := probe["d"]; private {
		return nil, errors.New("this is a private key; give the platform's public key only")
	}
	k, err := jwk.ParseKey([]byte(data))
	if err != nil {
		return nil, err
	}
	var pub rsa.PublicKey
	if err := jwk.Export(k, &pub); err != nil {
		return nil, err
	}
	return checkRSAPublic(&pub)
}

func checkRSAPublic(key any) (*rsa.PublicKey, error) {
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, not an RSA public key", key)
	}
	if pub.N.BitLen() < minBits {
		return nil, fmt.Errorf("RSA key has %d bits, at least %d are required", pub.N.BitLen(), minBits)
	}
	return pub, nil
}
