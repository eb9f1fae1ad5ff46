package lti

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

type validateCase struct {
	name   string
	claims func(c map[string]any)     // mutates a copy of the baseline claims
	header func(h map[string]any)     // mutates a copy of the baseline header
	policy func(p *Policy)            // mutates the baseline policy
	base   func() map[string]any      // baseline claims (default rlrClaims)
	keys   KeyFunc                    // default testKeys
	token  func(tb testing.TB) string // replaces the whole token
}

func (tc validateCase) run(t *testing.T) (*Claims, *apierr.Error) {
	t.Helper()
	base := tc.base
	if base == nil {
		base = rlrClaims
	}
	claims, hdr, pol, keys := base(), testHeader(), testPolicy(), tc.keys
	if tc.claims != nil {
		tc.claims(claims)
	}
	if tc.header != nil {
		tc.header(hdr)
	}
	if tc.policy != nil {
		tc.policy(&pol)
	}
	if keys == nil {
		keys = testKeys
	}
	var token string
	if tc.token != nil {
		token = tc.token(t)
	} else {
		token = sign(t, hdr, claims)
	}
	return Validate(context.Background(), token, keys, pol)
}

func TestValidateBaseline(t *testing.T) {
	c, e := validateCase{}.run(t)
	if e != nil {
		t.Fatalf("baseline launch rejected: %v", e)
	}
	if c.Issuer != testIssuer || c.Subject == "" || c.MessageType != MessageResourceLink ||
		c.DeploymentID != testDeployment || c.ResourceLink == nil || c.ResourceLink.ID == "" || !c.RolesPresent {
		t.Fatalf("claims not decoded: %+v", c)
	}
	if len(c.Raw) == 0 || c.Raw[0] != '{' {
		t.Fatalf("Raw is not the payload: %q", c.Raw)
	}
}

func TestValidateRejects(t *testing.T) {
	now := testNow.Unix()
	rawToken := func(hdr, payload string) func(testing.TB) string {
		return func(tb testing.TB) string { return testjws.SignRaw(tb, []byte(hdr), []byte(payload), "RS256", testKey) }
	}
	validPayload := func() string {
		b, _ := jsonMarshal(rlrClaims())
		return string(b)
	}
	tests := []struct {
		validateCase
		status   int
		code     string
		rule     string
		descHas  string
		causeHas error
		// sent is the refused value the error carries for the registration's Events.
		sent string
	}{
		// T-TOK-03: structure.
		{validateCase: validateCase{name: "T-TOK-03 not a JWS", token: func(testing.TB) string { return "not-a-jwt" }},
			status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 empty", token: func(testing.TB) string { return "  " }},
			status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 two parts", token: func(tb testing.TB) string {
			tok := sign(tb, testHeader(), rlrClaims())
			return tok[:strings.LastIndexByte(tok, '.')]
		}}, status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 five parts (JWE)", token: func(testing.TB) string { return "a.b.c.d.e" }},
			status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 payload not JSON",
			token: rawToken(`{"alg":"RS256","kid":"`+testKID+`"}`, "not json")},
			status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 payload a JSON array",
			token: rawToken(`{"alg":"RS256","kid":"`+testKID+`"}`, `["iss"]`)},
			status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 header not base64url", token: func(tb testing.TB) string {
			tok := sign(tb, testHeader(), rlrClaims())
			return "e30*" + tok[strings.IndexByte(tok, '.'):]
		}}, status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "T-TOK-03 line break inside", token: func(tb testing.TB) string {
			tok := sign(tb, testHeader(), rlrClaims())
			return tok[:10] + "\n" + tok[10:]
		}}, status: 400, code: CodeInvalidToken, rule: "T-TOK-03"},
		{validateCase: validateCase{name: "cert Invalid LTI message (T-TOK-03)",
			token: rawToken(`{}`, `{ "name" : "badltilaunch" }`)},
			status: 400, code: CodeInvalidToken, rule: "T-TOK-03", descHas: "alg"},

		// T-TOK-04: RS256 only, before any key lookup.
		{validateCase: validateCase{name: "T-TOK-04 alg HS256", header: func(h map[string]any) { h["alg"] = "HS256" },
			keys: panicKeys},
			status: 401, code: CodeInvalidAlgorithm, rule: "T-TOK-04"},
		{validateCase: validateCase{name: "T-TOK-04 alg none", header: func(h map[string]any) { h["alg"] = "none" },
			keys: panicKeys},
			status: 401, code: CodeInvalidAlgorithm, rule: "T-TOK-04"},
		{validateCase: validateCase{name: "T-TOK-04 alg RS512", header: func(h map[string]any) { h["alg"] = "RS512" },
			keys: panicKeys},
			status: 401, code: CodeInvalidAlgorithm, rule: "T-TOK-04"},
		{validateCase: validateCase{name: "T-TOK-04 alg rs256 lower case", header: func(h map[string]any) { h["alg"] = "rs256" },
			keys: panicKeys},
			status: 401, code: CodeInvalidAlgorithm, rule: "T-TOK-04"},

		// T-TOK-05.
		{validateCase: validateCase{name: "T-TOK-05 no kid", header: func(h map[string]any) { delete(h, "kid") }, keys: panicKeys},
			status: 401, code: CodeMissingKID, rule: "T-TOK-05"},
		{validateCase: validateCase{name: "cert No KID Sent in JWT header (T-TOK-05)",
			token: func(tb testing.TB) string {
				return testjws.SignRaw(tb, []byte(`{"badtestonly":"12345","alg":"RS256"}`), []byte(validPayload()), "RS256", testKey)
			}, keys: panicKeys},
			status: 401, code: CodeMissingKID, rule: "T-TOK-05"},

		// T-TOK-08 / T-JWKS-03.
		{validateCase: validateCase{name: "cert Incorrect KID in JWT header (T-TOK-08)",
			header: func(h map[string]any) { h["kid"] = "imstester_66067" }},
			status: 401, code: CodeUnknownKID, rule: "T-TOK-08", causeHas: ErrUnknownKey},
		{validateCase: validateCase{name: "T-JWKS-03 key set unavailable is 503 not 401",
			keys: func(context.Context, string) (*rsa.PublicKey, error) { return nil, errFetch }},
			status: 503, code: CodeKeySetUnavailable, rule: "T-JWKS-03", causeHas: errFetch},
		{validateCase: validateCase{name: "T-JWKS-03 no key and no error",
			keys: func(context.Context, string) (*rsa.PublicKey, error) { return nil, nil }},
			status: 503, code: CodeKeySetUnavailable, rule: "T-JWKS-03"},

		// T-TOK-10.
		{validateCase: validateCase{name: "T-TOK-10 signed with another key", token: func(tb testing.TB) string {
			b, _ := jsonMarshal(rlrClaims())
			return testjws.Sign(tb, testHeader(), b, otherKey)
		}}, status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		{validateCase: validateCase{name: "T-TOK-10 payload swapped after signing", token: func(tb testing.TB) string {
			tok := sign(tb, testHeader(), rlrClaims())
			other := rlrClaims()
			other["sub"] = "someone-else"
			b, _ := jsonMarshal(other)
			parts := strings.Split(tok, ".")
			return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
		}}, status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		// Headers that change what is signed or how it is read: refused whatever the signature.
		{validateCase: validateCase{name: "T-TOK-10 crit names an extension the tool does not know",
			header: func(h map[string]any) {
				h["crit"] = []string{"https://example.com/ext"}
				h["https://example.com/ext"] = true
			}},
			status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		{validateCase: validateCase{name: "T-TOK-10 b64 false (RFC 7797): the payload would be the base64 text itself", token: func(tb testing.TB) string {
			// RSA over header.payload as usual: only the header says to read the payload unencoded.
			b, _ := jsonMarshal(rlrClaims())
			hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","b64":false,"crit":["b64"],"kid":"` + testKID + `"}`))
			input := hdr + "." + base64.RawURLEncoding.EncodeToString(b)
			digest := sha256.Sum256([]byte(input))
			sig, err := rsa.SignPKCS1v15(nil, testKey, crypto.SHA256, digest[:])
			if err != nil {
				tb.Fatal(err)
			}
			return input + "." + base64.RawURLEncoding.EncodeToString(sig)
		}}, status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		{validateCase: validateCase{name: "T-TOK-10 b64 without crit",
			token: rawToken(`{"alg":"RS256","b64":true,"kid":"`+testKID+`"}`, validPayload())},
			status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		{validateCase: validateCase{name: "T-TOK-10 crit null is still crit",
			token: rawToken(`{"alg":"RS256","crit":null,"kid":"`+testKID+`"}`, validPayload())},
			status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		// RFC 7515 §4: duplicate members. alg is read as the last one (T-TOK-04); a first one
		// that says otherwise is refused, as jwx's compact path (which reads the first) did.
		{validateCase: validateCase{name: "T-TOK-10 duplicate alg: none first, RS256 last",
			token: rawToken(`{"alg":"none","kid":"`+testKID+`","alg":"RS256"}`, validPayload())},
			status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		{validateCase: validateCase{name: "T-TOK-10 duplicate alg: a number first, RS256 last",
			token: rawToken(`{"alg":256,"kid":"`+testKID+`","alg":"RS256"}`, validPayload())},
			status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},
		{validateCase: validateCase{name: "T-TOK-04 duplicate alg: RS256 first, none last",
			token: rawToken(`{"alg":"RS256","kid":"`+testKID+`","alg":"none"}`, validPayload())},
			status: 401, code: CodeInvalidAlgorithm, rule: "T-TOK-04"},
		{validateCase: validateCase{name: "T-TOK-10 empty signature", token: func(tb testing.TB) string {
			tok := sign(tb, testHeader(), rlrClaims())
			return tok[:strings.LastIndexByte(tok, '.')+1]
		}}, status: 401, code: CodeInvalidSignature, rule: "T-TOK-10"},

		// T-TOK-11..13.
		{validateCase: validateCase{name: "T-TOK-11 issuer with trailing slash",
			claims: func(c map[string]any) { c["iss"] = testIssuer + "/" }},
			status: 401, code: CodeIssuerMismatch, rule: "T-TOK-11"},
		{validateCase: validateCase{name: "T-TOK-11 issuer not a string", claims: func(c map[string]any) { c["iss"] = 42 }},
			status: 401, code: CodeIssuerMismatch, rule: "T-TOK-11"},
		{validateCase: validateCase{name: "T-TOK-12 aud of another client", claims: func(c map[string]any) { c["aud"] = "other" }},
			status: 401, code: CodeAudienceMismatch, rule: "T-TOK-12"},
		{validateCase: validateCase{name: "T-TOK-12 untrusted extra audience",
			claims: func(c map[string]any) { c["aud"] = []any{testClientID, "https://evil.example"} }},
			status: 401, code: CodeAudienceMismatch, rule: "T-TOK-12"},
		{validateCase: validateCase{name: "T-TOK-12 aud missing", claims: func(c map[string]any) { delete(c, "aud") }},
			status: 401, code: CodeAudienceMismatch, rule: "T-TOK-12"},
		{validateCase: validateCase{name: "T-TOK-13 several audiences without azp",
			claims: func(c map[string]any) { c["aud"] = []any{testClientID, "trusted"}; delete(c, "azp") },
			policy: func(p *Policy) { p.TrustedAudiences = []string{"trusted"} }},
			status: 401, code: CodeAzpMismatch, rule: "T-TOK-13"},
		{validateCase: validateCase{name: "T-TOK-13 azp of another client", claims: func(c map[string]any) { c["azp"] = "other" }},
			status: 401, code: CodeAzpMismatch, rule: "T-TOK-13"},

		// T-TOK-14 / T-TOK-15.
		{validateCase: validateCase{name: "T-TOK-14 expired beyond skew",
			claims: func(c map[string]any) { c["iat"] = now - 200; c["exp"] = now - 60 }},
			status: 401, code: CodeTokenExpired, rule: "T-TOK-14"},
		{validateCase: validateCase{name: "cert Timestamps Incorrect (T-TOK-14)",
			claims: func(c map[string]any) { c["exp"] = 22222; c["iat"] = 11111 }},
			status: 401, code: CodeTokenExpired, rule: "T-TOK-14"},
		{validateCase: validateCase{name: "T-TOK-14 exp as a string",
			claims: func(c map[string]any) { c["exp"] = fmt.Sprint(now + 3600) }},
			status: 401, code: CodeTokenExpired, rule: "T-TOK-14"},
		{validateCase: validateCase{name: "T-TOK-14 exp missing", claims: func(c map[string]any) { delete(c, "exp") }},
			status: 401, code: CodeTokenExpired, rule: "T-TOK-14"},
		{validateCase: validateCase{name: "T-TOK-15 iat in the future beyond skew",
			claims: func(c map[string]any) { c["iat"] = now + 61 }},
			status: 401, code: CodeInvalidIAT, rule: "T-TOK-15"},
		{validateCase: validateCase{name: "T-TOK-15 iat older than max age",
			claims: func(c map[string]any) { c["iat"] = now - int64(11*time.Minute/time.Second) }},
			status: 401, code: CodeInvalidIAT, rule: "T-TOK-15"},
		{validateCase: validateCase{name: "T-TOK-15 iat missing", claims: func(c map[string]any) { delete(c, "iat") }},
			status: 401, code: CodeInvalidIAT, rule: "T-TOK-15"},

		// T-NONCE-01 / T-NONCE-02.
		{validateCase: validateCase{name: "T-NONCE-01 no nonce", claims: func(c map[string]any) { delete(c, "nonce") },
			policy: func(p *Policy) { p.ExpectedNonce = "" }},
			status: 401, code: CodeMissingNonce, rule: "T-NONCE-01"},
		{validateCase: validateCase{name: "T-NONCE-02 nonce not the one issued",
			claims: func(c map[string]any) { c["nonce"] = "another-nonce" }},
			status: 401, code: CodeNonceMismatch, rule: "T-NONCE-02"},

		// T-TOK-17.
		{validateCase: validateCase{name: "cert Wrong LTI Version (T-TOK-17)", claims: func(c map[string]any) { c[ClaimVersion] = "11.3" }},
			status: 400, code: CodeInvalidLTIVersion, rule: "T-TOK-17"},
		{validateCase: validateCase{name: "cert No LTI Version (T-TOK-17)", claims: func(c map[string]any) { delete(c, ClaimVersion) }},
			status: 400, code: CodeInvalidLTIVersion, rule: "T-TOK-17"},
		{validateCase: validateCase{name: "cert Missing LTI Claims (T-TOK-17)", claims: func(c map[string]any) {
			delete(c, ClaimVersion)
			delete(c, ClaimMessageType)
			delete(c, ClaimRoles)
		}}, status: 400, code: CodeInvalidLTIVersion, rule: "T-TOK-17"},

		// T-TOK-18.
		{validateCase: validateCase{name: "cert messsage_type Claim Missing (T-TOK-18)",
			claims: func(c map[string]any) { delete(c, ClaimMessageType) }},
			status: 400, code: CodeInvalidMessageType, rule: "T-TOK-18", descHas: "missing"},
		{validateCase: validateCase{name: "T-TOK-18 unsupported message type",
			claims: func(c map[string]any) { c[ClaimMessageType] = "LtiUnknownFutureRequest" }},
			status: 400, code: CodeInvalidMessageType, rule: "T-TOK-18", descHas: `"LtiUnknownFutureRequest"`},

		// T-TOK-19 / T-TOK-20.
		{validateCase: validateCase{name: "cert deployment_id Claim Missing (T-TOK-19)",
			claims: func(c map[string]any) { delete(c, ClaimDeploymentID) }},
			status: 400, code: CodeMissingDeploymentID, rule: "T-TOK-19"},
		{validateCase: validateCase{name: "T-TOK-19 deployment_id a number",
			claims: func(c map[string]any) { c[ClaimDeploymentID] = 1 }},
			status: 400, code: CodeMissingDeploymentID, rule: "T-TOK-19"},
		{validateCase: validateCase{name: "T-TOK-19 deployment_id longer than 255",
			claims: func(c map[string]any) { c[ClaimDeploymentID] = strings.Repeat("d", 256) }},
			status: 400, code: CodeIdentifierTooLong, rule: "T-TOK-19"},
		{validateCase: validateCase{name: "T-TOK-19 deployment not in the allow-list",
			policy: func(p *Policy) { p.DeploymentIDs = []string{"1", "2"} }},
			status: 403, code: CodeUnknownDeployment, rule: "T-TOK-19", sent: testDeployment},
		{validateCase: validateCase{name: "T-TOK-20 deployment differs from the login's",
			policy: func(p *Policy) { p.ExpectedDeploymentID = "another-deployment" }},
			status: 400, code: CodeDeploymentMismatch, rule: "T-TOK-20"},

		// T-TOK-21: required claims per message type.
		{validateCase: validateCase{name: "cert role Claim Missing (T-TOK-21)", claims: func(c map[string]any) { delete(c, ClaimRoles) }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "roles"},
		{validateCase: validateCase{name: "cert resource_link_id Claim Missing (T-TOK-21)",
			claims: func(c map[string]any) { c[ClaimResourceLink] = map[string]any{"title": "no id"} }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "resource_link.id"},
		{validateCase: validateCase{name: "cert user Claim Missing (T-TOK-21)", claims: func(c map[string]any) { delete(c, "sub") }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "sub"},
		{validateCase: validateCase{name: "T-TOK-21 resource_link claim absent",
			claims: func(c map[string]any) { delete(c, ClaimResourceLink) }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "resource_link"},
		{validateCase: validateCase{name: "T-TOK-21 target_link_uri missing on a resource link launch",
			claims: func(c map[string]any) { delete(c, ClaimTargetLinkURI) }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "target_link_uri"},
		{validateCase: validateCase{name: "T-TOK-21 resource_link.id longer than 255",
			claims: func(c map[string]any) { c[ClaimResourceLink] = map[string]any{"id": strings.Repeat("r", 256)} }},
			status: 400, code: CodeIdentifierTooLong, rule: "T-TOK-21", descHas: "resource_link.id"},
		{validateCase: validateCase{name: "T-TOK-21 roles not an array",
			claims: func(c map[string]any) { c[ClaimRoles] = "Instructor" }},
			status: 400, code: CodeInvalidClaim, rule: "T-TOK-21", descHas: "roles"},
		{validateCase: validateCase{name: "T-TOK-21 sub not a string", claims: func(c map[string]any) { c["sub"] = 12345 }},
			status: 400, code: CodeInvalidClaim, rule: "T-TOK-21", descHas: "sub"},
		{validateCase: validateCase{name: "T-TOK-21 context without id",
			claims: func(c map[string]any) { c[ClaimContext] = map[string]any{"label": "ECON"} }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "context.id"},
		{validateCase: validateCase{name: "T-TOK-21 deep linking without settings", base: dlClaims,
			claims: func(c map[string]any) { delete(c, ClaimDeepLinkingSettings) }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "deep_linking_settings"},
		{validateCase: validateCase{name: "T-TOK-21 deep linking without return URL", base: dlClaims,
			claims: func(c map[string]any) { delete(c[ClaimDeepLinkingSettings].(map[string]any), "deep_link_return_url") }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "deep_link_return_url"},
		{validateCase: validateCase{name: "T-TOK-21 deep linking without accept_types", base: dlClaims,
			claims: func(c map[string]any) { delete(c[ClaimDeepLinkingSettings].(map[string]any), "accept_types") }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "accept_types"},
		{validateCase: validateCase{name: "T-TOK-21 deep linking without presentation targets", base: dlClaims,
			claims: func(c map[string]any) {
				delete(c[ClaimDeepLinkingSettings].(map[string]any), "accept_presentation_document_targets")
			}},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "accept_presentation_document_targets"},
		{validateCase: validateCase{name: "T-TOK-21 deep linking without sub", base: dlClaims,
			claims: func(c map[string]any) { delete(c, "sub") }},
			status: 400, code: CodeMissingClaim, rule: "T-TOK-21", descHas: "sub"},

		// T-TOK-22.
		{validateCase: validateCase{name: "T-TOK-22 target_link_uri differs from the login's",
			claims: func(c map[string]any) { c[ClaimTargetLinkURI] = "https://tool.example.com/lti/other" }},
			status: 400, code: CodeTargetLinkURIMismatch, rule: "T-TOK-22"},
		{validateCase: validateCase{name: "T-TOK-22 deep linking target_link_uri present and different", base: dlClaims,
			claims: func(c map[string]any) { c[ClaimTargetLinkURI] = "https://tool.example.com/lti/other" }},
			status: 400, code: CodeTargetLinkURIMismatch, rule: "T-TOK-22"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, e := tc.run(t)
			if e == nil {
				t.Fatalf("accepted, want %d %s", tc.status, tc.code)
			}
			if c != nil {
				t.Errorf("claims returned with an error")
			}
			if e.Status != tc.status || e.Code != tc.code || e.Rule != tc.rule {
				t.Fatalf("got %d %s [%s] (%s), want %d %s [%s]", e.Status, e.Code, e.Rule, e.Description, tc.status, tc.code, tc.rule)
			}
			if tc.descHas != "" && !strings.Contains(e.Description, tc.descHas) {
				t.Errorf("description %q does not mention %q", e.Description, tc.descHas)
			}
			if e.Sent != tc.sent {
				t.Errorf("Sent = %q, want %q", e.Sent, tc.sent)
			}
			if tc.causeHas != nil && !errors.Is(e, tc.causeHas) {
				t.Errorf("error %v does not wrap %v", e, tc.causeHas)
			}
			if e.Description == "" || !strings.Contains(e.Error(), e.Code) {
				t.Errorf("Error() = %q", e.Error())
			}
		})
	}
}

var errFetch = errors.New("GET https://platform.example.edu/jwks: dial tcp: i/o timeout")

// panicKeys fails the test when the key set is consulted: alg and kid are
// checked before any key lookup (T-TOK-04, T-TOK-05).
func panicKeys(context.Context, string) (*rsa.PublicKey, error) {
	panic("key lookup before the alg/kid checks")
}

func TestValidateAccepts(t *testing.T) {
	now := testNow.Unix()
	tests := []struct {
		validateCase
		check func(t *testing.T, c *Claims)
	}{
		{validateCase: validateCase{name: "T-QUIRK-02 aud as a one-element array with azp",
			claims: func(c map[string]any) { c["aud"] = []any{testClientID} }}},
		{validateCase: validateCase{name: "T-QUIRK-02 aud array with a trusted extra and azp",
			claims: func(c map[string]any) { c["aud"] = []any{testClientID, "https://trusted.example"} },
			policy: func(p *Policy) { p.TrustedAudiences = []string{"https://trusted.example"} }},
			check: func(t *testing.T, c *Claims) {
				if len(c.Audience) != 2 || c.AuthorizedParty != testClientID {
					t.Errorf("aud %v azp %q", c.Audience, c.AuthorizedParty)
				}
			}},
		{validateCase: validateCase{name: "T-TOK-13 string aud without azp",
			claims: func(c map[string]any) { delete(c, "azp") }}},
		{validateCase: validateCase{name: "T-QUIRK-03 Moodle exp=iat+60 expired by less than the skew",
			claims: func(c map[string]any) { c["iat"] = now - 100; c["exp"] = now - 40 }}},
		{validateCase: validateCase{name: "T-TOK-15 iat slightly in the future within skew",
			claims: func(c map[string]any) { c["iat"] = now + 30 }}},
		{validateCase: validateCase{name: "T-TOK-14 fractional exp",
			claims: func(c map[string]any) { c["exp"] = float64(now) + 10.5 }}},
		{validateCase: validateCase{name: "T-NONCE-02 no expected nonce checks presence only",
			claims: func(c map[string]any) { c["nonce"] = "whatever" }, policy: func(p *Policy) { p.ExpectedNonce = "" }}},
		{validateCase: validateCase{name: "T-TOK-19 deployment in the allow-list",
			policy: func(p *Policy) {
				p.DeploymentIDs = []string{"1", testDeployment}
				p.ExpectedDeploymentID = testDeployment
			}}},
		{validateCase: validateCase{name: "T-TOK-22 no login target_link_uri known skips the comparison",
			claims: func(c map[string]any) { c[ClaimTargetLinkURI] = "https://tool.example.com/x" },
			policy: func(p *Policy) { p.ExpectedTargetLinkURI = "" }}},
		{validateCase: validateCase{name: "T-ROLE-01 short role Instructor",
			claims: func(c map[string]any) { c[ClaimRoles] = []any{"Instructor"} }},
			check: func(t *testing.T, c *Claims) { wantRoles(t, c, "Instructor") }},
		{validateCase: validateCase{name: "T-ROLE-02 unknown role kept raw, dropped from normalised",
			claims: func(c map[string]any) {
				c[ClaimRoles] = []any{"http://purl.imsglobal.org/vocab/lis/v2/unknown/unknown#Helper"}
			}},
			check: func(t *testing.T, c *Claims) {
				if len(c.Roles) != 1 {
					t.Errorf("raw roles %v", c.Roles)
				}
				wantRoles(t, c)
			}},
		{validateCase: validateCase{name: "T-ROLE-03 no role sent as [\"\"]",
			claims: func(c map[string]any) { c[ClaimRoles] = []any{""} }},
			check: func(t *testing.T, c *Claims) { wantRoles(t, c) }},
		{validateCase: validateCase{name: "T-ROLE-03 empty roles array",
			claims: func(c map[string]any) { c[ClaimRoles] = []any{} }},
			check: func(t *testing.T, c *Claims) { wantRoles(t, c) }},
		{validateCase: validateCase{name: "T-ROLE-04 multiple roles with institution roles",
			claims: func(c map[string]any) {
				c[ClaimRoles] = []any{RoleInstructor, roleInstitutionBase + "Faculty", roleSystemBase + "User", RoleInstructor}
			}},
			check: func(t *testing.T, c *Claims) {
				wantRoles(t, c, RoleInstructor, roleInstitutionBase+"Faculty", roleSystemBase+"User")
			}},
		{validateCase: validateCase{name: "T-ROLE-05 deprecated role forms",
			claims: func(c map[string]any) {
				c[ClaimRoles] = []any{"urn:lti:role:ims/lis/Instructor", "http://purl.imsglobal.org/vocab/lis/v2/person#Administrator"}
			}},
			check: func(t *testing.T, c *Claims) { wantRoles(t, c, RoleInstructor, RoleInstitutionAdmin) }},
		{validateCase: validateCase{name: "T-ROLE-06 teaching assistant sub-role and Canvas TestUser",
			claims: func(c map[string]any) { c[ClaimRoles] = []any{RoleTeachingAssistant, RoleTestUser} }},
			check: func(t *testing.T, c *Claims) {
				roles := NormaliseRoles(c.Roles)
				if !IsInstructor(roles) || !IsTestUser(roles) || IsLearner(roles) {
					t.Errorf("roles %v: instructor %v test user %v", roles, IsInstructor(roles), IsTestUser(roles))
				}
			}},
		{validateCase: validateCase{name: "T-CTX-01 context type as a simple name",
			claims: func(c map[string]any) {
				c[ClaimContext] = map[string]any{"id": "2", "label": "curso1", "type": []any{"CourseSection"}}
			}},
			check: func(t *testing.T, c *Claims) {
				if got := NormaliseContextTypes(c.Context.Type); len(got) != 1 || got[0] != "CourseSection" {
					t.Errorf("context types %v", got)
				}
			}},
		{validateCase: validateCase{name: "T-CTX-01 context type [\"\"]",
			claims: func(c map[string]any) { c[ClaimContext] = map[string]any{"id": "2", "type": []any{""}} }},
			check: func(t *testing.T, c *Claims) {
				if got := NormaliseContextTypes(c.Context.Type); got == nil || len(got) != 0 {
					t.Errorf("context types %#v", got)
				}
			}},
		{validateCase: validateCase{name: "T-PII-01 email only",
			claims: func(c map[string]any) { delete(c, "name"); delete(c, "given_name"); delete(c, "family_name") }},
			check: func(t *testing.T, c *Claims) {
				if c.Email == "" || c.Name != "" {
					t.Errorf("email %q name %q", c.Email, c.Name)
				}
			}},
		{validateCase: validateCase{name: "T-PII-02 names only", claims: func(c map[string]any) { delete(c, "email") }}},
		{validateCase: validateCase{name: "T-PII-03 no PII", claims: func(c map[string]any) {
			for _, k := range []string{"name", "given_name", "family_name", "email", "picture", "locale"} {
				delete(c, k)
			}
		}}},
		{validateCase: validateCase{name: "T-PII-04 email without context", claims: func(c map[string]any) {
			delete(c, ClaimContext)
			delete(c, "name")
			delete(c, "given_name")
			delete(c, "family_name")
		}}, check: func(t *testing.T, c *Claims) {
			if c.Context != nil {
				t.Errorf("context %+v", c.Context)
			}
		}},
		{validateCase: validateCase{name: "T-TOK-23 Canvas extra claims and members", base: canvasLikeClaims},
			check: func(t *testing.T, c *Claims) {
				if c.AGS == nil || len(c.AGS.Scope) != 5 || c.NRPS == nil || c.NRPS.ContextMembershipsURL == "" {
					t.Errorf("service claims: %+v %+v", c.AGS, c.NRPS)
				}
			}},
		{validateCase: validateCase{name: "T-QUIRK-04 custom values null, number and bool",
			claims: func(c map[string]any) {
				c[ClaimCustom] = map[string]any{"gone": nil, "n": 123, "f": 1.5, "b": true, "s": "", "sub": "$Person.sourcedId"}
			}},
			check: func(t *testing.T, c *Claims) {
				want := map[string]string{"n": "123", "f": "1.5", "b": "true", "s": "", "sub": "$Person.sourcedId"}
				if len(c.Custom) != len(want) {
					t.Fatalf("custom %v", c.Custom)
				}
				for k, v := range want {
					if c.Custom[k] != v {
						t.Errorf("custom[%s] = %q, want %q", k, c.Custom[k], v)
					}
				}
			}},
		{validateCase: validateCase{name: "T-QUIRK-04 optional claims of the wrong type are ignored",
			claims: func(c map[string]any) {
				c["name"] = 42
				c[ClaimToolPlatform] = "canvas"
				c[ClaimLaunchPresentation] = map[string]any{"width": "800", "height": "x", "document_target": 3}
				c[ClaimNRPS] = []any{}
			}},
			check: func(t *testing.T, c *Claims) {
				if c.Name != "" || c.ToolPlatform != nil || c.NRPS != nil || c.LaunchPresentation.Width != 800 {
					t.Errorf("tolerant decode: %+v", c)
				}
			}},
		{validateCase: validateCase{name: "T-QUIRK-04 Moodle accept_media_types array and accept_multiple \"true\"", base: dlClaims,
			claims: func(c map[string]any) {
				s := c[ClaimDeepLinkingSettings].(map[string]any)
				s["accept_media_types"] = []any{"image/*", "text/html"}
				s["accept_multiple"] = "true"
				s["accept_copy_advice"] = false
				s["accept_presentation_document_targets"] = []any{"frame", "iframe", "window"}
			}},
			check: func(t *testing.T, c *Claims) {
				dl := c.DeepLinking
				if len(dl.AcceptMediaTypes) != 2 || dl.AcceptMultiple == nil || !*dl.AcceptMultiple {
					t.Errorf("settings %+v", dl)
				}
			}},
		{validateCase: validateCase{name: "§12.3 deep linking without target_link_uri", base: dlClaims},
			check: func(t *testing.T, c *Claims) {
				if c.TargetLinkURI != "" || c.DeepLinking == nil || c.DeepLinking.DeepLinkReturnURL != testReturnURL ||
					!c.DeepLinking.DataPresent {
					t.Errorf("deep linking claims %+v", c.DeepLinking)
				}
			}},
		{validateCase: validateCase{name: "§12.3 deep linking with matching target_link_uri and no roles", base: dlClaims,
			claims: func(c map[string]any) { c[ClaimTargetLinkURI] = testTarget; delete(c, ClaimRoles) }}},
		{validateCase: validateCase{name: "§12.1 anonymous launch when allowed",
			claims: func(c map[string]any) { delete(c, "sub") }, policy: func(p *Policy) { p.AllowAnonymous = true }}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, e := tc.run(t)
			if e != nil {
				t.Fatalf("rejected: %v", e)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func wantRoles(t *testing.T, c *Claims, want ...string) {
	t.Helper()
	got := NormaliseRoles(c.Roles)
	if got == nil || len(got) != len(want) {
		t.Fatalf("normalised roles %#v, want %#v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("normalised roles %#v, want %#v", got, want)
		}
	}
}

func TestValidateKeyLookupGetsContextAndKid(t *testing.T) {
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	var gotKid string
	keys := func(c context.Context, kid string) (*rsa.PublicKey, error) {
		if c.Value(ctxKey{}) != "v" {
			t.Error("KeyFunc did not get the caller's context")
		}
		gotKid = kid
		return &testKey.PublicKey, nil
	}
	if _, e := Validate(ctx, sign(t, testHeader(), rlrClaims()), keys, testPolicy()); e != nil {
		t.Fatal(e)
	}
	if gotKid != testKID {
		t.Fatalf("kid %q", gotKid)
	}
}

func TestValidateUnconfiguredPolicyAcceptsNothing(t *testing.T) {
	tok := sign(t, testHeader(), rlrClaims())
	for name, p := range map[string]Policy{
		"no issuer":    {ClientID: testClientID, Now: testNow},
		"no client id": {Issuer: testIssuer, Now: testNow},
	} {
		if _, e := Validate(context.Background(), tok, testKeys, p); e == nil || e.Status != 401 {
			t.Errorf("%s: %v", name, e)
		}
	}
	if _, e := Validate(context.Background(), tok, nil, testPolicy()); e == nil || e.Code != CodeKeySetUnavailable {
		t.Errorf("nil KeyFunc: %v", e)
	}
}

// TestValidatePHPEscapedSlashes: PHP platforms (Moodle) json_encode without
// JSON_UNESCAPED_SLASHES, so every claim name arrives as "https:\/\/purl…".
func TestValidatePHPEscapedSlashes(t *testing.T) {
	b, err := jsonMarshal(rlrClaims())
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("/"), []byte(`\/`))
	c, e := Validate(context.Background(), testjws.Sign(t, testHeader(), b, testKey), testKeys, testPolicy())
	if e != nil {
		t.Fatalf("rejected: %v", e)
	}
	if c.Issuer != testIssuer || c.MessageType != MessageResourceLink || c.TargetLinkURI != testTarget ||
		c.Context == nil || c.NRPS == nil || !bytes.Contains(c.Raw, []byte(`https:\/\/`)) {
		t.Fatalf("claims %+v", c)
	}
}

// verifyRS256 checks signatures through jwsbb, not jws.VerifyCompactFast as before: on
// genuine, tampered and hostile tokens both give the same verdict, so the refusals of
// the compact path (crit, b64, a first alg that is not RS256, any change to what was
// signed) are all still there.
func TestVerifyRS256AgreesWithCompactFast(t *testing.T) {
	payload, _ := jsonMarshal(rlrClaims())
	good := sign(t, testHeader(), rlrClaims())
	parts := strings.Split(good, ".")
	flip := func(s string, i int) string { // another base64url character at i
		c := byte('A')
		if s[i] == 'A' {
			c = 'B'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	raw := func(hdr string, alg any, key *rsa.PrivateKey) string {
		return testjws.SignRaw(t, []byte(hdr), payload, alg, key)
	}
	kid := `"kid":"` + testKID + `"`
	tokens := map[string]string{
		"genuine":                   good,
		"header changed":            flip(parts[0], 3) + "." + parts[1] + "." + parts[2],
		"payload changed":           parts[0] + "." + flip(parts[1], 40) + "." + parts[2],
		"signature changed":         parts[0] + "." + parts[1] + "." + flip(parts[2], 10),
		"signature truncated":       parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-4],
		"signature empty":           parts[0] + "." + parts[1] + ".",
		"other key":                 raw(`{"alg":"RS256",`+kid+`}`, "RS256", otherKey),
		"RS512 signature":           raw(`{"alg":"RS256",`+kid+`}`, "RS512", testKey),
		"HS256 with the public key": raw(`{"alg":"RS256",`+kid+`}`, "HS256", testKey),
		"crit":                      raw(`{"alg":"RS256","crit":["x"],"x":1,`+kid+`}`, "RS256", testKey),
		"b64":                       raw(`{"alg":"RS256","b64":false,"crit":["b64"],`+kid+`}`, "RS256", testKey),
		"b64 alone":                 raw(`{"alg":"RS256","b64":true,`+kid+`}`, "RS256", testKey),
		"alg none then RS256":       raw(`{"alg":"none","alg":"RS256",`+kid+`}`, "RS256", testKey),
		"alg escaped":               raw(`{"\u0061lg":"RS\u0032\u0035\u0036",`+kid+`}`, "RS256", testKey),
		"alg RS256 then none":       raw(`{"alg":"RS256","alg":"none",`+kid+`}`, "RS256", testKey),
		"extra header members":      raw(`{"typ":"JWT","alg":"RS256","x5u":"https://evil.example/",`+kid+`}`, "RS256", testKey),
	}
	for name, tok := range tokens {
		_, jwxErr := jws.VerifyCompactFast(&testKey.PublicKey, []byte(tok), jwa.RS256())
		ct, e := splitCompact(tok)
		var err error = e
		if e == nil {
			err = ct.verifyRS256(&testKey.PublicKey)
		}
		if (err == nil) != (jwxErr == nil) {
			t.Errorf("%s: verifyRS256 says %v, jws.VerifyCompactFast says %v", name, err, jwxErr)
		}
		if name == "genuine" && err != nil {
			t.Fatalf("genuine token refused: %v", err)
		}
	}
}

// The decoded claims share the payload Validate decoded (Claims.Raw) instead of copying
// it; ParseClaims shares its own copy, never the caller's bytes.
func TestClaimsShareRaw(t *testing.T) {
	c, e := Validate(context.Background(), sign(t, testHeader(), canvasLikeClaims()), testKeys, testPolicy())
	if e != nil {
		t.Fatal(e)
	}
	for _, s := range []string{c.Issuer, c.Subject, c.DeploymentID, c.ResourceLink.ID, c.Context.Title, c.Roles[0], c.Custom["xstart"]} {
		if !within(c.Raw, s) {
			t.Errorf("%q is a copy, not a substring of Raw", s)
		}
	}
	payload, _ := jsonMarshal(rlrClaims())
	pc, err := ParseClaims(payload)
	if err != nil {
		t.Fatal(err)
	}
	if !within(pc.Raw, pc.Issuer) || within(payload, pc.Issuer) {
		t.Error("ParseClaims: the strings must share its copy, not the caller's payload")
	}
	clear(payload)
	if pc.Issuer != testIssuer {
		t.Errorf("ParseClaims: the caller's payload changed Issuer to %q", pc.Issuer)
	}
}

// within reports whether s's bytes lie inside b's (s is not a copy).
func within(b []byte, s string) bool {
	if len(b) == 0 || len(s) == 0 {
		return false
	}
	d := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= d && p+uintptr(len(s)) <= d+uintptr(len(b))
}

// Validate recycles the buffers it copies signing inputs into: concurrent validations
// of different tokens each verify and return their own claims (run with -race).
func TestValidateConcurrent(t *testing.T) {
	const n = 8
	tokens := make([]string, n)
	for i := range tokens {
		c := canvasLikeClaims()
		c["sub"] = fmt.Sprint("user-", i)
		c["https://example.com/padding"] = strings.Repeat("x", i*700) // signing inputs of several sizes
		tokens[i] = sign(t, testHeader(), c)
	}
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			for r := range 20 {
				i := (g + r) % n
				c, e := Validate(context.Background(), tokens[i], testKeys, testPolicy())
				if e != nil || c.Subject != fmt.Sprint("user-", i) {
					t.Errorf("token %d: %v, %+v", i, e, c)
					return
				}
			}
		})
	}
	wg.Wait()
}
