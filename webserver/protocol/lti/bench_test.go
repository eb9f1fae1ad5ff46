package lti

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/test/utils/testcpu"
)

// cpuPerOp reports, beside the wall time, "cpu-µs/op": the CPU time of the whole process
// (the collector's threads included) per operation, which neighbours on a shared machine
// do not inflate. Call it before the loop; the returned func after it.
func cpuPerOp(b *testing.B) func() {
	start := testcpu.Process()
	return func() { b.ReportMetric(float64(testcpu.Process()-start)/float64(b.N)/1e3, "cpu-µs/op") }
}

// BenchmarkValidate is a full Validate of a ~3 KB Canvas-like launch.
func BenchmarkValidate(b *testing.B) {
	token := sign(b, testHeader(), canvasLikeClaims())
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	ctx, p := context.Background(), testPolicy()
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if _, e := Validate(ctx, token, testKeys, p); e != nil {
			b.Fatal(e)
		}
	}
	done()
	b.ReportMetric(float64(len(payload)), "payload-bytes")
}

// BenchmarkVerifyOnly is the signature share of BenchmarkValidate (verifyRS256: jwx's
// jwsbb over the signing input splitCompact found); BenchmarkVerifyGeneric is what
// jws.Verify costs for the same, BenchmarkVerifyCompactFast what jwx's compact fast
// path (used before) costs, and BenchmarkRSAFloor what crypto/rsa alone costs: the part
// of a verification no code of ours can shorten (it converts the *rsa.PublicKey to its
// FIPS form on every call, about a quarter of it; nothing in Go 1.26 or jwx keeps a
// prepared public key).
func BenchmarkVerifyOnly(b *testing.B) {
	t, e := splitCompact(sign(b, testHeader(), canvasLikeClaims()))
	if e != nil {
		b.Fatal(e)
	}
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if err := t.verifyRS256(&testKey.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
	done()
}

func BenchmarkVerifyCompactFast(b *testing.B) {
	token := []byte(sign(b, testHeader(), canvasLikeClaims()))
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if _, err := jws.VerifyCompactFast(&testKey.PublicKey, token, jwa.RS256()); err != nil {
			b.Fatal(err)
		}
	}
	done()
}

func BenchmarkRSAFloor(b *testing.B) {
	t, e := splitCompact(sign(b, testHeader(), canvasLikeClaims()))
	if e != nil {
		b.Fatal(e)
	}
	digest := sha256.Sum256([]byte(t.signed))
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if err := rsa.VerifyPKCS1v15(&testKey.PublicKey, crypto.SHA256, digest[:], t.signature); err != nil {
			b.Fatal(err)
		}
	}
	done()
}

func BenchmarkVerifyGeneric(b *testing.B) {
	token := []byte(sign(b, testHeader(), canvasLikeClaims()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jws.Verify(token, jws.WithCompact(), jws.WithKey(jwa.RS256(), &testKey.PublicKey)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseClaims(b *testing.B) {
	payload, err := json.Marshal(canvasLikeClaims())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if _, err := ParseClaims(payload); err != nil {
			b.Fatal(err)
		}
	}
	done()
}

func BenchmarkSimplifiedIDToken(b *testing.B) {
	payload, err := json.Marshal(canvasLikeClaims())
	if err != nil {
		b.Fatal(err)
	}
	c, err := ParseClaims(payload)
	if err != nil {
		b.Fatal(err)
	}
	pi := PlatformInfo{ID: "canvas", URL: testIssuer, ClientID: testClientID, Name: "Canvas"}
	b.ReportAllocs()
	for b.Loop() {
		if SimplifiedIDToken(c, pi) == nil {
			b.Fatal("nil")
		}
	}
}
