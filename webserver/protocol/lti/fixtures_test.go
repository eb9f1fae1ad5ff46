package lti

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixturesDir holds real Canvas, Blackboard, Moodle and spec payloads (decoded and
// unsigned), copied from the shared fixtures into the repository's testdata/lms.
var fixturesDir = filepath.Join("..", "..", "..", "testdata", "lms")

type fixture struct {
	name   string
	claims map[string]any
	kid    string // from <name>_header.json when there is one
}

// launchFixtures returns the fixtures whose payload is an id_token of a message
// type Validate handles. Headers, registrations, configurations, token
// responses, client assertions, deep linking responses and the JS literal
// (canvas_dl_request.js.txt) are skipped.
func launchFixtures(tb testing.TB) []fixture {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(fixturesDir, "*.json"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("LMS fixtures not found in %s: %v", fixturesDir, err)
	}
	var out []fixture
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		if strings.HasSuffix(name, "_header") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			continue // not a JSON object
		}
		mt, _ := m[ClaimMessageType].(string)
		if mt != MessageResourceLink && mt != MessageDeepLinking {
			continue
		}
		f := fixture{name: name, claims: m, kid: testKID}
		if hb, err := os.ReadFile(filepath.Join(fixturesDir, name+"_header.json")); err == nil {
			var h map[string]any
			if json.Unmarshal(hb, &h) == nil {
				if kid, ok := h["kid"].(string); ok && kid != "" {
					f.kid = kid
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// fixturePayloads returns the raw payload bytes of every fixture, for fuzz seeds.
func fixturePayloads() [][]byte {
	paths, _ := filepath.Glob(filepath.Join(fixturesDir, "*"))
	var out [][]byte
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// TestFixturesValidate re-signs every real launch payload with the test key, with
// exp/iat moved to the test clock (keeping each platform's token lifetime), and
// validates it against a policy built from the fixture's own values.
func TestFixturesValidate(t *testing.T) {
	fixtures := launchFixtures(t)
	if len(fixtures) < 8 {
		t.Fatalf("only %d launch fixtures found", len(fixtures))
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			claims := f.claims
			lifetime := int64(3600)
			if exp, ok := claims["exp"].(float64); ok {
				if iat, ok := claims["iat"].(float64); ok && exp > iat {
					lifetime = int64(exp - iat) // Moodle: 60 s
				}
			}
			claims["iat"] = testNow.Unix()
			claims["exp"] = testNow.Unix() + lifetime

			str := func(k string) string { s, _ := claims[k].(string); return s }
			clientID := str("aud")
			if clientID == "" {
				clientID = str("azp")
			}
			if arr, ok := claims["aud"].([]any); ok && clientID == "" && len(arr) == 1 {
				clientID, _ = arr[0].(string)
			}
			p := Policy{
				Issuer:                str("iss"),
				ClientID:              clientID,
				ExpectedNonce:         str("nonce"),
				DeploymentIDs:         []string{str(ClaimDeploymentID)},
				ExpectedDeploymentID:  str(ClaimDeploymentID),
				ExpectedTargetLinkURI: str(ClaimTargetLinkURI),
				Now:                   testNow,
			}
			hdr := testHeader()
			hdr["kid"] = f.kid
			keys := func(_ context.Context, kid string) (*rsa.PublicKey, error) {
				if kid == f.kid {
					return &testKey.PublicKey, nil
				}
				return nil, ErrUnknownKey
			}
			c, e := Validate(context.Background(), sign(t, hdr, claims), keys, p)
			if e != nil {
				t.Fatalf("rejected: %v", e)
			}

			tok := SimplifiedIDToken(c, PlatformInfo{ID: f.name, URL: p.Issuer, ClientID: clientID, Name: f.name})
			if tok.User.ID != str("sub") || tok.User.ID == "" {
				t.Errorf("user.id %q, sub %q", tok.User.ID, str("sub"))
			}
			if len(tok.User.Roles) == 0 {
				t.Errorf("no roles from %v", claims[ClaimRoles])
			}
			if tok.Platform.DeploymentID != str(ClaimDeploymentID) || tok.Platform.ClientID != clientID {
				t.Errorf("platform %+v", tok.Platform)
			}
			mt := str(ClaimMessageType)
			if tok.Launch == nil || tok.Launch.Type != mt || tok.Launch.Custom == nil {
				t.Fatalf("launch %+v", tok.Launch)
			}
			if tok.Services.DeepLinking.Available != (mt == MessageDeepLinking) {
				t.Errorf("deepLinking.available = %v for %s", tok.Services.DeepLinking.Available, mt)
			}
			if mt == MessageResourceLink && (tok.Launch.ResourceLink == nil || tok.Launch.ResourceLink.ID == "") {
				t.Errorf("resourceLink %+v", tok.Launch.ResourceLink)
			}
			if ctx, ok := claims[ClaimContext].(map[string]any); ok {
				if tok.Launch.Context == nil || tok.Launch.Context.ID != ctx["id"] || len(tok.Launch.Context.Type) == 0 {
					t.Errorf("context %+v from %v", tok.Launch.Context, ctx)
				}
			}
			_, hasNRPS := claims[ClaimNRPS]
			if tok.Services.NamesAndRoles.Available != hasNRPS {
				t.Errorf("namesAndRoles.available = %v", tok.Services.NamesAndRoles.Available)
			}
			_, hasGroups := claims[ClaimGroups]
			if tok.Services.Groups.Available != hasGroups || tok.Services.Groups.GroupSets != hasGroups {
				t.Errorf("groups %+v, claim %v", tok.Services.Groups, claims[ClaimGroups])
			}
			b, err := json.Marshal(tok)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(":null")) {
				t.Errorf("null in %s", b)
			}
		})
	}
}
