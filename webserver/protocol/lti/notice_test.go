package lti

import (
	"context"
	"testing"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/test/utils/testjws"
)

// noticeClaims is a valid LtiAssetProcessorSubmissionNotice at testNow, shaped like Canvas's.
func noticeClaims() map[string]any {
	return map[string]any{
		"iss":             testIssuer,
		"aud":             testClientID,
		"azp":             testClientID,
		"exp":             testNow.Unix() + 3600,
		"iat":             testNow.Unix(),
		"nonce":           "2d220edf-2f1c-4be4-b38e-ec80b1c6749d",
		ClaimVersion:      "1.3.0",
		ClaimDeploymentID: testDeployment,
		ClaimNotice: map[string]any{
			"id": "7a70e604-5b2e-4013-b628-4806228999f1", "timestamp": "2025-03-19T11:24:25Z",
			"type": NoticeAssetProcessorSubmission,
		},
		ClaimContext: map[string]any{"id": "ctx-1", "title": "Biology 101"},
	}
}

func TestValidateNoticeAccepts(t *testing.T) {
	c, n, e := ValidateNotice(context.Background(), sign(t, testHeader(), noticeClaims()), testKeys, testPolicy())
	if e != nil {
		t.Fatalf("ValidateNotice: %v", e)
	}
	if n.ID != "7a70e604-5b2e-4013-b628-4806228999f1" || n.Type != NoticeAssetProcessorSubmission || n.Timestamp != "2025-03-19T11:24:25Z" {
		t.Errorf("notice = %+v", n)
	}
	if c.DeploymentID != testDeployment || c.Context == nil || c.Context.ID != "ctx-1" {
		t.Errorf("claims = %+v", c)
	}
}

// T-PNS-03: a notice type ltiop does not know passes through.
func TestValidateNoticeUnknownTypePasses(t *testing.T) {
	claims := noticeClaims()
	claims[ClaimNotice].(map[string]any)["type"] = "LtiSomethingNewNotice"
	if _, n, e := ValidateNotice(context.Background(), sign(t, testHeader(), claims), testKeys, testPolicy()); e != nil || n.Type != "LtiSomethingNewNotice" {
		t.Fatalf("ValidateNotice = %+v, %v", n, e)
	}
}

func TestValidateNoticeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, rule, code string
		edit             func(h, c map[string]any)
		key              bool // sign with a key the platform does not publish
		policy           func(p *Policy)
	}{
		{name: "T-PNS-01 forged signature", rule: "T-TOK-10", code: CodeInvalidSignature, key: true},
		{name: "T-PNS-01 alg none", rule: "T-TOK-04", code: CodeInvalidAlgorithm, edit: func(h, _ map[string]any) { h["alg"] = "HS256" }},
		{name: "T-PNS-01 no kid", rule: "T-TOK-05", code: CodeMissingKID, edit: func(h, _ map[string]any) { delete(h, "kid") }},
		{name: "T-PNS-01 unknown kid", rule: "T-TOK-08", code: CodeUnknownKID, edit: func(h, _ map[string]any) { h["kid"] = "other" }},
		{name: "T-PNS-01 issuer", rule: "T-TOK-11", code: CodeIssuerMismatch, edit: func(_, c map[string]any) { c["iss"] = "https://evil.example" }},
		{name: "T-PNS-01 audience", rule: "T-TOK-12", code: CodeAudienceMismatch, edit: func(_, c map[string]any) { c["aud"] = "someone-else" }},
		{name: "T-PNS-01 expired", rule: "T-TOK-14", code: CodeTokenExpired, edit: func(_, c map[string]any) { c["exp"] = testNow.Unix() - 3600 }},
		{name: "T-PNS-01 no exp", rule: "T-TOK-14", code: CodeTokenExpired, edit: func(_, c map[string]any) { delete(c, "exp") }},
		{name: "T-PNS-01 issued in the future", rule: "T-TOK-15", code: CodeInvalidIAT, edit: func(_, c map[string]any) { c["iat"] = testNow.Unix() + 3600 }},
		{name: "T-PNS-01 issued over an hour ago", rule: "T-TOK-15", code: CodeInvalidIAT, edit: func(_, c map[string]any) {
			c["iat"] = testNow.Add(-2 * time.Hour).Unix()
		}},
		{name: "T-PNS-04 version", rule: "T-PNS-04", code: CodeInvalidLTIVersion, edit: func(_, c map[string]any) { c[ClaimVersion] = "1.1" }},
		{name: "T-PNS-02 no deployment", rule: "T-PNS-02", code: CodeMissingDeploymentID, edit: func(_, c map[string]any) { delete(c, ClaimDeploymentID) }},
		{name: "T-PNS-02 unknown deployment", rule: "T-PNS-02", code: CodeUnknownDeployment, policy: func(p *Policy) { p.DeploymentIDs = []string{"other"} }},
		{name: "T-PNS-03 no notice claim", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { delete(c, ClaimNotice) }},
		{name: "T-PNS-03 notice not an object", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { c[ClaimNotice] = "x" }},
		{name: "T-PNS-03 no id", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { delete(c[ClaimNotice].(map[string]any), "id") }},
		{name: "T-PNS-03 numeric id", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { c[ClaimNotice].(map[string]any)["id"] = 7 }},
		{name: "T-PNS-03 no type", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { delete(c[ClaimNotice].(map[string]any), "type") }},
		{name: "T-PNS-03 no timestamp", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { delete(c[ClaimNotice].(map[string]any), "timestamp") }},
		{name: "T-PNS-03 bad timestamp", rule: "T-PNS-03", code: CodeInvalidNotice, edit: func(_, c map[string]any) { c[ClaimNotice].(map[string]any)["timestamp"] = "yesterday" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c := testHeader(), noticeClaims()
			if tc.edit != nil {
				tc.edit(h, c)
			}
			var token string
			if tc.key {
				token = testjws.SignClaims(t, h, c, otherKey)
			} else {
				token = sign(t, h, c)
			}
			p := testPolicy()
			if tc.policy != nil {
				tc.policy(&p)
			}
			claims, n, e := ValidateNotice(context.Background(), token, testKeys, p)
			if e == nil {
				t.Fatalf("ValidateNotice accepted: %+v %+v", claims, n)
			}
			if e.Code != tc.code || e.Rule != tc.rule {
				t.Errorf("error = %s %s (%s), want %s %s", e.Code, e.Rule, e.Description, tc.code, tc.rule)
			}
		})
	}
}

func TestDecodePNS(t *testing.T) {
	raw := []byte(`{"` + ClaimPlatformNotificationService + `":{"service_versions":["1.0"],` +
		`"platform_notification_service_url":"https://lms.example/api/lti/notice-handlers/106",` +
		`"scope":["` + ltiwire.ScopeNoticeHandlers + `"],"notice_types_supported":["LtiHelloWorldNotice",7]}}`)
	p := DecodePNS(raw)
	if p == nil || p.URL != "https://lms.example/api/lti/notice-handlers/106" || len(p.Scope) != 1 ||
		len(p.NoticeTypesSupported) != 1 || p.ServiceVersions[0] != "1.0" {
		t.Fatalf("DecodePNS = %+v", p)
	}
	for _, raw := range []string{`{}`, `{"` + ClaimPlatformNotificationService + `":{"scope":[]}}`, `{"` + ClaimPlatformNotificationService + `":"x"}`} {
		if p := DecodePNS([]byte(raw)); p != nil {
			t.Errorf("DecodePNS(%s) = %+v, want nil", raw, p)
		}
	}
}

func BenchmarkValidateNotice(b *testing.B) {
	token := sign(b, testHeader(), noticeClaims())
	p := testPolicy()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, e := ValidateNotice(context.Background(), token, testKeys, p); e != nil {
			b.Fatal(e)
		}
	}
}
