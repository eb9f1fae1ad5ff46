// Package testjws signs JWTs as a platform or a tool would send them, including the broken
// and hostile ones a validator must refuse: tests of both sides of the protocol use it.
package testjws

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"maps"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// SignClaims signs claims under hdr with key (see Sign).
func SignClaims(tb testing.TB, hdr, claims map[string]any, key *rsa.PrivateKey) string {
	tb.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	return Sign(tb, hdr, payload, key)
}

// Sign makes a compact JWS of payload. A header with alg RS256 is signed by jwx; any other
// header is assembled by hand and signed as its alg says (see SignRaw). The alg "HS256-PEM"
// is sent as HS256, keyed with the PEM text of the public key.
func Sign(tb testing.TB, hdr map[string]any, payload []byte, key *rsa.PrivateKey) string {
	tb.Helper()
	if hdr["alg"] == "RS256" {
		h := jws.NewHeaders()
		for k, v := range hdr {
			if k == "alg" {
				continue
			}
			if err := h.Set(k, v); err != nil {
				tb.Fatal(err)
			}
		}
		tok, err := jws.Sign(payload, jws.WithKey(jwa.RS256(), key, jws.WithProtectedHeaders(h)))
		if err != nil {
			tb.Fatal(err)
		}
		return string(tok)
	}
	alg := hdr["alg"]
	if alg == "HS256-PEM" {
		hdr = maps.Clone(hdr)
		hdr["alg"] = "HS256"
	}
	hdrJSON, err := json.Marshal(hdr)
	if err != nil {
		tb.Fatal(err)
	}
	return SignRaw(tb, hdrJSON, payload, alg, key)
}

// SignRaw assembles header.payload.signature from raw JSON, signed as alg says: "none" is
// an empty signature; "HS256" an HMAC keyed with the DER public key and "HS256-PEM" with
// its PEM text (the algorithm-confusion attacks); "RS512" a genuine RSA SHA-512
// signature; anything else RS256.
func SignRaw(tb testing.TB, hdrJSON, payload []byte, alg any, key *rsa.PrivateKey) string {
	tb.Helper()
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(hdrJSON) + "." + enc.EncodeToString(payload)
	var sig []byte
	var err error
	switch alg {
	case "none":
	case "HS256", "HS256-PEM":
		der, derErr := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if derErr != nil {
			tb.Fatal(derErr)
		}
		secret := der
		if alg == "HS256-PEM" {
			secret = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(input))
		sig = mac.Sum(nil)
	case "RS512":
		sum := sha512.Sum512([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA512, sum[:])
	default:
		sum := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	}
	if err != nil {
		tb.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}
