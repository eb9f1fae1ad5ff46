package ltiplatform

// JWTs that external tools sign and the platform verifies: the deep-linking
// response (deeplinking.go, §1.8) and the client assertion at the token endpoint
// (assertion.go, §2 P-TOK). Both are compact RS256 JWSs checked the same way up
// to the signature; this file holds that shared half:
//
//  1. structure: at most MaxToolJWTSize bytes, three base64url parts, header and
//     payload JSON objects, no "crit" or "b64" header (no extension is understood);
//  2. alg: RS256 only, checked before any key is looked up (none, HS256 — the
//     public-key-as-HMAC-secret confusion — and everything else refused);
//  3. key: lti.KeyFunc(kid), "" when the header has no kid (a tool registered with a
//     static key needs none); lti.ErrUnknownKey is 401, any other failure 503;
//  4. signature: jws.VerifyCompactFast with that key, and the verified payload must
//     be the payload the claims were read from.
//
// Then the time claims, which both messages check alike (exp, nbf, iat). The
// header's jwk, jku, x5u and x5c members are never used: keys come from the
// registration only.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/internal/jsonscan"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// MaxToolJWTSize bounds a tool-signed JWT (deep-linking response or client
// assertion), in bytes of its compact serialisation.
const MaxToolJWTSize = 256 << 10

// MaxReplayIDLength bounds the nonce of a deep-linking response and the jti of a
// client assertion (bytes): the values a caller keeps in its replay cache.
const MaxReplayIDLength = 1024

// Stable error codes of tool-signed JWTs and the token endpoint (apierr.Error.Code).
// Callers put them in details.message: never rename one. Each comment gives the
// status and rule in a deep-linking response (DLR) and at the token endpoint
// (TOK, where every assertion failure is OAuth invalid_client).
//
// The token endpoint also uses two codes authrequest.go declares: CodeMissingParameter
// (MISSING_PARAMETER, 400 invalid_request: grant_type P-TOK-01, client_assertion_type
// P-TOK-02 or client_assertion P-TOK-03 missing) and CodeInvalidScope (INVALID_SCOPE,
// 400 invalid_scope P-TOK-09: scope missing, empty or not RFC 6749 §3.3 syntax).
const (
	// DLR 400 P-DLR-01; TOK 401 P-TOK-03: not three base64url parts, header or
	// payload not a JSON object, too large, no alg, crit/b64 header, bad kid type.
	CodeInvalidToken = "INVALID_TOKEN"
	// 401. DLR P-DLR-01 (none) or P-DLR-05 (any other alg than RS256); TOK P-TOK-08.
	CodeInvalidAlgorithm = "INVALID_ALGORITHM"
	// 401 DLR P-DLR-01, TOK P-TOK-08: no kid in the header and no static key for the tool.
	CodeMissingKID = "MISSING_KID"
	// 401 DLR P-DLR-01, TOK P-TOK-08: the tool has no key with the header's kid.
	CodeUnknownKID = "UNKNOWN_KID"
	// 503 (OAuth temporarily_unavailable) DLR P-DLR-01, TOK P-TOK-08: lti.KeyFunc failed.
	CodeKeySetUnavailable = "KEY_SET_UNAVAILABLE"
	// 401 DLR P-DLR-01, TOK P-TOK-08.
	CodeInvalidSignature = "INVALID_SIGNATURE"
	// 401 DLR P-DLR-02 (iss is not the client_id), TOK P-TOK-04 (iss is not the client).
	CodeIssuerMismatch = "ISSUER_MISMATCH"
	// 401 TOK P-TOK-04: sub is not iss / the client.
	CodeSubjectMismatch = "SUBJECT_MISMATCH"
	// 401 DLR P-DLR-03 (aud is not exactly the platform issuer), TOK P-TOK-05.
	CodeAudienceMismatch = "AUDIENCE_MISMATCH"
	// 401 DLR P-DLR-04: several audiences without azp, or azp not the platform issuer.
	CodeAzpMismatch = "AZP_MISMATCH"
	// 401 DLR P-DLR-06, TOK P-TOK-06: exp missing, not a number, or past (skew allowed).
	CodeTokenExpired = "TOKEN_EXPIRED"
	// 401 DLR P-DLR-06, TOK P-TOK-06: nbf (optional) not a number or in the future.
	CodeTokenNotYetValid = "TOKEN_NOT_YET_VALID"
	// 401 DLR P-DLR-07, TOK P-TOK-06: iat missing, not a number, or in the future.
	CodeInvalidIAT = "INVALID_IAT"
	// 401 TOK P-TOK-06: exp - iat exceeds MaxAssertionLifetime.
	CodeLifetimeTooLong = "TOKEN_LIFETIME_TOO_LONG"
	// 401 DLR P-DLR-08: nonce missing, empty or not a string.
	CodeMissingNonce = "MISSING_NONCE"
	// 401 DLR P-DLR-08: nonce longer than MaxReplayIDLength.
	CodeInvalidNonce = "INVALID_NONCE"
	// 401 TOK P-TOK-07: jti missing, empty or not a string (replay is the caller's).
	CodeMissingJTI = "MISSING_JTI"
	// 401 TOK P-TOK-07: jti longer than MaxReplayIDLength.
	CodeInvalidJTI = "INVALID_JTI"
	// 401 invalid_client TOK P-TOK-07: the jti was used before (the caller's replay check).
	CodeAssertionReplayed = "ASSERTION_REPLAYED"
	// 400 DLR P-DLR-10: deployment_id missing or not the request's.
	CodeDeploymentMismatch = "DEPLOYMENT_MISMATCH"
	// 400 DLR P-DLR-11: message_type is not LtiDeepLinkingResponse.
	CodeInvalidMessageType = "INVALID_MESSAGE_TYPE"
	// 400 DLR P-DLR-11: version is not 1.3.0.
	CodeInvalidLTIVersion = "INVALID_LTI_VERSION"
	// 400 DLR P-DLR-12: data not echoed byte-exact (or sent when the request had none).
	CodeDataMismatch = "DATA_MISMATCH"
	// 400 DLR P-DLR-13: a content item is malformed (DL §3: wrong JSON type, missing url, …).
	CodeInvalidContentItem = "INVALID_CONTENT_ITEM"
	// 400 DLR P-DLR-13: a content item the request did not accept (type not in
	// accept_types, more than one without accept_multiple, lineItem with accept_lineitem false).
	CodeContentItemRejected = "CONTENT_ITEM_REJECTED"
	// 401 TOK P-TOK-03: deployment_id present but not a string of at most 255 bytes.
	CodeInvalidClaim = "INVALID_CLAIM"

	// 400 invalid_request: a form parameter is repeated (RFC 6749 §3.2), rule of that parameter.
	CodeDuplicateParameter = "DUPLICATE_PARAMETER"
	// 400 unsupported_grant_type P-TOK-01.
	CodeUnsupportedGrantType = "UNSUPPORTED_GRANT_TYPE"
	// 401 invalid_client P-TOK-02: neither client_assertion_type nor client_assertion.
	CodeMissingClientAuthentication = "MISSING_CLIENT_AUTHENTICATION"
	// 401 invalid_client P-TOK-02: client_assertion_type is not the jwt-bearer URN.
	CodeUnsupportedAssertionType = "UNSUPPORTED_ASSERTION_TYPE"
	// 400 invalid_request P-TOK-02: client_secret next to client_assertion (RFC 6749 §2.3).
	CodeMultipleClientAuthentication = "MULTIPLE_CLIENT_AUTHENTICATION"
	// 400 invalid_scope P-TOK-09: none of the requested scopes is allowed.
	CodeScopeNotAllowed = "SCOPE_NOT_ALLOWED"

	// 500 server_error, no rule: the caller passed an unusable configuration (no
	// client_id, issuer, deployment, audience or lti.KeyFunc). Nothing is accepted.
	CodePlatformMisconfigured = "PLATFORM_MISCONFIGURED"
)

// toolJWTKind is what differs between the kinds of tool JWT in the shared checks.
type toolJWTKind struct {
	name      string // as descriptions call it: "The <name> …"
	badStatus int    // status of a malformed JWT (400 DLR, 401 TOK)
	oauth     string // OAuth error value of every failure but the 503
	ruleShape string // structure, no alg
	ruleNone  string // alg none
	ruleAlg   string // any other alg than RS256
	ruleKey   string // kid, key lookup, signature
	ruleExp   string // exp, nbf
	ruleIat   string // iat (and the lifetime bound)
}

// toolJWT is a tool JWT split and decoded, not yet verified.
type toolJWT struct {
	token   string // trimmed; what the signature is checked over
	alg     string
	hasAlg  bool
	algBad  bool // alg present but not a string
	kid     string
	payload []byte
	claims  toolJWTClaims
}

// toolJWTClaims are the raw JSON values of the claims the platform reads ("" when
// absent). When a claim appears twice the last one counts, as in encoding/json.
type toolJWTClaims struct {
	iss, sub, aud, azp, exp, iat, nbf, nonce, jti string

	deploymentID, messageType, version string

	data, contentItems, msg, log, errorMsg, errorLog string
}

func (c *toolJWTClaims) set(key, raw string) {
	switch key {
	case "iss":
		c.iss = raw
	case "sub":
		c.sub = raw
	case "aud":
		c.aud = raw
	case "azp":
		c.azp = raw
	case "exp":
		c.exp = raw
	case "iat":
		c.iat = raw
	case "nbf":
		c.nbf = raw
	case "nonce":
		c.nonce = raw
	case "jti":
		c.jti = raw
	case lti.ClaimDeploymentID:
		c.deploymentID = raw
	case lti.ClaimMessageType:
		c.messageType = raw
	case lti.ClaimVersion:
		c.version = raw
	case lti.ClaimDLData:
		c.data = raw
	case lti.ClaimContentItems:
		c.contentItems = raw
	case lti.ClaimDLMsg:
		c.msg = raw
	case lti.ClaimDLLog:
		c.log = raw
	case lti.ClaimDLErrorMsg:
		c.errorMsg = raw
	case lti.ClaimDLErrorLog:
		c.errorLog = raw
	}
}

// toolJWTMaxSignature bounds the decoded signature (an 8192-bit RSA key's).
const toolJWTMaxSignature = 1024

func (k *toolJWTKind) err(status int, code, rule, description string) *apierr.Error {
	return newError(status, code, k.oauth, rule, "The "+k.name+" "+description)
}

func (k *toolJWTKind) malformed(description string) *apierr.Error {
	return k.err(k.badStatus, CodeInvalidToken, k.ruleShape, description)
}

// toolJWTSplit checks the structure of token and decodes its header and the
// claims the platform reads, without verifying anything.
func toolJWTSplit(token string, k *toolJWTKind) (*toolJWT, *apierr.Error) {
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return nil, k.malformed("is empty.")
	case len(token) > MaxToolJWTSize:
		return nil, k.malformed("is larger than " + strconv.Itoa(MaxToolJWTSize>>10) + " KB.")
	}
	hdrPart, rest, ok1 := strings.Cut(token, ".")
	payloadPart, sigPart, ok2 := strings.Cut(rest, ".")
	switch {
	case !ok1 || !ok2:
		return nil, k.malformed("is not a compact JWS (header.payload.signature).")
	case strings.IndexByte(sigPart, '.') >= 0:
		return nil, k.malformed("has more than three parts (a JWE or a malformed JWS).")
	case strings.ContainsAny(token, "\r\n"): // the base64 decoder would skip them
		return nil, k.malformed("contains line breaks.")
	}
	enc := base64.RawURLEncoding.Strict()
	hdr, err := enc.DecodeString(hdrPart)
	if err != nil || len(hdr) == 0 {
		return nil, k.malformed("header is not base64url.")
	}
	payload, err := enc.DecodeString(payloadPart)
	if err != nil || len(payload) == 0 {
		return nil, k.malformed("payload is not base64url.")
	}
	if enc.DecodedLen(len(sigPart)) > toolJWTMaxSignature {
		return nil, k.malformed("signature is too large.")
	}
	var sigBuf [toolJWTMaxSignature]byte
	if _, err := enc.Decode(sigBuf[:], []byte(sigPart)); err != nil {
		return nil, k.malformed("signature is not base64url.")
	}

	t := &toolJWT{token: token, payload: payload}
	var sc jsonscan.Scanner
	sc.Reset(string(hdr))
	if sc.Kind() != jsonscan.Object {
		return nil, k.malformed("header is not a JSON object.")
	}
	for sc.Object(); sc.NextMember(); {
		switch sc.Key() {
		case "alg":
			t.hasAlg = true
			t.alg, ok1 = jsonscan.Unquote(sc.Raw())
			t.algBad = !ok1
		case "kid":
			var isStr bool
			if t.kid, isStr = jsonscan.Unquote(sc.Raw()); !isStr {
				return nil, k.malformed("header kid is not a string.")
			}
		case "crit", "b64": // RFC 7515 §4.1.11, RFC 7797: extensions we do not implement
			return nil, k.malformed("header has a " + strconv.Quote(sc.Key()) + " member: JWS extensions are not supported.")
		}
	}
	if sc.End() != nil {
		return nil, k.malformed("header is not a JSON object.")
	}
	if !t.hasAlg {
		return nil, k.malformed("header has no alg.")
	}

	sc.Reset(string(payload))
	if sc.Kind() != jsonscan.Object {
		return nil, k.malformed("payload is not a JSON object.")
	}
	for sc.Object(); sc.NextMember(); {
		key := sc.Key()
		t.claims.set(key, sc.Raw())
	}
	if sc.End() != nil {
		return nil, k.malformed("payload is not a JSON object.")
	}
	return t, nil
}

// toolJWTVerify checks alg, looks the key up and verifies the signature.
func toolJWTVerify(ctx context.Context, t *toolJWT, k *toolJWTKind, key lti.KeyFunc) *apierr.Error {
	switch {
	case t.algBad:
		return k.err(401, CodeInvalidAlgorithm, k.ruleAlg, "header alg is not a string.")
	case strings.EqualFold(t.alg, "none"): // SEC §5.2.5
		return k.err(401, CodeInvalidAlgorithm, k.ruleNone, "is not signed (alg none): it must be signed with RS256.")
	case t.alg != "RS256":
		return k.err(401, CodeInvalidAlgorithm, k.ruleAlg, "must be signed with RS256, not "+
			strconv.Quote(toolJWTTruncate(t.alg, 32))+".")
	}
	pub, err := key(ctx, t.kid)
	switch {
	case errors.Is(err, lti.ErrUnknownKey) && t.kid == "":
		return k.err(401, CodeMissingKID, k.ruleKey, "header has no kid, and the tool has no key that goes without one.")
	case errors.Is(err, lti.ErrUnknownKey):
		return k.err(401, CodeUnknownKID, k.ruleKey, "header kid is not one of the tool's keys.")
	case err != nil, pub == nil, pub.N == nil, pub.N.Sign() <= 0, pub.E < 2:
		return newError(503, CodeKeySetUnavailable, OAuthTemporarilyUnavailable, k.ruleKey,
			"The tool's keys could not be obtained; try again later.")
	}
	verified, err := jws.VerifyCompactFast(pub, []byte(t.token), jwa.RS256())
	if err != nil || !bytes.Equal(verified, t.payload) {
		return k.err(401, CodeInvalidSignature, k.ruleKey, "signature is not valid for the tool's key.")
	}
	return nil
}

// toolJWTTimes checks exp (present, a number, now < exp + skew), nbf (if present:
// a number, nbf <= now + skew) and iat (present, a number, iat <= now + skew),
// and returns exp and iat.
func toolJWTTimes(c *toolJWTClaims, k *toolJWTKind, now time.Time, skew time.Duration) (exp, iat time.Time, e *apierr.Error) {
	expected := func(code, rule, d string) (time.Time, time.Time, *apierr.Error) {
		return time.Time{}, time.Time{}, k.err(401, code, rule, d)
	}
	switch n, ok := toolJWTNumericDate(c.exp); {
	case toolJWTAbsent(c.exp):
		return expected(CodeTokenExpired, k.ruleExp, "has no exp.")
	case !ok:
		return expected(CodeTokenExpired, k.ruleExp, "exp is not a number.")
	default:
		if exp = time.Unix(n, 0); !now.Before(exp.Add(skew)) {
			return expected(CodeTokenExpired, k.ruleExp, "has expired.")
		}
	}
	if !toolJWTAbsent(c.nbf) {
		n, ok := toolJWTNumericDate(c.nbf)
		switch {
		case !ok:
			return expected(CodeTokenNotYetValid, k.ruleExp, "nbf is not a number.")
		case time.Unix(n, 0).After(now.Add(skew)):
			return expected(CodeTokenNotYetValid, k.ruleExp, "is not valid yet (nbf).")
		}
	}
	switch n, ok := toolJWTNumericDate(c.iat); {
	case toolJWTAbsent(c.iat):
		return expected(CodeInvalidIAT, k.ruleIat, "has no iat.")
	case !ok:
		return expected(CodeInvalidIAT, k.ruleIat, "iat is not a number.")
	default:
		if iat = time.Unix(n, 0); iat.After(now.Add(skew)) {
			return expected(CodeInvalidIAT, k.ruleIat, "was issued in the future (iat).")
		}
	}
	return exp, iat, nil
}

// toolJWTClock applies the defaults: a zero now is time.Now(), a negative skew none.
func toolJWTClock(now time.Time, skew time.Duration) (time.Time, time.Duration) {
	if now.IsZero() {
		now = time.Now()
	}
	return now, max(skew, 0)
}

// toolJWTAbsent reports whether a claim is absent or null.
func toolJWTAbsent(raw string) bool {
	return raw == "" || jsonscan.KindOf(raw) == jsonscan.Null
}

// toolJWTString returns the value of a claim that is a JSON string.
func toolJWTString(raw string) (string, bool) {
	if jsonscan.KindOf(raw) != jsonscan.String {
		return "", false
	}
	return jsonscan.Unquote(raw)
}

// toolJWTAudience decodes aud, a string or an array of strings.
func toolJWTAudience(raw string) (lti.Audience, bool) {
	if toolJWTAbsent(raw) {
		return nil, true
	}
	var a lti.Audience
	if err := a.UnmarshalJSON([]byte(raw)); err != nil {
		return nil, false
	}
	return a, true
}

// toolJWTMaxDate bounds NumericDates (±2^53 s) so that time arithmetic never overflows.
const toolJWTMaxDate = 1 << 53

// toolJWTNumericDate reads a JSON number as whole unix seconds, fractions
// truncated toward negative infinity (RFC 7519 §2 allows them).
func toolJWTNumericDate(raw string) (int64, bool) {
	if jsonscan.KindOf(raw) != jsonscan.Number {
		return 0, false
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return n, n <= toolJWTMaxDate && n >= -toolJWTMaxDate
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || f > toolJWTMaxDate || f < -toolJWTMaxDate {
		return 0, false
	}
	return int64(math.Floor(f)), true
}

// toolJWTTruncate shortens s to at most n bytes (on a rune boundary) for a description.
func toolJWTTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
