package lti

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// BenchmarkValidate is a full Validate of a ~3 KB Canvas-like launch.
func BenchmarkValidate(b *testing.B) {
	token := sign(b, testHeader(), canvasLikeClaims())
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	ctx, p := context.Background(), testPolicy()
	b.ReportAllocs()
	for b.Loop() {
		if _, e := Validate(ctx, token, testKeys, p); e != nil {
			b.Fatal(e)
		}
	}
	b.ReportMetric(float64(len(payload)), "payload-bytes")
}

// BenchmarkVerifyOnly is the signature share of BenchmarkValidate (verifyRS256: jwx's
// compact fast path); BenchmarkVerifyGeneric is what jws.Verify costs for the same.
func BenchmarkVerifyOnly(b *testing.B) {
	token := sign(b, testHeader(), canvasLikeClaims())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := verifyRS256(token, &testKey.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
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
	for b.Loop() {
		if _, err := ParseClaims(payload); err != nil {
			b.Fatal(err)
		}
	}
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
