package ltiplatform

// The platform's token endpoint: OAuth 2.0 client credentials with a JWT client
// assertion (RFC 6749 §4.4, RFC 7521, RFC 7523; SEC §4.1.1; lti-conformance.md §2).
//
// Rule IDs, numbered in the order of the conformance doc's P-TOK sentence:
//
//	P-TOK-01  grant_type == client_credentials (else unsupported_grant_type;
//	          missing: invalid_request)
//	P-TOK-02  client_assertion_type == urn:ietf:params:oauth:client-assertion-type:jwt-bearer
//	P-TOK-03  the assertion parses (compact JWS, JSON header and payload; also a
//	          present client_assertion and a well-formed deployment_id claim)
//	P-TOK-04  sub (= iss) is a registered client. The registry lookup is the
//	          caller's (PeekAssertionClient gives the unverified client to look
//	          up); this package checks sub == iss (Peek) and iss == sub == the
//	          client looked up (VerifyClientAssertion)
//	P-TOK-05  aud contains the token endpoint URL (or the platform issuer)
//	P-TOK-06  exp in the future (also: nbf, iat not in the future, exp - iat at
//	          most MaxAssertionLifetime)
//	P-TOK-07  jti not seen before exp — the replay cache is the caller's; this
//	          package checks that a jti is there and returns it with Expires
//	P-TOK-08  signature via the tool's JWKS / kid (alg RS256, kid, key, signature)
//	P-TOK-09  scopes ⊆ allowed ∩ requested, else invalid_scope (also: a scope
//	          parameter is present and well-formed)
//
// OAuth errors (RFC 6749 §5.2). Every failure of the assertion — malformed, alg,
// key, signature, iss, sub, aud, times, jti — is invalid_client with 401: RFC 7521
// §4.2.1 ("If the client assertion is not valid … the value of the error
// parameter MUST be the invalid_client error code"). Form parameters: a missing
// required parameter or a repeated one (RFC 6749 §3.2) is invalid_request (400);
// a grant_type other than client_credentials is unsupported_grant_type (400). For
// the client authentication parameters: neither client_assertion_type nor
// client_assertion is "no client authentication included", and a
// client_assertion_type other than jwt-bearer an "unsupported authentication
// method" — both invalid_client (401) per RFC 6749 §5.2; client_assertion_type
// without client_assertion, or the reverse, is a missing parameter
// (invalid_request, 400), and client_secret next to an assertion is more than one
// authentication method (RFC 6749 §2.3: invalid_request, 400). Scope problems are
// invalid_scope (400). A key set that cannot be fetched is 503
// temporarily_unavailable (not an RFC 6749 §5.2 value, but the outage is not the
// client's fault); a caller configuration error is 500 server_error.
//
// Order: the signature is verified before the claims (iss, sub, aud, exp, jti)
// although SEC §4.1.1 lists it last: all failures give the same invalid_client,
// and checking the signature first means no unauthenticated input reaches the
// claim checks.

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// Token endpoint constants.
const (
	// GrantTypeClientCredentials is the only grant_type the endpoint serves.
	GrantTypeClientCredentials = "client_credentials"
	// ClientAssertionTypeJWTBearer is the only client_assertion_type (RFC 7523 §2.2).
	ClientAssertionTypeJWTBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// MaxAssertionLifetime bounds exp - iat of a client assertion; SEC §4.1.1
	// says "typically five minutes". It also bounds how long a replay cache must
	// keep a jti.
	MaxAssertionLifetime = time.Hour
)

// TokenRequest is a parsed token request.
type TokenRequest struct {
	// Assertion is client_assertion, not verified.
	Assertion string
	// Scopes are the requested scopes, de-duplicated, in request order.
	Scopes []string
	// ClientID is the optional client_id parameter. RFC 7521 §4.2: when present it
	// "MUST identify the same client as is identified by the client assertion" —
	// compare it with PeekAssertionClient's result (invalid_client otherwise).
	ClientID string
}

// ParseTokenRequest checks the form of a token request (P-TOK-01, -02, -03's
// presence, -09's syntax): grant_type client_credentials, client_assertion_type
// jwt-bearer, client_assertion present, scope present and made of RFC 6749 §3.3
// scope tokens (separated by spaces; tabs and line breaks are tolerated as
// separators). Repeated parameters are refused. Unknown parameters are ignored
// (RFC 6749 §3.2). An Authorization header (another authentication method) is the
// HTTP handler's to refuse.
func ParseTokenRequest(form url.Values) (TokenRequest, *apierr.Error) {
	var e *apierr.Error
	param := func(name, rule string) string {
		v := form[name]
		switch {
		case e != nil || len(v) == 0:
			return ""
		case len(v) > 1:
			e = newError(400, CodeDuplicateParameter, OAuthInvalidRequest, rule,
				"The "+name+" parameter must not be repeated.")
			return ""
		}
		return v[0]
	}
	missing := func(name, rule string) *apierr.Error {
		return newError(400, CodeMissingParameter, OAuthInvalidRequest, rule, "The "+name+" parameter is required.")
	}

	// P-TOK-01.
	switch gt := param("grant_type", "P-TOK-01"); {
	case e != nil:
		return TokenRequest{}, e
	case gt == "":
		return TokenRequest{}, missing("grant_type", "P-TOK-01")
	case gt != GrantTypeClientCredentials:
		return TokenRequest{}, newError(400, CodeUnsupportedGrantType, OAuthUnsupportedGrantType, "P-TOK-01",
			"Only the client_credentials grant is supported.")
	}
	// P-TOK-02, P-TOK-03.
	typ := param("client_assertion_type", "P-TOK-02")
	assertion := param("client_assertion", "P-TOK-03")
	secret := param("client_secret", "P-TOK-02")
	clientID := param("client_id", "P-TOK-04")
	switch {
	case e != nil:
		return TokenRequest{}, e
	case typ == "" && assertion == "":
		return TokenRequest{}, newError(401, CodeMissingClientAuthentication, OAuthInvalidClient, "P-TOK-02",
			"The request has no client authentication: send a client_assertion (RFC 7523).")
	case typ == "":
		return TokenRequest{}, missing("client_assertion_type", "P-TOK-02")
	case typ != ClientAssertionTypeJWTBearer:
		return TokenRequest{}, newError(401, CodeUnsupportedAssertionType, OAuthInvalidClient, "P-TOK-02",
			"The client_assertion_type must be "+ClientAssertionTypeJWTBearer+".")
	case assertion == "":
		return TokenRequest{}, missing("client_assertion", "P-TOK-03")
	case secret != "":
		return TokenRequest{}, newError(400, CodeMultipleClientAuthentication, OAuthInvalidRequest, "P-TOK-02",
			"Use one client authentication method: a client_assertion, without client_secret.")
	}
	// P-TOK-09.
	scope := param("scope", "P-TOK-09")
	if e != nil {
		return TokenRequest{}, e
	}
	scopes, e := assertionScopes(scope)
	if e != nil {
		return TokenRequest{}, e
	}
	return TokenRequest{Assertion: assertion, Scopes: scopes, ClientID: clientID}, nil
}

// assertionScopes splits a scope parameter into distinct scope tokens, in order.
func assertionScopes(scope string) ([]string, *apierr.Error) {
	invalid := func(d string) *apierr.Error {
		return newError(400, CodeInvalidScope, OAuthInvalidScope, "P-TOK-09", d)
	}
	var out []string
	seen := make(map[string]struct{}, 8)
	for tok := range strings.FieldsFuncSeq(scope, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}) {
		for i := 0; i < len(tok); i++ {
			// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
			if c := tok[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return nil, invalid("The scope parameter has a character RFC 6749 does not allow in a scope.")
			}
		}
		if _, dup := seen[tok]; !dup {
			seen[tok] = struct{}{}
			out = append(out, tok)
		}
	}
	if len(out) == 0 {
		return nil, invalid("The scope parameter is required: the space-separated scopes requested.")
	}
	return out, nil
}

var toolJWTAssertion = toolJWTKind{
	name:      "client assertion",
	badStatus: 401,
	oauth:     OAuthInvalidClient,
	ruleShape: "P-TOK-03",
	ruleNone:  "P-TOK-08",
	ruleAlg:   "P-TOK-08",
	ruleKey:   "P-TOK-08",
	ruleExp:   "P-TOK-06",
	ruleIat:   "P-TOK-06",
}

// PeekAssertionClient returns the unverified iss of a client assertion, so that
// the caller can find the tool (P-TOK-04) and its keys; nothing else in it is
// trusted before VerifyClientAssertion. It checks the structure (P-TOK-03) and that
// sub equals iss (CORE §6.2: both are the client_id). Failures are invalid_client
// (401).
func PeekAssertionClient(assertion string) (clientID string, e *apierr.Error) {
	k := &toolJWTAssertion
	t, e := toolJWTSplit(assertion, k)
	if e != nil {
		return "", e
	}
	return assertionClient(&t.claims, k)
}

// assertionClient returns iss after checking that it is a non-empty string equal to sub.
func assertionClient(c *toolJWTClaims, k *toolJWTKind) (string, *apierr.Error) {
	iss, _ := toolJWTString(c.iss)
	if iss == "" {
		return "", k.err(401, CodeIssuerMismatch, "P-TOK-04", "has no iss (the client_id).")
	}
	if sub, _ := toolJWTString(c.sub); sub != iss {
		return "", k.err(401, CodeSubjectMismatch, "P-TOK-04", "sub must equal iss (the client_id).")
	}
	return iss, nil
}

// Assertion is a verified client assertion.
type Assertion struct {
	// ClientID is iss (= sub).
	ClientID string
	// JTI and Expires are what the caller's replay cache records (P-TOK-07):
	// refuse another assertion of this client with this jti until Expires (+ skew).
	JTI string
	// DeploymentID is the optional deployment_id claim (CORE §6.2.1), "" if absent.
	DeploymentID string
	Expires      time.Time
	IssuedAt     time.Time
}

// VerifyClientAssertion verifies a client assertion for clientID, the client
// PeekAssertionClient named and the caller found registered: alg RS256 and the
// signature by the tool's key (key, called with the header's kid or ""), iss ==
// sub == clientID, aud containing one of audiences (the token endpoint URL, the
// platform issuer; other audiences may be there too, RFC 7523 §3), exp in the
// future, nbf (if any) and iat not in the future, exp - iat at most
// MaxAssertionLifetime, and a jti of at most MaxReplayIDLength bytes. now is the
// verification time (zero: time.Now()); skew the leeway on exp, nbf and iat
// (negative: none). It is VerifyAssertionSignature, then SignedAssertion.Check.
//
// Every failure is invalid_client (401), except 503 temporarily_unavailable when
// key fails with anything but lti.ErrUnknownKey, and 500 server_error when clientID,
// audiences or key is unusable. Replay of the jti (P-TOK-07) is the caller's.
func VerifyClientAssertion(ctx context.Context, assertion, clientID string, audiences []string, key lti.KeyFunc,
	now time.Time, skew time.Duration) (*Assertion, *apierr.Error) {
	if !usableAudiences(audiences) {
		return nil, errNoVerifier()
	}
	s, e := VerifyAssertionSignature(ctx, assertion, clientID, key)
	if e != nil {
		return nil, e
	}
	return s.Check(audiences, now, skew)
}

// SignedAssertion is a client assertion whose signature verified with the key of the
// tool it names: its claims are the tool's, not yet checked (Check). A refusal before
// one exists answers a request anyone could have sent.
type SignedAssertion struct {
	t        *toolJWT
	clientID string
}

// VerifyAssertionSignature is the first half of VerifyClientAssertion: the structure
// (P-TOK-03), alg RS256 and the signature by the tool's key (P-TOK-08).
func VerifyAssertionSignature(ctx context.Context, assertion, clientID string, key lti.KeyFunc) (*SignedAssertion, *apierr.Error) {
	if clientID == "" || key == nil {
		return nil, errNoVerifier()
	}
	k := &toolJWTAssertion
	t, e := toolJWTSplit(assertion, k)
	if e != nil {
		return nil, e
	}
	if e := toolJWTVerify(ctx, t, k, key); e != nil {
		return nil, e
	}
	return &SignedAssertion{t: t, clientID: clientID}, nil
}

func usableAudiences(audiences []string) bool {
	return slices.ContainsFunc(audiences, func(a string) bool { return a != "" })
}

func errNoVerifier() *apierr.Error {
	return newError(500, CodePlatformMisconfigured, OAuthServerError, "",
		"The token endpoint has no client, audience or tool keys to verify the client assertion with.")
}

// Check is the second half of VerifyClientAssertion: the claims of the signed assertion
// (P-TOK-04 to P-TOK-07, the deployment_id of CORE §6.2.1).
func (s *SignedAssertion) Check(audiences []string, now time.Time, skew time.Duration) (*Assertion, *apierr.Error) {
	if !usableAudiences(audiences) {
		return nil, errNoVerifier()
	}
	k, c, clientID := &toolJWTAssertion, &s.t.claims, s.clientID

	// P-TOK-04.
	iss, e := assertionClient(c, k)
	if e != nil {
		return nil, e
	}
	if iss != clientID {
		return nil, k.err(401, CodeIssuerMismatch, "P-TOK-04", "iss is not the client being authenticated.")
	}
	// P-TOK-05: RFC 7523 §3 — our identity among the audiences.
	aud, ok := toolJWTAudience(c.aud)
	switch {
	case !ok:
		return nil, k.err(401, CodeAudienceMismatch, "P-TOK-05", "aud is not a string or an array of strings.")
	case !slices.ContainsFunc(audiences, func(a string) bool { return a != "" && aud.Contains(a) }):
		return nil, k.err(401, CodeAudienceMismatch, "P-TOK-05",
			"aud does not contain the token endpoint URL or the platform issuer.")
	}
	// P-TOK-06.
	now, skew = toolJWTClock(now, skew)
	exp, iat, e := toolJWTTimes(c, k, now, skew)
	if e != nil {
		return nil, e
	}
	if exp.Sub(iat) > MaxAssertionLifetime {
		return nil, k.err(401, CodeLifetimeTooLong, "P-TOK-06",
			"lives too long: exp must be at most "+MaxAssertionLifetime.String()+" after iat.")
	}
	// P-TOK-07 (the replay cache is the caller's).
	jti, _ := toolJWTString(c.jti)
	switch {
	case jti == "":
		return nil, k.err(401, CodeMissingJTI, "P-TOK-07", "has no jti (a non-empty string).")
	case len(jti) > MaxReplayIDLength:
		return nil, k.err(401, CodeInvalidJTI, "P-TOK-07", "jti is longer than "+strconv.Itoa(MaxReplayIDLength)+" bytes.")
	}
	// CORE §6.2.1: optional, but when sent it must be usable.
	dep, isStr := toolJWTString(c.deploymentID)
	switch {
	case toolJWTAbsent(c.deploymentID):
		dep = ""
	case !isStr || dep == "" || len(dep) > lti.MaxIdentifierLength:
		return nil, k.err(401, CodeInvalidClaim, "P-TOK-03",
			"deployment_id must be a non-empty string of at most "+strconv.Itoa(lti.MaxIdentifierLength)+" bytes.")
	}
	return &Assertion{ClientID: iss, JTI: jti, DeploymentID: dep, Expires: exp, IssuedAt: iat}, nil
}

// GrantScopes returns the requested scopes that are allowed, in request order and
// without repeats (P-TOK-09). SEC §7.1.4: a scope that was not requested is never
// granted; a subset may be (SEC §4.1: the response scope "comprises a subset").
// Nothing grantable is invalid_scope (400).
func GrantScopes(requested, allowed []string) ([]string, *apierr.Error) {
	var out []string
	for _, s := range requested {
		if s != "" && slices.Contains(allowed, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, newError(400, CodeScopeNotAllowed, OAuthInvalidScope, "P-TOK-09",
			"None of the requested scopes is allowed for this tool.")
	}
	return out, nil
}
