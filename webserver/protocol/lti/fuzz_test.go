package lti

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

func claimSeeds(f *testing.F) {
	for _, m := range []map[string]any{rlrClaims(), dlClaims(), canvasLikeClaims()} {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range fixturePayloads() {
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `{"iss":null}`, `{"":1e700}`, `{"aud":["a",1]}`, `{"exp":1e400}`, `{"exp":-0.5}`, `{"a":"\ud800"}`,
		`{"https:\/\/purl.imsglobal.org\/spec\/lti\/claim\/custom":{"x":null,"y":[{}],"z":1.0e2}}`,
		`{"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings":{"accept_types":",,a, ,b"}}`,
		"{\"\xff\":\"\xfe\"}", ` [ ] `, `{"a":{"b":{"c":[[[]]]}}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParseClaims: no input panics, and the string claims agree with what
// encoding/json decodes from the same payload.
func FuzzParseClaims(f *testing.F) {
	claimSeeds(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := ParseClaims(payload)
		// The oracle: encoding/json, with UseNumber so that numbers beyond float64
		// (valid JSON, e.g. 1e700) do not fail its decode.
		var generic map[string]any
		isObject := json.Valid(payload) && kindOf(trimJSON(string(payload))) == kindObject
		if isObject {
			dec := json.NewDecoder(bytes.NewReader(payload))
			dec.UseNumber()
			if err := dec.Decode(&generic); err != nil {
				t.Fatalf("encoding/json cannot decode a valid object: %v", err)
			}
		}
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T", err)
			}
			if e.Code == CodeInvalidToken && isObject {
				t.Fatalf("a JSON object rejected as not an object: %v", err)
			}
			if e.Code != CodeInvalidToken && c == nil {
				t.Fatal("type error without the partly decoded claims")
			}
		} else if !isObject || c == nil {
			t.Fatalf("accepted a payload encoding/json does not decode as an object (%v)", c)
		}
		if c == nil {
			return
		}
		for key, got := range map[string]string{
			"iss": c.Issuer, "sub": c.Subject, "nonce": c.Nonce, "azp": c.AuthorizedParty,
			ClaimMessageType: c.MessageType, ClaimDeploymentID: c.DeploymentID, ClaimVersion: c.Version,
		} {
			if want, ok := generic[key].(string); ok && got != want {
				t.Fatalf("%s = %q, encoding/json says %q", key, got, want)
			} else if !ok && got != "" {
				t.Fatalf("%s = %q, encoding/json has %v", key, got, generic[key])
			}
		}
		if custom, ok := generic[ClaimCustom].(map[string]any); ok {
			for k, v := range custom {
				if s, isStr := v.(string); isStr && c.Custom[k] != s {
					t.Fatalf("custom[%q] = %q, encoding/json says %q", k, c.Custom[k], s)
				}
				if _, kept := c.Custom[k]; kept != (v != nil) {
					t.Fatalf("custom[%q]: kept %v for %v", k, kept, v)
				}
			}
		}
		tok := SimplifiedIDToken(c, PlatformInfo{ID: "p"})
		if _, err := json.Marshal(tok); err != nil {
			t.Fatal(err)
		}
		if tok.User.Roles == nil || tok.Launch.Custom == nil {
			t.Fatal("nil roles or custom")
		}
	})
}

// FuzzValidate: no token panics Validate, which returns claims or an error, never
// both; a malformed token is INVALID_TOKEN, 400.
func FuzzValidate(f *testing.F) {
	f.Add(sign(f, testHeader(), rlrClaims()))
	f.Add(sign(f, map[string]any{"alg": "none"}, rlrClaims()))
	f.Add(testjws.SignRaw(f, []byte(`{}`), []byte(`{"name":"badltilaunch"}`), "RS256", testKey))
	enc := base64.RawURLEncoding
	for _, b := range fixturePayloads() {
		f.Add(enc.EncodeToString([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc.EncodeToString(b) + ".c2ln")
	}
	for _, s := range []string{"", ".", "..", "...", "a.b.c", "e30.e30.", "e30.e30.e30", " e30.e30. ", "e30\n.e30."} {
		f.Add(s)
	}
	keys := func(context.Context, string) (*rsa.PublicKey, error) { return &testKey.PublicKey, nil }
	f.Fuzz(func(t *testing.T, token string) {
		c, e := Validate(context.Background(), token, keys, testPolicy())
		if (e == nil) == (c == nil) {
			t.Fatalf("Validate: claims %v with error %v", c, e)
		}
		// What Validate accepts, jwx's own compact verification accepts, with the same payload.
		if c != nil {
			payload, err := jws.VerifyCompactFast(&testKey.PublicKey, []byte(strings.TrimSpace(token)), jwa.RS256())
			if err != nil || !bytes.Equal(payload, c.Raw) {
				t.Fatalf("Validate accepted what jws.VerifyCompactFast refuses (%v) or reads otherwise", err)
			}
		}
		if e != nil && e.Code == CodeInvalidToken && e.Status != 400 {
			t.Fatalf("Validate error %v", e)
		}
	})
}

// FuzzDecodeString: the reader's string decoding is byte-for-byte encoding/json's.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`""`, `"a\/b"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\udc00\ud800\udc00"`, "\"\xff\"", `"\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var want string
		if json.Unmarshal([]byte(lit), &want) != nil || kindOf(lit) != kindString {
			return
		}
		if got := decodeString(trimJSON(lit)); got != want {
			t.Fatalf("decodeString(%q) = %q, want %q", lit, got, want)
		}
	})
}
