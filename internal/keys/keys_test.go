package keys_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/test/utils/testcpu"
)

// Key generation is slow (more so under -race): every test shares these keys.
var (
	fixturesOnce sync.Once
	fixtures     struct {
		rsaA, rsaB *rsa.PrivateKey // 2048 bits
		rsa1024    *rsa.PrivateKey
		ec         *ecdsa.PrivateKey
		err        error
	}
)

func fixture(tb testing.TB) (rsaA, rsaB, rsa1024 *rsa.PrivateKey, ec *ecdsa.PrivateKey) {
	tb.Helper()
	fixturesOnce.Do(func() {
		f := &fixtures
		if f.rsaA, f.err = keys.Generate(); f.err != nil {
			return
		}
		if f.rsaB, f.err = keys.Generate(); f.err != nil {
			return
		}
		if f.rsa1024, f.err = rsa.GenerateKey(rand.Reader, 1024); f.err != nil {
			return
		}
		f.ec, f.err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	})
	if fixtures.err != nil {
		tb.Fatalf("generating fixture keys: %v", fixtures.err)
	}
	return fixtures.rsaA, fixtures.rsaB, fixtures.rsa1024, fixtures.ec
}

func pemString(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// rsaPublicJWK is the minimal public JWK of pub, written by hand (RFC 7518 §6.3.1).
func rsaPublicJWK(pub *rsa.PublicKey) map[string]any {
	return map[string]any{
		"kty": "RSA",
		"n":   b64(pub.N.Bytes()),
		"e":   b64(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// rsaPrivateJWK is the full private JWK of key (RFC 7518 §6.3.2).
func rsaPrivateJWK(key *rsa.PrivateKey) map[string]any {
	m := rsaPublicJWK(&key.PublicKey)
	m["d"] = b64(key.D.Bytes())
	m["p"] = b64(key.Primes[0].Bytes())
	m["q"] = b64(key.Primes[1].Bytes())
	m["dp"] = b64(key.Precomputed.Dp.Bytes())
	m["dq"] = b64(key.Precomputed.Dq.Bytes())
	m["qi"] = b64(key.Precomputed.Qinv.Bytes())
	return m
}

func ecPublicJWK(tb testing.TB, key *ecdsa.PrivateKey) map[string]any {
	tb.Helper()
	ek, err := key.PublicKey.ECDH()
	if err != nil {
		tb.Fatal(err)
	}
	raw := ek.Bytes() // 0x04 || X || Y
	return map[string]any{"kty": "EC", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
}

func selfSignedCert(tb testing.TB, pub, priv any) []byte {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lms.example.com"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		tb.Fatal(err)
	}
	return der
}

func pkixPEM(tb testing.TB, pub any) string {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	return pemString("PUBLIC KEY", der)
}

func pkcs8PEM(tb testing.TB, priv any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// thumbprint computes the RFC 7638 §3 SHA-256 thumbprint of an RSA public key without jwx:
// the required members in lexicographic order, no whitespace, base64url without padding
// of the big-endian unsigned integers.
func thumbprint(pub *rsa.PublicKey) string {
	e := big.NewInt(int64(pub.E)).Bytes()
	canonical := fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, b64(e), b64(pub.N.Bytes()))
	sum := sha256.Sum256([]byte(canonical))
	return b64(sum[:])
}

func TestGenerate(t *testing.T) {
	a, b, _, _ := fixture(t)
	for _, k := range []*rsa.PrivateKey{a, b} {
		if got := k.N.BitLen(); got != 2048 || keys.Bits != 2048 {
			t.Errorf("generated key has %d bits (Bits = %d), want 2048", got, keys.Bits)
		}
		if err := k.Validate(); err != nil {
			t.Errorf("generated key does not validate: %v", err)
		}
	}
	if a.Equal(b) {
		t.Error("two generated keys are equal")
	}
}

func TestEncodePrivateKeyRoundTrip(t *testing.T) {
	a, _, _, _ := fixture(t)
	data, err := keys.EncodePrivateKey(a)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(data)
	if block == nil {
		t.Fatalf("EncodePrivateKey output is not PEM: %q", data)
	}
	if block.Type != "PRIVATE KEY" {
		t.Errorf("PEM type = %q, want PRIVATE KEY (PKCS#8)", block.Type)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		t.Errorf("trailing data after the PEM block: %q", rest)
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		t.Errorf("block is not PKCS#8: %v", err)
	}
	got, err := keys.ParsePrivateKey(data)
	if err != nil {
		t.Fatalf("ParsePrivateKey(EncodePrivateKey(k)): %v", err)
	}
	if !got.Equal(a) {
		t.Error("round-tripped key differs from the original")
	}
}

func TestParsePrivateKey(t *testing.T) {
	a, _, small, ec := fixture(t)
	ecDER, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		want    *rsa.PrivateKey
		wantErr string
	}{
		{name: "PKCS#8", data: pkcs8PEM(t, a), want: a},
		{name: "PKCS#1", data: []byte(pemString("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(a))), want: a},
		{name: "PKCS#1 with surrounding text", data: []byte("key follows\n" + pemString("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(a)) + "\ntrailer"), want: a},
		{name: "empty", data: nil, wantErr: "no PEM block"},
		{name: "not PEM", data: []byte("this is not a key"), wantErr: "no PEM block"},
		{name: "garbage in a PRIVATE KEY block", data: []byte(pemString("PRIVATE KEY", []byte("garbage"))), wantErr: ""},
		{name: "garbage in an RSA PRIVATE KEY block", data: []byte(pemString("RSA PRIVATE KEY", []byte{0x30, 0x03, 0x02, 0x01, 0x00})), wantErr: ""},
		{name: "PKCS#1 bytes labelled PRIVATE KEY", data: []byte(pemString("PRIVATE KEY", x509.MarshalPKCS1PrivateKey(a))), wantErr: ""},
		{name: "EC key in PKCS#8", data: pkcs8PEM(t, ec), wantErr: "not RSA"},
		{name: "EC PRIVATE KEY block", data: []byte(pemString("EC PRIVATE KEY", ecDER)), wantErr: "unexpected PEM block"},
		{name: "1024-bit RSA PKCS#8", data: pkcs8PEM(t, small), wantErr: "1024 bits"},
		{name: "1024-bit RSA PKCS#1", data: []byte(pemString("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small))), wantErr: "1024 bits"},
		{name: "public key", data: []byte(pkixPEM(t, &a.PublicKey)), wantErr: "unexpected PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keys.ParsePrivateKey(tt.data)
			if tt.want != nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !got.Equal(tt.want) {
					t.Fatal("parsed key differs from the original")
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error")
			}
			if got != nil {
				t.Errorf("returned a key along with error %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

var base64URLNoPad = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestKID(t *testing.T) {
	a, b, _, _ := fixture(t)

	kidA, err := keys.KID(&a.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	again, err := keys.KID(&a.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if kidA != again {
		t.Errorf("KID is not stable: %q then %q", kidA, again)
	}
	// A copy of the key (no shared pointers) has the same kid.
	parsed, err := keys.ParsePrivateKey(pkcs8PEM(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if kidCopy, err := keys.KID(&parsed.PublicKey); err != nil || kidCopy != kidA {
		t.Errorf("KID of a re-parsed copy = %q, %v; want %q", kidCopy, err, kidA)
	}
	kidB, err := keys.KID(&b.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if kidA == kidB {
		t.Errorf("two different keys share kid %q", kidA)
	}

	for name, k := range map[string]*rsa.PrivateKey{"a": a, "b": b} {
		got, err := keys.KID(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if want := thumbprint(&k.PublicKey); got != want {
			t.Errorf("key %s: KID = %q, want RFC 7638 thumbprint %q", name, got, want)
		}
		if !base64URLNoPad.MatchString(got) {
			t.Errorf("key %s: KID %q is not base64url without padding", name, got)
		}
		if len(got) != 43 { // 32 bytes → 43 characters unpadded
			t.Errorf("key %s: KID %q has length %d, want 43", name, got, len(got))
		}
	}
}

// TestThumbprintRFC7638Example checks the test's own thumbprint helper against the
// worked example of RFC 7638 §3.1, so TestKID compares against a known-good value.
func TestThumbprintRFC7638Example(t *testing.T) {
	const n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
	nBytes, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil {
		t.Fatal(err)
	}
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(nBytes), E: 65537}
	const want = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
	if got := thumbprint(pub); got != want {
		t.Fatalf("thumbprint helper = %q, want RFC 7638 example %q", got, want)
	}
	if got, err := keys.KID(pub); err != nil || got != want {
		t.Errorf("KID(RFC 7638 example) = %q, %v; want %q", got, err, want)
	}
}

func TestPublicJWK(t *testing.T) {
	a, _, _, _ := fixture(t)
	kid, err := keys.KID(&a.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	k, err := keys.PublicJWK(&a.PublicKey, kid)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for member, want := range map[string]string{
		"kid": kid, "alg": "RS256", "use": "sig", "kty": "RSA",
		"n": b64(a.N.Bytes()), "e": "AQAB",
	} {
		if got, _ := m[member].(string); got != want {
			t.Errorf("member %q = %v, want %q", member, m[member], want)
		}
	}
	for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, ok := m[private]; ok {
			t.Errorf("public JWK carries private member %q: %s", private, raw)
		}
	}
	allowed := []string{"kid", "alg", "use", "kty", "n", "e"}
	for member := range m {
		if !slices.Contains(allowed, member) {
			t.Errorf("unexpected member %q in %s", member, raw)
		}
	}

	// What we publish, we also read back as the same key.
	back, err := keys.ParsePublicJWK(string(raw))
	if err != nil {
		t.Fatalf("ParsePublicJWK(PublicJWK) = %v", err)
	}
	if !back.Equal(&a.PublicKey) {
		t.Error("PublicJWK does not round-trip through ParsePublicJWK")
	}
}

func TestPublicKeyPEMRoundTrip(t *testing.T) {
	a, _, _, _ := fixture(t)
	s, err := keys.PublicKeyPEM(&a.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(s))
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("PublicKeyPEM is not a PUBLIC KEY PEM block: %q", s)
	}
	got, err := keys.ParsePublicKeyPEM(s)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&a.PublicKey) {
		t.Error("round-tripped public key differs")
	}
}

func TestParsePublicKeyPEM(t *testing.T) {
	a, _, small, ec := fixture(t)
	certRSA := pemString("CERTIFICATE", selfSignedCert(t, &a.PublicKey, a))
	certEC := pemString("CERTIFICATE", selfSignedCert(t, &ec.PublicKey, ec))
	certSmall := pemString("CERTIFICATE", selfSignedCert(t, &small.PublicKey, small))
	tests := []struct {
		name    string
		data    string
		want    *rsa.PublicKey
		wantErr string
	}{
		{name: "PKIX", data: pkixPEM(t, &a.PublicKey), want: &a.PublicKey},
		{name: "PKIX with surrounding whitespace", data: "\n\n  " + pkixPEM(t, &a.PublicKey) + "\n\t ", want: &a.PublicKey},
		{name: "PKCS#1 RSA PUBLIC KEY", data: pemString("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&a.PublicKey)), want: &a.PublicKey},
		{name: "self-signed certificate", data: certRSA, want: &a.PublicKey},
		{name: "empty", data: "", wantErr: "no PEM block"},
		{name: "no PEM", data: "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", wantErr: "no PEM block"},
		{name: "a JWK", data: mustJSON(t, rsaPublicJWK(&a.PublicKey)), wantErr: "no PEM block"},
		{name: "EC PKIX", data: pkixPEM(t, &ec.PublicKey), wantErr: "not an RSA public key"},
		{name: "EC certificate", data: certEC, wantErr: "not an RSA public key"},
		{name: "1024-bit PKIX", data: pkixPEM(t, &small.PublicKey), wantErr: "1024 bits"},
		{name: "1024-bit PKCS#1", data: pemString("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&small.PublicKey)), wantErr: "1024 bits"},
		{name: "1024-bit certificate", data: certSmall, wantErr: "1024 bits"},
		{name: "private key block", data: string(pkcs8PEM(t, a)), wantErr: "unexpected PEM block"},
		{name: "RSA PRIVATE KEY block", data: pemString("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(a)), wantErr: "unexpected PEM block"},
		{name: "CERTIFICATE REQUEST block", data: pemString("CERTIFICATE REQUEST", []byte{0x30, 0x00}), wantErr: "unexpected PEM block"},
		{name: "PKCS#1 bytes labelled PUBLIC KEY", data: pemString("PUBLIC KEY", x509.MarshalPKCS1PublicKey(&a.PublicKey)), wantErr: ""},
		{name: "PKIX bytes labelled RSA PUBLIC KEY", data: pemString("RSA PUBLIC KEY", mustPKIX(t, &a.PublicKey)), wantErr: ""},
		{name: "garbage certificate", data: pemString("CERTIFICATE", []byte("garbage")), wantErr: ""},
		{name: "garbage public key", data: pemString("PUBLIC KEY", []byte("garbage")), wantErr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keys.ParsePublicKeyPEM(tt.data)
			if tt.want != nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !got.Equal(tt.want) {
					t.Fatal("parsed key differs from the original")
				}
				return
			}
			if err == nil {
				t.Fatal("accepted, want an error")
			}
			if got != nil {
				t.Errorf("returned a key along with error %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func mustPKIX(tb testing.TB, pub any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	return der
}

func TestParsePublicJWK(t *testing.T) {
	a, _, small, ec := fixture(t)
	withMembers := func(m map[string]any, extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	pubA := rsaPublicJWK(&a.PublicKey)
	onlyD := withMembers(pubA, map[string]any{"d": b64(a.D.Bytes())})
	tests := []struct {
		name    string
		data    string
		want    *rsa.PublicKey
		wantErr string
	}{
		{name: "public RSA JWK", data: mustJSON(t, pubA), want: &a.PublicKey},
		{name: "public RSA JWK with kid alg use", data: mustJSON(t, withMembers(pubA, map[string]any{"kid": "k1", "alg": "RS256", "use": "sig"})), want: &a.PublicKey},
		{name: "public RSA JWK with whitespace", data: "\n  " + mustJSON(t, pubA) + "  \n", want: &a.PublicKey},
		{name: "key set", data: mustJSON(t, map[string]any{"keys": []any{pubA}}), wantErr: "key set"},
		{name: "key set with kty", data: mustJSON(t, withMembers(pubA, map[string]any{"keys": []any{pubA}})), wantErr: "key set"},
		{name: "EC JWK", data: mustJSON(t, ecPublicJWK(t, ec)), wantErr: "not RSA"},
		{name: "oct JWK", data: `{"kty":"oct","k":"GawgguFyGrWKav7AX4VKUg"}`, wantErr: "not RSA"},
		{name: "missing kty", data: `{"n":"AQAB","e":"AQAB"}`, wantErr: "not RSA"},
		{name: "kty not a string", data: `{"kty":1}`, wantErr: "not RSA"},
		{name: "lower-case kty", data: mustJSON(t, withMembers(pubA, map[string]any{"kty": "rsa"})), wantErr: "not RSA"},
		{name: "private RSA JWK", data: mustJSON(t, rsaPrivateJWK(a)), wantErr: "private key"},
		{name: "RSA JWK with only d", data: mustJSON(t, onlyD), wantErr: "private key"},
		{name: "1024-bit RSA JWK", data: mustJSON(t, rsaPublicJWK(&small.PublicKey)), wantErr: "1024 bits"},
		{name: "RSA JWK without n", data: `{"kty":"RSA","e":"AQAB"}`, wantErr: ""},
		{name: "not JSON", data: "-----BEGIN PUBLIC KEY-----", wantErr: "not a JSON object"},
		{name: "empty", data: "", wantErr: "not a JSON object"},
		{name: "JSON array", data: "[]", wantErr: "not a JSON object"},
		{name: "JSON string", data: `"RSA"`, wantErr: "not a JSON object"},
		{name: "JSON null", data: "null", wantErr: "not RSA"},
		{name: "truncated", data: mustJSON(t, pubA)[:40], wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keys.ParsePublicJWK(tt.data)
			if tt.want != nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !got.Equal(tt.want) {
					t.Fatal("parsed key differs from the original")
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %s, want an error", tt.data)
			}
			if got != nil {
				t.Errorf("returned a key along with error %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), b64(a.D.Bytes())) {
				t.Errorf("error repeats the private exponent")
			}
		})
	}
}

// checkAccepted is the property of both fuzz targets: an accepted key is a usable RSA
// public key of at least 2048 bits.
func checkAccepted(t *testing.T, pub *rsa.PublicKey, err error) {
	t.Helper()
	if err != nil {
		if pub != nil {
			t.Fatalf("returned a key along with error %v", err)
		}
		return
	}
	if pub == nil || pub.N == nil {
		t.Fatalf("accepted without a key: %#v", pub)
	}
	if bits := pub.N.BitLen(); bits < 2048 {
		t.Fatalf("accepted a %d-bit RSA key", bits)
	}
}

func FuzzParsePublicJWK(f *testing.F) {
	a, _, small, ec := fixture(f)
	pubA := rsaPublicJWK(&a.PublicKey)
	kid, err := keys.KID(&a.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	published, err := keys.PublicJWK(&a.PublicKey, kid)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		mustJSON(f, pubA),
		mustJSON(f, published),
		mustJSON(f, rsaPrivateJWK(a)),
		mustJSON(f, rsaPublicJWK(&small.PublicKey)),
		mustJSON(f, ecPublicJWK(f, ec)),
		mustJSON(f, map[string]any{"keys": []any{pubA}}),
		`{"kty":"oct","k":"GawgguFyGrWKav7AX4VKUg"}`,
		`{"kty":"RSA"}`,
		`{"kty":"RSA","n":"","e":""}`,
		`{"kty":"RSA","n":"AQAB","e":"AQAB"}`,
		`{"kty":"RSA","n":null,"e":null}`,
		`{"kty":"RSA","n":1,"e":2}`,
		`{"kty":"RSA","n":"` + pubA["n"].(string) + `","e":"AAAAAAAAAAAAAQAB"}`,
		`{"kty":"RSA","n":"` + pubA["n"].(string) + `","e":"AA"}`,
		`{"kty":"RSA","n":"` + pubA["n"].(string) + `"}`,
		"null",
		"[]",
		"",
		"not json",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		pub, err := keys.ParsePublicJWK(data)
		checkAccepted(t, pub, err)
	})
}

func FuzzParsePublicKeyPEM(f *testing.F) {
	a, _, small, ec := fixture(f)
	valid, err := keys.PublicKeyPEM(&a.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		valid,
		pemString("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&a.PublicKey)),
		pemString("CERTIFICATE", selfSignedCert(f, &a.PublicKey, a)),
		pemString("CERTIFICATE", selfSignedCert(f, &ec.PublicKey, ec)),
		pkixPEM(f, &ec.PublicKey),
		pkixPEM(f, &small.PublicKey),
		pemString("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&small.PublicKey)),
		string(pkcs8PEM(f, a)),
		pemString("PUBLIC KEY", nil),
		pemString("CERTIFICATE", []byte("garbage")),
		"-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
		"-----BEGIN PUBLIC KEY-----\nAAAA\n",
		"",
		"not pem",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		pub, err := keys.ParsePublicKeyPEM(data)
		checkAccepted(t, pub, err)
	})
}

func BenchmarkKID(b *testing.B) {
	a, _, _, _ := fixture(b)
	for b.Loop() {
		if _, err := keys.KID(&a.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParsePrivateKey: what each replica's registry and each reconcile of an existing
// key pay per key Secret (the PKCS#8 parse includes crypto/rsa's checks of the key).
func BenchmarkParsePrivateKey(b *testing.B) {
	a, _, _, _ := fixture(b)
	pemBytes, err := keys.EncodePrivateKey(a)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := keys.ParsePrivateKey(pemBytes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerate: the RSA floor of a new registration. "cpu-ms/op" is the process's CPU
// time per key, which a busy machine inflates less than the wall time (the prime search
// makes single keys vary: use a few dozen).
func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	cpu := testcpu.Process()
	for b.Loop() {
		if _, err := keys.Generate(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(testcpu.Process()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}
