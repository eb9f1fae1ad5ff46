package signing

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/keyring"
)

func BenchmarkSign(b *testing.B) {
	k := mustKeyring(b, fixtureKey(b, 0, t0.Add(-time.Hour)), fixtureKey(b, 1, t0.Add(time.Hour)))
	b.ReportAllocs()
	var tok string
	for b.Loop() {
		var err error
		if tok, err = k.Sign(ltiwire.TypeJWT, idTokenClaims); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tok)), "token-bytes")
}

// BenchmarkRSASignFloor is what the RSA signature alone costs (SHA-256 and PKCS #1 v1.5 over
// the same signing input): Sign costs this plus jwx's header and encoding work.
func BenchmarkRSASignFloor(b *testing.B) {
	key := fixtureKey(b, 0, t0).Private
	k := mustKeyring(b, fixtureKey(b, 0, t0))
	tok, err := k.SignAt(t0, ltiwire.TypeJWT, idTokenClaims)
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(tok[:len(tok)-342-1]) // header.payload; an RS256 signature is 342 characters
	b.ReportAllocs()
	for b.Loop() {
		sum := sha256.Sum256(input)
		if _, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJWKS(b *testing.B) {
	k := mustKeyring(b, fixtureKey(b, 0, t0.Add(-time.Hour)), fixtureKey(b, 1, t0.Add(time.Hour)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(k.JWKS())
	}
	if n == 0 {
		b.Fatal("empty JWKS")
	}
}

// BenchmarkReplace is the cost of a key set change (once per Secret update): validation,
// headers and the JWKS.
func BenchmarkReplace(b *testing.B) {
	set := []keyring.SigningKey{fixtureKey(b, 0, t0.Add(-time.Hour)), fixtureKey(b, 1, t0.Add(time.Hour))}
	k := mustKeyring(b, set...)
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Replace(set); err != nil {
			b.Fatal(err)
		}
	}
}
