package sessions

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	kflate "github.com/klauspost/compress/flate"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"
)

func BenchmarkSealLTIK(b *testing.B) {
	k := testKeyring(b)
	payload := canvasClaims(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	var tok string
	for b.Loop() {
		var err error
		if tok, err = k.Seal(PurposeLTIK, payload, 24*time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tok)), "token-bytes")
}

func BenchmarkOpenLTIK(b *testing.B) {
	k := testKeyring(b)
	payload := canvasClaims(b)
	tok, err := k.Seal(PurposeLTIK, payload, 24*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, _, err := k.Open(PurposeLTIK, tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// The generic jwx path, for comparison: what Seal and Open would cost with
// jwe.WithCompress and jwe.Decrypt.

func BenchmarkGenericJWXSealLTIK(b *testing.B) {
	key := mustKey(b, t0, 0)
	env := appendEnvelope(nil, PurposeLTIK, 2, 1, newTokenID(), canvasClaims(b))
	b.ReportAllocs()
	for b.Loop() {
		h, _ := protectedHeaders(key.ID, PurposeLTIK)
		if _, err := jwe.Encrypt(env, jwe.WithKey(jwa.DIRECT(), key.Secret), jwe.WithContentEncryption(jwa.A256GCM()),
			jwe.WithCompress(jwa.Deflate()), jwe.WithProtectedHeaders(h)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenericJWXOpenLTIK(b *testing.B) {
	key := mustKey(b, t0, 0)
	k := fixedKeyring(b, t0, key)
	tok := []byte(seal(b, k, PurposeLTIK, canvasClaims(b), time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jwe.Decrypt(tok, jwe.WithKey(jwa.DIRECT(), key.Secret)); err != nil {
			b.Fatal(err)
		}
	}
}

// A login state: small, mostly random ids. Stored rather than compressed (storeBelow).
var statePayload = []byte(`{"i":"Zk2p9QeXb1c8R0tY","b":"q3Vn8dKfP0sLx2mB7wE1yA","p":"canvas-prod","u":"0b6b3a0e-6f4c-4a51-9d35-2b3b4c5d6e7f",` +
	`"n":"h7Jd0sKq2LmNp4RtUv6wXy","t":"https://lti.example.com/lti/launch","d":"1:4dde05e8ca1973bcca9bffc13e1548820eee93a3"}`)

func BenchmarkSealState(b *testing.B) {
	k := testKeyring(b)
	b.ReportAllocs()
	var tok string
	for b.Loop() {
		var err error
		if tok, err = k.Seal(PurposeState, statePayload, 10*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tok)), "token-bytes")
}

func BenchmarkOpenState(b *testing.B) {
	k := testKeyring(b)
	tok, err := k.Seal(PurposeState, statePayload, 10*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := k.Open(PurposeState, tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// jwe.Parse alone, on a state token: most of what OpenState costs (the header JSON goes
// through jwx's generic header decoding; jwx has no compact JWE fast path).
func BenchmarkJWXParseState(b *testing.B) {
	tok, err := testKeyring(b).Seal(PurposeState, statePayload, 10*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jwe.ParseString(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// The ltik's deflate at other levels than Seal's (BestSpeed), for weighing CPU against the
// token's length (issue #25): b64-bytes is the compressed envelope as it appears in the
// token. Stored (0) costs nothing and makes the ltik 2.4 times as long; Huffman-only (-2)
// saves about a quarter of the deflate and makes it 1.6 times as long.
func BenchmarkLTIKDeflateLevels(b *testing.B) {
	now := time.Now().Unix()
	env := appendEnvelope(nil, PurposeLTIK, now, now, newTokenID(), canvasClaims(b))
	for _, level := range []int{kflate.NoCompression, kflate.HuffmanOnly, kflate.BestSpeed, 2} {
		b.Run(fmt.Sprint("level", level), func(b *testing.B) {
			var out bytes.Buffer
			w, err := kflate.NewWriter(&out, level)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				w.Reset(&out)
				if _, err := w.Write(env); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(base64.RawURLEncoding.EncodedLen(out.Len())), "b64-bytes")
		})
	}
}
