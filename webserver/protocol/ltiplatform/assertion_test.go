package ltiplatform

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

const (
	toolTestScopeLineItem = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	toolTestScopeScore    = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	toolTestScopeNRPS     = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
)

// toolTestAssertionClaims is a valid client assertion at toolTestNow (pylti1.3-like:
// iat a little in the past, exp a few minutes ahead, aud the token URL).
func toolTestAssertionClaims() map[string]any {
	return map[string]any{
		"iss": toolTestClientID,
		"sub": toolTestClientID,
		"aud": toolTestTokenURL,
		"iat": toolTestNow.Unix() - 5,
		"exp": toolTestNow.Unix() + 60,
		"jti": "lti-service-token-5f0e3a3c-8d4e-4a3c-b0a7-9b3b8e7b4c21",
	}
}

func toolTestAudiences() []string { return []string{toolTestTokenURL, toolTestIssuer} }

func toolTestTokenForm() url.Values {
	return url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {ClientAssertionTypeJWTBearer},
		"client_assertion":      {"eyJhbGciOiJSUzI1NiJ9.e30.c2ln"},
		"scope":                 {toolTestScopeLineItem + " " + toolTestScopeScore + " " + toolTestScopeNRPS},
	}
}

func TestParseTokenRequest(t *testing.T) {
	r, e := ParseTokenRequest(toolTestTokenForm())
	if e != nil {
		t.Fatal(e)
	}
	if r.Assertion != "eyJhbGciOiJSUzI1NiJ9.e30.c2ln" || r.ClientID != "" ||
		!slices.Equal(r.Scopes, []string{toolTestScopeLineItem, toolTestScopeScore, toolTestScopeNRPS}) {
		t.Fatalf("%+v", r)
	}

	f := toolTestTokenForm()
	f.Set("scope", "  "+toolTestScopeScore+"\t"+toolTestScopeLineItem+"  "+toolTestScopeScore+"\n"+toolTestScopeScore+" ")
	f.Set("client_id", toolTestClientID)
	f.Set("unknown", "ignored")
	r, e = ParseTokenRequest(f)
	if e != nil {
		t.Fatal(e)
	}
	if !slices.Equal(r.Scopes, []string{toolTestScopeScore, toolTestScopeLineItem}) || r.ClientID != toolTestClientID {
		t.Fatalf("%+v", r)
	}
}

func TestParseTokenRequestRefused(t *testing.T) {
	set := func(k, v string) func(url.Values) { return func(f url.Values) { f.Set(k, v) } }
	del := func(k string) func(url.Values) { return func(f url.Values) { f.Del(k) } }
	add := func(k, v string) func(url.Values) { return func(f url.Values) { f.Add(k, v) } }
	cases := []struct {
		name   string
		mod    func(url.Values)
		code   string
		oauth  string
		rule   string
		status int
	}{
		{"P-TOK-01 no grant_type", del("grant_type"), CodeMissingParameter, OAuthInvalidRequest, "P-TOK-01", 400},
		{"P-TOK-01 grant_type authorization_code", set("grant_type", "authorization_code"),
			CodeUnsupportedGrantType, OAuthUnsupportedGrantType, "P-TOK-01", 400},
		{"P-TOK-01 grant_type jwt-bearer (RFC 7523 §2.1 grant)", set("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
			CodeUnsupportedGrantType, OAuthUnsupportedGrantType, "P-TOK-01", 400},
		{"P-TOK-01 grant_type in another case", set("grant_type", "Client_Credentials"),
			CodeUnsupportedGrantType, OAuthUnsupportedGrantType, "P-TOK-01", 400},
		{"P-TOK-01 grant_type repeated", add("grant_type", "client_credentials"),
			CodeDuplicateParameter, OAuthInvalidRequest, "P-TOK-01", 400},
		{"P-TOK-02 no client authentication", func(f url.Values) { f.Del("client_assertion"); f.Del("client_assertion_type") },
			CodeMissingClientAuthentication, OAuthInvalidClient, "P-TOK-02", 401},
		{"P-TOK-02 client_assertion_type missing", del("client_assertion_type"),
			CodeMissingParameter, OAuthInvalidRequest, "P-TOK-02", 400},
		{"P-TOK-02 client_assertion_type saml2-bearer", set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer"),
			CodeUnsupportedAssertionType, OAuthInvalidClient, "P-TOK-02", 401},
		{"P-TOK-02 client_assertion_type with a trailing space", set("client_assertion_type", ClientAssertionTypeJWTBearer+" "),
			CodeUnsupportedAssertionType, OAuthInvalidClient, "P-TOK-02", 401},
		{"P-TOK-02 client_assertion_type repeated", add("client_assertion_type", ClientAssertionTypeJWTBearer),
			CodeDuplicateParameter, OAuthInvalidRequest, "P-TOK-02", 400},
		{"P-TOK-02 client_secret too", set("client_secret", "s3cret"),
			CodeMultipleClientAuthentication, OAuthInvalidRequest, "P-TOK-02", 400},
		{"P-TOK-03 client_assertion missing", del("client_assertion"),
			CodeMissingParameter, OAuthInvalidRequest, "P-TOK-03", 400},
		{"P-TOK-03 client_assertion empty", set("client_assertion", ""),
			CodeMissingParameter, OAuthInvalidRequest, "P-TOK-03", 400},
		{"P-TOK-03 client_assertion repeated", add("client_assertion", "x.y.z"),
			CodeDuplicateParameter, OAuthInvalidRequest, "P-TOK-03", 400},
		{"P-TOK-04 client_id repeated", func(f url.Values) { f.Add("client_id", "a"); f.Add("client_id", "b") },
			CodeDuplicateParameter, OAuthInvalidRequest, "P-TOK-04", 400},
		{"P-TOK-09 no scope", del("scope"), CodeInvalidScope, OAuthInvalidScope, "P-TOK-09", 400},
		{"P-TOK-09 blank scope", set("scope", "   "), CodeInvalidScope, OAuthInvalidScope, "P-TOK-09", 400},
		{"P-TOK-09 scope with a quote", set("scope", toolTestScopeScore+` "x"`), CodeInvalidScope, OAuthInvalidScope, "P-TOK-09", 400},
		{"P-TOK-09 scope with a non-ASCII character", set("scope", "https://example.com/scopé"),
			CodeInvalidScope, OAuthInvalidScope, "P-TOK-09", 400},
		{"P-TOK-09 scope repeated", add("scope", toolTestScopeScore), CodeDuplicateParameter, OAuthInvalidRequest, "P-TOK-09", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := toolTestTokenForm()
			tc.mod(f)
			r, e := ParseTokenRequest(f)
			toolTestCheckError(t, e, tc.code, tc.rule, tc.status)
			if e.OAuth != tc.oauth {
				t.Errorf("OAuth %q, want %q", e.OAuth, tc.oauth)
			}
			if r.Assertion != "" || r.Scopes != nil || r.ClientID != "" {
				t.Errorf("a request was returned: %+v", r)
			}
		})
	}
}

func TestPeekAssertionClient(t *testing.T) {
	tool, _ := toolTestKeys(t)
	id, e := PeekAssertionClient(testjws.SignClaims(t, toolTestHeader(), toolTestAssertionClaims(), tool))
	if e != nil || id != toolTestClientID {
		t.Fatalf("%q, %v", id, e)
	}
	// Unverified: a signature by another key or alg none still names the client.
	id, e = PeekAssertionClient(testjws.SignClaims(t, map[string]any{"alg": "none"}, toolTestAssertionClaims(), tool))
	if e != nil || id != toolTestClientID {
		t.Fatalf("%q, %v", id, e)
	}
	for _, tc := range []struct {
		name string
		mod  func(map[string]any)
		code string
	}{
		{"P-TOK-04 sub is another client", func(c map[string]any) { c["sub"] = "another-tool" }, CodeSubjectMismatch},
		{"P-TOK-04 no sub", func(c map[string]any) { delete(c, "sub") }, CodeSubjectMismatch},
		{"P-TOK-04 no iss", func(c map[string]any) { delete(c, "iss") }, CodeIssuerMismatch},
		{"P-TOK-04 iss empty", func(c map[string]any) { c["iss"], c["sub"] = "", "" }, CodeIssuerMismatch},
		{"P-TOK-04 iss a number", func(c map[string]any) { c["iss"], c["sub"] = 42, 42 }, CodeIssuerMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := toolTestAssertionClaims()
			tc.mod(c)
			id, e := PeekAssertionClient(testjws.SignClaims(t, toolTestHeader(), c, tool))
			toolTestCheckError(t, e, tc.code, "P-TOK-04", 401)
			if id != "" || e.OAuth != OAuthInvalidClient {
				t.Fatalf("client %q, OAuth %q", id, e.OAuth)
			}
		})
	}
}

func TestVerifyClientAssertion(t *testing.T) {
	tool, _ := toolTestKeys(t)
	noKid := toolTestHeader()
	delete(noKid, "kid")
	cases := []struct {
		name string
		hdr  map[string]any
		mod  func(map[string]any)
		key  lti.KeyFunc
		auds []string
		want Assertion
	}{
		{name: "aud the token URL (Canvas, Moodle)"},
		{name: "aud [issuer, token URL] (oat-sa)", mod: func(c map[string]any) {
			c["aud"] = []any{toolTestIssuer, toolTestTokenURL}
		}},
		{name: "aud the issuer only", mod: func(c map[string]any) { c["aud"] = toolTestIssuer }},
		{name: "aud array with another party too", mod: func(c map[string]any) {
			c["aud"] = []any{"https://auth.brightspace.com/core/connect/token", toolTestTokenURL}
		}},
		{name: "configured audience only (D2L-like token audience)", mod: func(c map[string]any) {
			c["aud"] = "https://ltiop.example.edu/auth/token"
		}, auds: []string{"", "https://ltiop.example.edu/auth/token"}},
		{name: "deployment_id claim (CORE §6.2.1)", mod: func(c map[string]any) {
			c[lti.ClaimDeploymentID] = toolTestDeployment
		}, want: Assertion{DeploymentID: toolTestDeployment}},
		{name: "deployment_id null is absent", mod: func(c map[string]any) { c[lti.ClaimDeploymentID] = nil }},
		{name: "no kid, static key", hdr: noKid, key: toolTestStaticKeyFunc(t)},
		{name: "lifetime exactly the maximum", mod: func(c map[string]any) {
			c["iat"], c["exp"] = toolTestNow.Unix()-60, toolTestNow.Unix()-60+int64(MaxAssertionLifetime/time.Second)
		}, want: Assertion{IssuedAt: toolTestNow.Add(-time.Minute), Expires: toolTestNow.Add(MaxAssertionLifetime - time.Minute)}},
		{name: "nbf in the past, exp within skew", mod: func(c map[string]any) {
			c["nbf"], c["exp"] = toolTestNow.Unix()-5, toolTestNow.Unix()-10
		}, want: Assertion{Expires: toolTestNow.Add(-10 * time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr, claims, key, auds := toolTestHeader(), toolTestAssertionClaims(), toolTestKeyFunc(t), toolTestAudiences()
			if tc.hdr != nil {
				hdr = tc.hdr
			}
			if tc.mod != nil {
				tc.mod(claims)
			}
			if tc.key != nil {
				key = tc.key
			}
			if tc.auds != nil {
				auds = tc.auds
			}
			a, e := VerifyClientAssertion(context.Background(), testjws.SignClaims(t, hdr, claims, tool), toolTestClientID,
				auds, key, toolTestNow, toolTestSkew)
			if e != nil {
				t.Fatal(e)
			}
			want := tc.want
			want.ClientID = toolTestClientID
			want.JTI = "lti-service-token-5f0e3a3c-8d4e-4a3c-b0a7-9b3b8e7b4c21"
			if want.Expires.IsZero() {
				want.Expires = toolTestNow.Add(time.Minute)
			}
			if want.IssuedAt.IsZero() {
				want.IssuedAt = toolTestNow.Add(-5 * time.Second)
			}
			if a.ClientID != want.ClientID || a.JTI != want.JTI || a.DeploymentID != want.DeploymentID ||
				!a.Expires.Equal(want.Expires) || !a.IssuedAt.Equal(want.IssuedAt) {
				t.Fatalf("got %+v; want %+v", *a, want)
			}
		})
	}
}

func TestVerifyClientAssertionRefused(t *testing.T) {
	tool, other := toolTestKeys(t)
	with := func(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
	without := func(k string) func(map[string]any) { return func(c map[string]any) { delete(c, k) } }
	noKid := toolTestHeader()
	delete(noKid, "kid")
	hour := int64(MaxAssertionLifetime / time.Second)
	cases := []struct {
		name     string
		hdr      map[string]any
		mod      func(map[string]any)
		key      lti.KeyFunc
		signer   bool
		clientID string
		auds     []string
		code     string
		rule     string
		status   int
	}{
		{name: "P-TOK-03 payload an array", hdr: nil, mod: nil, code: CodeInvalidToken, rule: "P-TOK-03", status: 401},
		{name: "P-TOK-03 deployment_id a number", mod: with(lti.ClaimDeploymentID, 7),
			code: CodeInvalidClaim, rule: "P-TOK-03", status: 401},
		{name: "P-TOK-03 deployment_id empty", mod: with(lti.ClaimDeploymentID, ""),
			code: CodeInvalidClaim, rule: "P-TOK-03", status: 401},
		{name: "P-TOK-03 deployment_id too long", mod: with(lti.ClaimDeploymentID, strings.Repeat("d", 256)),
			code: CodeInvalidClaim, rule: "P-TOK-03", status: 401},
		{name: "P-TOK-04 iss is another registered client", clientID: "another-tool",
			code: CodeIssuerMismatch, rule: "P-TOK-04", status: 401},
		{name: "P-TOK-04 sub is another client", mod: with("sub", "another-tool"),
			code: CodeSubjectMismatch, rule: "P-TOK-04", status: 401},
		{name: "P-TOK-04 no iss", mod: without("iss"), code: CodeIssuerMismatch, rule: "P-TOK-04", status: 401},
		{name: "P-TOK-05 aud another platform's token URL", mod: with("aud", "https://canvas.instructure.com/login/oauth2/token"),
			code: CodeAudienceMismatch, rule: "P-TOK-05", status: 401},
		{name: "P-TOK-05 aud the token URL with a trailing slash", mod: with("aud", toolTestTokenURL+"/"),
			code: CodeAudienceMismatch, rule: "P-TOK-05", status: 401},
		{name: "P-TOK-05 aud the tool itself", mod: with("aud", toolTestClientID),
			code: CodeAudienceMismatch, rule: "P-TOK-05", status: 401},
		{name: "P-TOK-05 no aud", mod: without("aud"), code: CodeAudienceMismatch, rule: "P-TOK-05", status: 401},
		{name: "P-TOK-05 aud an object", mod: with("aud", map[string]any{"url": toolTestTokenURL}),
			code: CodeAudienceMismatch, rule: "P-TOK-05", status: 401},
		{name: "P-TOK-05 audiences configured empty strings only match nothing", mod: with("aud", ""),
			auds: []string{"", toolTestTokenURL}, code: CodeAudienceMismatch, rule: "P-TOK-05", status: 401},
		{name: "P-TOK-06 expired", mod: with("exp", toolTestNow.Unix()-31), code: CodeTokenExpired, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 no exp", mod: without("exp"), code: CodeTokenExpired, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 exp a string (spec example style)", mod: with("exp", "1750000060"),
			code: CodeTokenExpired, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 nbf in the future", mod: with("nbf", toolTestNow.Unix()+120),
			code: CodeTokenNotYetValid, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 iat in the future", mod: with("iat", toolTestNow.Unix()+31),
			code: CodeInvalidIAT, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 no iat", mod: without("iat"), code: CodeInvalidIAT, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 lifetime over the maximum", mod: func(c map[string]any) {
			c["iat"], c["exp"] = toolTestNow.Unix()-60, toolTestNow.Unix()-60+hour+1
		}, code: CodeLifetimeTooLong, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-06 exp a year ahead", mod: with("exp", toolTestNow.Unix()+365*24*3600),
			code: CodeLifetimeTooLong, rule: "P-TOK-06", status: 401},
		{name: "P-TOK-07 no jti", mod: without("jti"), code: CodeMissingJTI, rule: "P-TOK-07", status: 401},
		{name: "P-TOK-07 empty jti", mod: with("jti", ""), code: CodeMissingJTI, rule: "P-TOK-07", status: 401},
		{name: "P-TOK-07 jti a number", mod: with("jti", 1), code: CodeMissingJTI, rule: "P-TOK-07", status: 401},
		{name: "P-TOK-07 jti too long", mod: with("jti", strings.Repeat("j", MaxReplayIDLength+1)),
			code: CodeInvalidJTI, rule: "P-TOK-07", status: 401},
		{name: "P-TOK-08 alg none", hdr: map[string]any{"alg": "none", "kid": toolTestKID},
			code: CodeInvalidAlgorithm, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 alg HS256 keyed with the public key (algorithm confusion)", hdr: map[string]any{"alg": "HS256", "kid": toolTestKID},
			code: CodeInvalidAlgorithm, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 alg HS256 keyed with the public key PEM", hdr: map[string]any{"alg": "HS256-PEM", "kid": toolTestKID},
			code: CodeInvalidAlgorithm, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 alg RS512", hdr: map[string]any{"alg": "RS512", "kid": toolTestKID},
			code: CodeInvalidAlgorithm, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 signed by another key", signer: true, code: CodeInvalidSignature, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 unknown kid", hdr: map[string]any{"alg": "RS256", "kid": "old-key"},
			code: CodeUnknownKID, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 no kid and no static key", hdr: noKid, code: CodeMissingKID, rule: "P-TOK-08", status: 401},
		{name: "P-TOK-08 JWKS unavailable", key: toolTestDownKeyFunc, code: CodeKeySetUnavailable, rule: "P-TOK-08", status: 503},
		{name: "misconfigured: no audiences", auds: []string{}, code: CodePlatformMisconfigured, rule: "", status: 500},
		{name: "misconfigured: empty audience", auds: []string{""}, code: CodePlatformMisconfigured, rule: "", status: 500},
		{name: "misconfigured: no client", clientID: "-", code: CodePlatformMisconfigured, rule: "", status: 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr, claims, key, auds, clientID := toolTestHeader(), toolTestAssertionClaims(), toolTestKeyFunc(t), toolTestAudiences(), toolTestClientID
			if tc.hdr != nil {
				hdr = tc.hdr
			}
			if tc.mod != nil {
				tc.mod(claims)
			}
			if tc.key != nil {
				key = tc.key
			}
			if tc.auds != nil {
				auds = tc.auds
			}
			switch tc.clientID {
			case "":
			case "-":
				clientID = ""
			default:
				clientID = tc.clientID
			}
			signer := tool
			if tc.signer {
				signer = other
			}
			token := testjws.SignClaims(t, hdr, claims, signer)
			if tc.name == "P-TOK-03 payload an array" {
				token = testjws.Sign(t, hdr, []byte(`["iss","sub"]`), tool)
			}
			a, e := VerifyClientAssertion(context.Background(), token, clientID, auds, key, toolTestNow, toolTestSkew)
			toolTestCheckError(t, e, tc.code, tc.rule, tc.status)
			if a != nil {
				t.Fatalf("an assertion was returned: %+v", a)
			}
			wantOAuth := OAuthInvalidClient
			switch tc.status {
			case 503:
				wantOAuth = OAuthTemporarilyUnavailable
			case 500:
				wantOAuth = OAuthServerError
			}
			if e.OAuth != wantOAuth {
				t.Errorf("OAuth %q, want %q", e.OAuth, wantOAuth)
			}

			// Its two halves refuse alike, and only the shape and the signature (P-TOK-08)
			// come before the claims are the tool's: the token endpoint attributes
			// nothing earlier to the tool the assertion names.
			beforeSignature := tc.rule == "P-TOK-08" || tc.name == "P-TOK-03 payload an array" || tc.clientID == "-"
			s, se := VerifyAssertionSignature(context.Background(), token, clientID, key)
			if (se != nil) != beforeSignature {
				t.Fatalf("VerifyAssertionSignature refused: %v, want refused before the signature: %v", se, beforeSignature)
			}
			if se == nil {
				_, se = s.Check(auds, toolTestNow, toolTestSkew)
			}
			toolTestCheckError(t, se, tc.code, tc.rule, tc.status)
		})
	}
	// A nil KeyFunc is the caller's mistake, not the tool's.
	_, e := VerifyClientAssertion(context.Background(), "x", toolTestClientID, toolTestAudiences(), nil, toolTestNow, 0)
	toolTestCheckError(t, e, CodePlatformMisconfigured, "", 500)
}

func TestGrantScopes(t *testing.T) {
	allowed := []string{toolTestScopeLineItem, toolTestScopeScore}
	got, e := GrantScopes([]string{toolTestScopeNRPS, toolTestScopeScore, toolTestScopeLineItem, toolTestScopeScore}, allowed)
	if e != nil || !slices.Equal(got, []string{toolTestScopeScore, toolTestScopeLineItem}) {
		t.Fatalf("%q, %v", got, e)
	}
	for name, req := range map[string][]string{
		"P-TOK-09 nothing requested is allowed": {toolTestScopeNRPS, "https://canvas.instructure.com/lti-ags/progress/scope/show"},
		"P-TOK-09 nothing requested":            nil,
		"P-TOK-09 empty scope":                  {""},
	} {
		t.Run(name, func(t *testing.T) {
			got, e := GrantScopes(req, allowed)
			toolTestCheckError(t, e, CodeScopeNotAllowed, "P-TOK-09", 400)
			if got != nil || e.OAuth != OAuthInvalidScope {
				t.Fatalf("%q, OAuth %q", got, e.OAuth)
			}
		})
	}
	if _, e := GrantScopes([]string{toolTestScopeScore}, nil); e == nil {
		t.Fatal("a scope granted with nothing allowed")
	}
}

// TestTokenEndpointFlow: the caller's sequence — parse, peek, look up, verify, grant.
func TestTokenEndpointFlow(t *testing.T) {
	tool, _ := toolTestKeys(t)
	f := toolTestTokenForm()
	f.Set("client_assertion", testjws.SignClaims(t, toolTestHeader(), toolTestAssertionClaims(), tool))
	req, e := ParseTokenRequest(f)
	if e != nil {
		t.Fatal(e)
	}
	client, e := PeekAssertionClient(req.Assertion)
	if e != nil || client != toolTestClientID {
		t.Fatalf("%q %v", client, e)
	}
	a, e := VerifyClientAssertion(context.Background(), req.Assertion, client, toolTestAudiences(), toolTestKeyFunc(t), toolTestNow, toolTestSkew)
	if e != nil {
		t.Fatal(e)
	}
	scopes, e := GrantScopes(req.Scopes, []string{toolTestScopeScore, toolTestScopeNRPS})
	if e != nil || !slices.Equal(scopes, []string{toolTestScopeScore, toolTestScopeNRPS}) || a.JTI == "" {
		t.Fatalf("%q %v %+v", scopes, e, a)
	}
}
