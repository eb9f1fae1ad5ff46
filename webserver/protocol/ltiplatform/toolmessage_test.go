package ltiplatform

// Test helpers for tool-signed JWTs (deep-linking responses, client assertions).
// Everything here is prefixed toolTest so that other test files of the package
// can have their own helpers; there is no TestMain (keys are made once, lazily).

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

const (
	toolTestIssuer     = "https://ltiop.example.edu"                 // the platform (ltiop)
	toolTestTokenURL   = "https://ltiop.example.edu/lti/token"       // its token endpoint
	toolTestClientID   = "7d1c5b2a-tool-quizzes"                     // the tool's client_id
	toolTestKID        = "quizzes-2025-06"                           // the tool's published kid
	toolTestDeployment = "deployment-3f1c2a9b"                       // the deployment launched
	toolTestData       = "csrf:c7fbba78-7b75-46e3-9201-11e6d5f36f53" // the request's data
	toolTestSkew       = 30 * time.Second
)

// toolTestNow is the clock of every verification in the tests.
var toolTestNow = time.Unix(1_750_000_000, 0)

// toolTestKeys are the tool's key, published as toolTestKID, and a key it does not publish.
func toolTestKeys(tb testing.TB) (tool, other *rsa.PrivateKey) {
	tb.Helper()
	return testkeys.RSAKey(tb, 0), testkeys.RSAKey(tb, 1)
}

// toolTestKeyFunc is a tool registered with a JWKS: one key, toolTestKID.
func toolTestKeyFunc(tb testing.TB) lti.KeyFunc {
	tool, _ := toolTestKeys(tb)
	return func(_ context.Context, kid string) (*rsa.PublicKey, error) {
		if kid == toolTestKID {
			return &tool.PublicKey, nil
		}
		return nil, fmt.Errorf("jwks of %s: %w", toolTestClientID, lti.ErrUnknownKey)
	}
}

// toolTestStaticKeyFunc is a tool registered with one static public key: any kid.
func toolTestStaticKeyFunc(tb testing.TB) lti.KeyFunc {
	tool, _ := toolTestKeys(tb)
	return func(context.Context, string) (*rsa.PublicKey, error) { return &tool.PublicKey, nil }
}

// toolTestDownKeyFunc is a JWKS endpoint that cannot be reached.
func toolTestDownKeyFunc(context.Context, string) (*rsa.PublicKey, error) {
	return nil, errors.New("GET https://tool.example.com/jwks: connection refused")
}

func toolTestHeader() map[string]any {
	return map[string]any{"alg": "RS256", "kid": toolTestKID, "typ": "JWT"}
}

// toolTestCheckError asserts the exact code, rule and status of e.
func toolTestCheckError(t *testing.T, e *apierr.Error, code, rule string, status int) {
	t.Helper()
	if e == nil {
		t.Fatalf("no error; want %s [%s] %d", code, rule, status)
	}
	if e.Code != code || e.Rule != rule || e.Status != status {
		t.Fatalf("got %s [%s] %d (%q); want %s [%s] %d", e.Code, e.Rule, e.Status, e.Description, code, rule, status)
	}
	if e.Description == "" {
		t.Error("empty description")
	}
}

// TestToolJWTStructure: what both tool JWTs refuse before any key is looked up,
// with the status, OAuth value and rule of each kind.
func TestToolJWTStructure(t *testing.T) {
	tool, _ := toolTestKeys(t)
	enc := base64.RawURLEncoding
	valid := testjws.SignClaims(t, toolTestHeader(), map[string]any{"iss": toolTestClientID}, tool)
	parts := strings.Split(valid, ".")
	hdrOK := parts[0]
	payloadOK := parts[1]
	cases := []struct {
		name, token string
	}{
		{"empty", ""},
		{"blank", "  \t "},
		{"one part", hdrOK},
		{"two parts", hdrOK + "." + payloadOK},
		{"four parts", valid + ".x"},
		{"five parts (JWE)", "a.b.c.d.e"},
		{"too large", hdrOK + "." + strings.Repeat("A", MaxToolJWTSize) + "." + parts[2]},
		{"line break", hdrOK + ".\n" + payloadOK + "." + parts[2]},
		{"header not base64url", "eyJ+." + payloadOK + "." + parts[2]},
		{"header padded", hdrOK + "=." + payloadOK + "." + parts[2]},
		{"empty header", "." + payloadOK + "." + parts[2]},
		{"header not JSON", enc.EncodeToString([]byte("alg=RS256")) + "." + payloadOK + "." + parts[2]},
		{"header an array", enc.EncodeToString([]byte(`["RS256"]`)) + "." + payloadOK + "." + parts[2]},
		{"header trailing data", enc.EncodeToString([]byte(`{"alg":"RS256"}{}`)) + "." + payloadOK + "." + parts[2]},
		{"header without alg", enc.EncodeToString([]byte(`{"kid":"`+toolTestKID+`"}`)) + "." + payloadOK + "." + parts[2]},
		{"kid a number", enc.EncodeToString([]byte(`{"alg":"RS256","kid":7}`)) + "." + payloadOK + "." + parts[2]},
		{"crit header", enc.EncodeToString([]byte(`{"alg":"RS256","crit":["exp"],"exp":1}`)) + "." + payloadOK + "." + parts[2]},
		{"b64 header", enc.EncodeToString([]byte(`{"alg":"RS256","b64":false}`)) + "." + payloadOK + "." + parts[2]},
		{"payload not base64url", hdrOK + ".e$$." + parts[2]},
		{"empty payload", hdrOK + ".." + parts[2]},
		{"payload not JSON", hdrOK + "." + enc.EncodeToString([]byte("iss=tool")) + "." + parts[2]},
		{"payload a string", hdrOK + "." + enc.EncodeToString([]byte(`"tool"`)) + "." + parts[2]},
		{"payload truncated", hdrOK + "." + enc.EncodeToString([]byte(`{"iss":"tool"`)) + "." + parts[2]},
		{"signature not base64url", hdrOK + "." + payloadOK + ".sig+/"},
		{"signature too large", hdrOK + "." + payloadOK + "." + strings.Repeat("A", 2000)},
	}
	for _, tc := range cases {
		t.Run("P-DLR-01 "+tc.name, func(t *testing.T) {
			r, e := VerifyDeepLinkingResponse(context.Background(), tc.token, toolTestDLRequest(),
				toolTestKeyFunc(t), toolTestNow, toolTestSkew)
			toolTestCheckError(t, e, CodeInvalidToken, "P-DLR-01", 400)
			if r != nil || e.OAuth != "" {
				t.Fatalf("response %v, OAuth %q", r, e.OAuth)
			}
		})
		t.Run("P-TOK-03 "+tc.name, func(t *testing.T) {
			a, e := VerifyClientAssertion(context.Background(), tc.token, toolTestClientID,
				[]string{toolTestTokenURL}, toolTestKeyFunc(t), toolTestNow, toolTestSkew)
			toolTestCheckError(t, e, CodeInvalidToken, "P-TOK-03", 401)
			if a != nil || e.OAuth != OAuthInvalidClient {
				t.Fatalf("assertion %v, OAuth %q", a, e.OAuth)
			}
			id, e := PeekAssertionClient(tc.token)
			toolTestCheckError(t, e, CodeInvalidToken, "P-TOK-03", 401)
			if id != "" {
				t.Fatalf("client %q", id)
			}
		})
	}
}

// TestToolJWTKeyLookup: KeyFunc gets the kid ("" without one), and its failures
// map to MISSING_KID, UNKNOWN_KID or a 503, never to a blamed token.
func TestToolJWTKeyLookup(t *testing.T) {
	tool, _ := toolTestKeys(t)
	var got []string
	record := func(_ context.Context, kid string) (*rsa.PublicKey, error) {
		got = append(got, kid)
		return &tool.PublicKey, nil
	}
	noKid := toolTestHeader()
	delete(noKid, "kid")
	for _, hdr := range []map[string]any{toolTestHeader(), noKid} {
		token := testjws.SignClaims(t, hdr, toolTestDLClaims(), tool)
		if _, e := VerifyDeepLinkingResponse(context.Background(), token, toolTestDLRequest(), record, toolTestNow, toolTestSkew); e != nil {
			t.Fatal(e)
		}
	}
	if len(got) != 2 || got[0] != toolTestKID || got[1] != "" {
		t.Fatalf("KeyFunc got kids %q", got)
	}

	nilKey := func(context.Context, string) (*rsa.PublicKey, error) { return nil, nil }
	zeroKey := func(context.Context, string) (*rsa.PublicKey, error) { return &rsa.PublicKey{}, nil }
	canceled := func(ctx context.Context, _ string) (*rsa.PublicKey, error) { return nil, ctx.Err() }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	token := testjws.SignClaims(t, toolTestHeader(), toolTestDLClaims(), tool)
	for name, kf := range map[string]lti.KeyFunc{"error": toolTestDownKeyFunc, "nil key": nilKey, "zero key": zeroKey, "canceled": canceled} {
		t.Run("P-DLR-01 key set "+name, func(t *testing.T) {
			r, e := VerifyDeepLinkingResponse(ctx, token, toolTestDLRequest(), kf, toolTestNow, toolTestSkew)
			toolTestCheckError(t, e, CodeKeySetUnavailable, "P-DLR-01", 503)
			if r != nil || e.OAuth != OAuthTemporarilyUnavailable {
				t.Fatalf("response %v, OAuth %q", r, e.OAuth)
			}
		})
	}
}

func TestToolJWTNumericDate(t *testing.T) {
	for raw, want := range map[string]int64{
		"0": 0, "1750000000": 1750000000, "1750000000.9": 1750000000, "-0.5": -1, "1.75e9": 1750000000,
		"9007199254740992": 1 << 53, "-9007199254740992": -(1 << 53),
	} {
		if got, ok := toolJWTNumericDate(raw); !ok || got != want {
			t.Errorf("%s: got %d, %v; want %d", raw, got, ok, want)
		}
	}
	for _, raw := range []string{"", "null", `"1750000000"`, "true", "9007199254740993", "1e400", "-1e300", "[1]", "{}"} {
		if got, ok := toolJWTNumericDate(raw); ok {
			t.Errorf("%s: accepted as %d", raw, got)
		}
	}
}

func TestToolJWTTruncate(t *testing.T) {
	if got := toolJWTTruncate("ééé", 3); got != "é…" {
		t.Fatalf("got %q", got)
	}
	if got := toolJWTTruncate("abc", 3); got != "abc" {
		t.Fatalf("got %q", got)
	}
}
