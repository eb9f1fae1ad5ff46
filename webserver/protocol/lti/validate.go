package lti

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// Stable error codes (apierr.Error.Code). Callers put them in details.message: never rename one.
const (
	CodeInvalidToken          = "INVALID_TOKEN"            // 400 T-TOK-03
	CodeInvalidAlgorithm      = "INVALID_ALGORITHM"        // 401 T-TOK-04
	CodeMissingKID            = "MISSING_KID"              // 401 T-TOK-05
	CodeUnknownKID            = "UNKNOWN_KID"              // 401 T-TOK-08
	CodeKeySetUnavailable     = "KEY_SET_UNAVAILABLE"      // 503 T-JWKS-03
	CodeInvalidSignature      = "INVALID_SIGNATURE"        // 401 T-TOK-10
	CodeIssuerMismatch        = "ISSUER_MISMATCH"          // 401 T-TOK-11
	CodeAudienceMismatch      = "AUDIENCE_MISMATCH"        // 401 T-TOK-12
	CodeAzpMismatch           = "AZP_MISMATCH"             // 401 T-TOK-13
	CodeTokenExpired          = "TOKEN_EXPIRED"            // 401 T-TOK-14
	CodeInvalidIAT            = "INVALID_IAT"              // 401 T-TOK-15
	CodeMissingNonce          = "MISSING_NONCE"            // 401 T-NONCE-01
	CodeNonceMismatch         = "NONCE_MISMATCH"           // 401 T-NONCE-02
	CodeInvalidLTIVersion     = "INVALID_LTI_VERSION"      // 400 T-TOK-17
	CodeInvalidMessageType    = "INVALID_MESSAGE_TYPE"     // 400 T-TOK-18
	CodeMissingDeploymentID   = "MISSING_DEPLOYMENT_ID"    // 400 T-TOK-19
	CodeIdentifierTooLong     = "IDENTIFIER_TOO_LONG"      // 400 T-TOK-19 (deployment_id), T-TOK-21 (others)
	CodeUnknownDeployment     = "UNKNOWN_DEPLOYMENT"       // 403 T-TOK-19
	CodeDeploymentMismatch    = "DEPLOYMENT_MISMATCH"      // 400 T-TOK-20
	CodeMissingClaim          = "MISSING_CLAIM"            // 400 T-TOK-21
	CodeInvalidClaim          = "INVALID_CLAIM"            // 400 T-TOK-21 (required claim of the wrong JSON type)
	CodeTargetLinkURIMismatch = "TARGET_LINK_URI_MISMATCH" // 400 T-TOK-22
)

// MaxTokenSize bounds the id_token Validate accepts (bytes).
const MaxTokenSize = 128 << 10

func newError(status int, code, rule, description string) *apierr.Error {
	return &apierr.Error{Status: status, Code: code, Rule: rule, Description: description}
}

func errInvalidToken(description string) *apierr.Error {
	return newError(400, CodeInvalidToken, "T-TOK-03", description)
}
func errIssuer(d string) *apierr.Error   { return newError(401, CodeIssuerMismatch, "T-TOK-11", d) }
func errAudience(d string) *apierr.Error { return newError(401, CodeAudienceMismatch, "T-TOK-12", d) }
func errAzp(d string) *apierr.Error      { return newError(401, CodeAzpMismatch, "T-TOK-13", d) }
func errExpired(d string) *apierr.Error  { return newError(401, CodeTokenExpired, "T-TOK-14", d) }
func errIat(d string) *apierr.Error      { return newError(401, CodeInvalidIAT, "T-TOK-15", d) }

func errMissingClaim(name, messageType string) *apierr.Error {
	return newError(400, CodeMissingClaim, "T-TOK-21",
		"The "+name+" claim is required in an "+messageType+".")
}

func errInvalidClaim(name, want string) *apierr.Error {
	return newError(400, CodeInvalidClaim, "T-TOK-21", "The "+name+" claim must be "+want+".")
}

func errTooLong(name, rule string) *apierr.Error {
	return newError(400, CodeIdentifierTooLong, rule,
		"The "+name+" claim exceeds "+strconv.Itoa(MaxIdentifierLength)+" characters.")
}

// jwsHeader is what Validate reads of the JOSE header.
type jwsHeader struct{ alg, kid string }

// Policy is what a launch must match: the registration (iss, client_id) the login
// chose and sealed in the state, and the values bound at login time.
type Policy struct {
	Issuer   string // the registration's iss, compared byte for byte (T-TOK-11)
	ClientID string // must be in aud (T-TOK-12) and equal azp when present (T-TOK-13)
	// TrustedAudiences are the only other values allowed in an array aud (§12.4).
	TrustedAudiences []string
	// DeploymentIDs is the registration's allow-list; empty accepts any (T-TOK-19).
	DeploymentIDs []string
	// ExpectedNonce is the nonce sealed in the state; empty checks presence only (T-NONCE-02).
	ExpectedNonce string
	// ExpectedDeploymentID is the login's lti_deployment_id, if any (T-TOK-20).
	ExpectedDeploymentID string
	// ExpectedTargetLinkURI is the login's target_link_uri (T-TOK-22): compared with
	// the claim for a resource link launch, and for deep linking when the claim is
	// present (§12.3). Empty skips the comparison.
	ExpectedTargetLinkURI string
	// Now is the validation time (zero: time.Now()). Skew is the leeway on exp and
	// iat (zero: 60s; negative: none). MaxAge bounds the age of iat (zero: 10m).
	Now    time.Time
	Skew   time.Duration
	MaxAge time.Duration
	// AllowAnonymous accepts launches without sub (CORE §5.3.6.1); the default
	// rejects them, as certification requires (§12.1).
	AllowAnonymous bool
}

// Defaults applied to a zero Policy.Skew and Policy.MaxAge.
const (
	DefaultSkew   = 60 * time.Second
	DefaultMaxAge = 10 * time.Minute
)

// compact is a JWS split and decoded without verification.
type compact struct {
	signed string // header.payload: the JWS signing input
	header jwsHeader
	hasAlg bool
	badAlg bool // alg present but not a string
	// firstAlgRS256: the first alg member is "RS256". With duplicate members, alg is
	// the last (as encoding/json reads it) and both must be RS256.
	firstAlgRS256 bool
	extension     bool   // a crit or b64 member: refused (see verifyRS256)
	signature     []byte // decoded
	doc           string // the payload, sharing claims.Raw's memory
	claims        *Claims
}

// splitCompact splits the token, decodes its three parts into one buffer (the payload
// stays there as Claims.Raw) and reads the header and the claims, each in one pass that
// also validates the JSON. Nothing is verified yet.
func splitCompact(token string) (compact, *apierr.Error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return compact{}, errInvalidToken("The id_token is empty.")
	}
	if len(token) > MaxTokenSize {
		return compact{}, errInvalidToken("The id_token is too large.")
	}
	d1 := strings.IndexByte(token, '.')
	if d1 < 0 {
		return compact{}, errInvalidToken("The id_token is not a compact JWS (header.payload.signature).")
	}
	d2 := strings.IndexByte(token[d1+1:], '.')
	if d2 < 0 {
		return compact{}, errInvalidToken("The id_token is not a compact JWS (header.payload.signature).")
	}
	d2 += d1 + 1
	if strings.IndexByte(token[d2+1:], '.') >= 0 {
		return compact{}, errInvalidToken("The id_token has more than three parts (a JWE or a malformed JWS).")
	}
	// The base64 decoder skips CR and LF; a compact JWS never contains them.
	if strings.IndexByte(token, '\n') >= 0 || strings.IndexByte(token, '\r') >= 0 {
		return compact{}, errInvalidToken("The id_token contains line breaks.")
	}
	enc := base64.RawURLEncoding
	hdr64, payload64, sig64 := token[:d1], token[d1+1:d2], token[d2+1:]
	hn, pn := enc.DecodedLen(len(hdr64)), enc.DecodedLen(len(payload64))
	buf := make([]byte, hn+pn+enc.DecodedLen(len(sig64)))
	n, err := enc.Decode(buf[:hn], []byte(hdr64))
	if err != nil || n == 0 {
		return compact{}, errInvalidToken("The id_token header is not base64url.")
	}
	t := compact{signed: token[:d2]}
	if !t.readHeader(sharedString(buf[:n])) {
		return compact{}, errInvalidToken("The id_token header is not a JSON object.")
	}
	n, err = enc.Decode(buf[hn:hn+pn], []byte(payload64))
	if err != nil || n == 0 {
		return compact{}, errInvalidToken("The id_token payload is not base64url.")
	}
	payload := buf[hn : hn+n : hn+n]
	t.doc = sharedString(payload)
	t.claims = &Claims{Raw: payload}
	if !t.claims.decode(t.doc) {
		return compact{}, errInvalidToken("The id_token payload is not a JSON object.")
	}
	if enc.DecodedLen(len(sig64)) > maxSignatureSize {
		return compact{}, errInvalidToken("The id_token signature is too large.")
	}
	sig := buf[hn+pn:]
	if n, err = enc.Decode(sig, []byte(sig64)); err != nil {
		return compact{}, errInvalidToken("The id_token signature is not base64url.")
	}
	t.signature = sig[:n]
	return t, nil
}

// maxSignatureSize bounds the decoded signature: an RSA key of 8192 bits.
const maxSignatureSize = 1024

// readHeader reads alg, kid and the members ltiop refuses from the JOSE header, and
// reports whether hdr is one JSON object.
func (t *compact) readHeader(hdr string) bool {
	sc := newScanner(hdr)
	if !enterObject(sc) {
		return false
	}
	for sc.NextMember() {
		switch sc.Key() {
		case "alg":
			alg, isStr := readString(sc)
			if !t.hasAlg {
				t.firstAlgRS256 = isStr && alg == "RS256"
			}
			t.hasAlg, t.header.alg, t.badAlg = true, alg, !isStr
		case "kid":
			t.header.kid = readOptString(sc)
		case "crit", "b64":
			t.extension = true
		}
	}
	return sc.End() == nil
}

// Validate verifies an id_token and checks it against p: conformance §1.4 in
// order (structure, alg, kid, key, signature, iss, aud, azp, exp, iat, nonce,
// version, message_type, deployment_id) and then the claims §1.5 requires for the
// message type. It returns the claims, or the first failure. Replay (T-NONCE-03)
// and state binding are the caller's.
func Validate(ctx context.Context, token string, keys KeyFunc, p Policy) (*Claims, *apierr.Error) {
	t, e := verifySigned(ctx, token, keys)
	if e != nil {
		return nil, e
	}
	if e := check(t.claims, &p); e != nil {
		return nil, e
	}
	return t.claims, nil
}

// verifySigned checks a platform-signed JWT up to its signature (T-TOK-03 to T-TOK-10):
// structure, alg, kid, the key and the RS256 signature. Validate and ValidateNotice share it.
func verifySigned(ctx context.Context, token string, keys KeyFunc) (compact, *apierr.Error) {
	t, e := splitCompact(token)
	if e != nil {
		return compact{}, e
	}
	// T-TOK-03 / T-TOK-04: alg is mandatory in a JWS header and must be RS256,
	// checked before any key is looked up. none, HS* and everything else fail.
	if !t.hasAlg {
		return compact{}, errInvalidToken("The id_token header has no alg.")
	}
	if t.badAlg || t.header.alg != "RS256" {
		return compact{}, newError(401, CodeInvalidAlgorithm, "T-TOK-04", "The id_token must be signed with RS256.")
	}
	// T-TOK-05: kid is required even when the key set has one key.
	if t.header.kid == "" {
		return compact{}, newError(401, CodeMissingKID, "T-TOK-05", "The id_token header has no kid.")
	}
	// T-TOK-08 / T-JWKS-03.
	if keys == nil {
		return compact{}, newError(503, CodeKeySetUnavailable, "T-JWKS-03", "No key source is configured for the platform.")
	}
	pub, err := keys(ctx, t.header.kid)
	switch {
	case errors.Is(err, ErrUnknownKey):
		return compact{}, &apierr.Error{Status: 401, Code: CodeUnknownKID, Rule: "T-TOK-08",
			Description: "The platform's key set has no key with the id_token's kid.", Cause: err}
	case err != nil:
		return compact{}, &apierr.Error{Status: 503, Code: CodeKeySetUnavailable, Rule: "T-JWKS-03",
			Description: "The platform's key set could not be obtained.", Cause: err}
	case pub == nil:
		return compact{}, newError(503, CodeKeySetUnavailable, "T-JWKS-03", "The platform's key set could not be obtained.")
	}
	// T-TOK-10.
	if err := t.verifyRS256(pub); err != nil {
		return compact{}, &apierr.Error{Status: 401, Code: CodeInvalidSignature, Rule: "T-TOK-10",
			Description: "The id_token signature is not valid.", Cause: err}
	}
	return t, nil
}

// errJOSEExtension refuses a header with "crit" (RFC 7515 §4.1.11: ltiop understands no
// extension) or "b64" (RFC 7797: the payload would not be the claims that were decoded).
var errJOSEExtension = errors.New("lti: the JWS header has crit or b64, which ltiop does not support")

// errAlgConflict refuses a header whose first alg member is not the RS256 that its last
// one says (RFC 7515 §4: a JWS with duplicate members must be rejected, or read as the
// last; the check of alg read the last).
var errAlgConflict = errors.New("lti: the JWS header has conflicting alg members")

// verifyRS256 checks the RS256 signature of t's signing input with pub through jwx's
// building blocks (jwsbb): the header and the payload are decoded once, here, and the
// signature covers exactly the bytes they were decoded from. What jws.VerifyCompactFast
// refused besides a bad signature is refused too: crit, b64, and an alg other than
// RS256 in its first alg member.
func (t *compact) verifyRS256(pub *rsa.PublicKey) error {
	switch {
	case t.extension:
		return errJOSEExtension
	case !t.firstAlgRS256:
		return errAlgConflict
	}
	bp := signingInputs.Get().(*[]byte)
	in := append((*bp)[:0], t.signed...) // jwsbb takes bytes; the token is a string
	err := jwsbb.VerifyRSA(pub, in, t.signature, crypto.SHA256, false)
	if cap(in) <= maxPooledSigningInput {
		*bp = in[:0]
		signingInputs.Put(bp)
	}
	return err
}

// signingInputs recycles the buffers verifyRS256 copies the signing input into; one
// larger than maxPooledSigningInput (a token of unusual size) is left to the collector.
var signingInputs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledSigningInput = 32 << 10

// check runs the claim checks of Validate, after the signature.
func check(c *Claims, p *Policy) *apierr.Error {
	if e := checkEnvelope(c, p); e != nil {
		return e
	}
	// T-NONCE-01 / T-NONCE-02.
	if c.bad&badNonce != 0 {
		return c.errorFor(badNonce)
	}
	if c.Nonce == "" {
		return newError(401, CodeMissingNonce, "T-NONCE-01", "The id_token has no nonce.")
	}
	if p.ExpectedNonce != "" && subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(p.ExpectedNonce)) != 1 {
		return newError(401, CodeNonceMismatch, "T-NONCE-02", "The id_token nonce is not the one issued at login.")
	}
	// T-TOK-17.
	if c.Version != LTIVersion {
		if c.Version == "" && c.bad&badVersion == 0 {
			return newError(400, CodeInvalidLTIVersion, "T-TOK-17", "The LTI version claim is missing.")
		}
		return newError(400, CodeInvalidLTIVersion, "T-TOK-17", "The LTI version must be 1.3.0.")
	}
	// T-TOK-18.
	switch {
	case c.bad&badMessageType != 0:
		return c.errorFor(badMessageType)
	case c.MessageType == "":
		return newError(400, CodeInvalidMessageType, "T-TOK-18", "The message_type claim is missing.")
	case c.MessageType != MessageResourceLink && c.MessageType != MessageDeepLinking && c.MessageType != MessageSubmissionReview &&
		!IsAssetProcessorMessage(c.MessageType):
		return newError(400, CodeInvalidMessageType, "T-TOK-18",
			"The message type "+strconv.Quote(truncate(c.MessageType, 64))+" is not supported.")
	}
	// T-TOK-19 / T-TOK-20.
	switch {
	case c.bad&badDeploymentID != 0:
		return c.errorFor(badDeploymentID)
	case c.DeploymentID == "":
		return newError(400, CodeMissingDeploymentID, "T-TOK-19", "The deployment_id claim is missing.")
	case len(c.DeploymentID) > MaxIdentifierLength:
		return errTooLong("deployment_id", "T-TOK-19")
	case len(p.DeploymentIDs) > 0 && !slices.Contains(p.DeploymentIDs, c.DeploymentID):
		e := newError(403, CodeUnknownDeployment, "T-TOK-19", "The deployment is not known for this platform registration.")
		e.Sent = c.DeploymentID
		return e
	case p.ExpectedDeploymentID != "" && c.DeploymentID != p.ExpectedDeploymentID:
		return newError(400, CodeDeploymentMismatch, "T-TOK-20", "The deployment_id differs from the login's lti_deployment_id.")
	}
	// T-TOK-21: what the message type requires.
	switch {
	case IsAssetProcessorMessage(c.MessageType):
		if e := checkAssetProcessorMessage(c); e != nil {
			return e
		}
	case c.MessageType == MessageResourceLink:
		if e := checkResourceLink(c); e != nil {
			return e
		}
	case c.MessageType == MessageSubmissionReview:
		if e := checkSubmissionReview(c); e != nil {
			return e
		}
	default:
		if e := checkDeepLinking(c); e != nil {
			return e
		}
	}
	if e := checkSubject(c, p.AllowAnonymous); e != nil {
		return e
	}
	// T-TOK-22: RLR and submission review (T-SR-02) always (when the login's value is known),
	// DL when the claim is there (§12.3).
	if p.ExpectedTargetLinkURI != "" && (c.MessageType == MessageResourceLink || c.TargetLinkURI != "") &&
		c.TargetLinkURI != p.ExpectedTargetLinkURI {
		return newError(400, CodeTargetLinkURIMismatch, "T-TOK-22", "The target_link_uri differs from the login's target_link_uri.")
	}
	// CORE §5.4.1: context.id is required when the context claim is sent.
	if c.Context != nil {
		switch {
		case c.bad&badContextID != 0:
			return c.errorFor(badContextID)
		case c.Context.ID == "":
			return errMissingClaim("context.id", c.MessageType)
		case len(c.Context.ID) > MaxIdentifierLength:
			return errTooLong("context.id", "T-TOK-21")
		}
	}
	return nil
}

// checkEnvelope checks what every platform-signed JWT must match, a launch or a notice:
// iss, aud, azp, exp and iat (T-TOK-11 to T-TOK-15).
func checkEnvelope(c *Claims, p *Policy) *apierr.Error {
	// T-TOK-11: byte-exact, no normalisation. An unconfigured policy accepts nothing.
	switch {
	case c.bad&badIss != 0:
		return c.errorFor(badIss)
	case p.Issuer == "" || c.Issuer != p.Issuer:
		return errIssuer("The id_token issuer does not match the platform registration.")
	}
	// T-TOK-12: our client_id, and nothing but trusted extras.
	if c.bad&badAud != 0 {
		return c.errorFor(badAud)
	}
	if p.ClientID == "" || !c.Audience.Contains(p.ClientID) {
		return errAudience("The id_token audience does not contain the client_id.")
	}
	for _, a := range c.Audience {
		if a != p.ClientID && !slices.Contains(p.TrustedAudiences, a) {
			return errAudience("The id_token audience contains an untrusted audience.")
		}
	}
	// T-TOK-13.
	switch {
	case c.bad&badAzp != 0:
		return c.errorFor(badAzp)
	case c.AuthorizedParty != "" && c.AuthorizedParty != p.ClientID:
		return errAzp("The id_token azp is not the client_id.")
	case c.AuthorizedParty == "" && len(c.Audience) > 1:
		return errAzp("The id_token has several audiences but no azp.")
	}

	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	skew := p.Skew
	switch {
	case skew == 0:
		skew = DefaultSkew
	case skew < 0:
		skew = 0
	}
	maxAge := p.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	// T-TOK-14.
	if !c.HasExp {
		if c.bad&badExp != 0 {
			return c.errorFor(badExp)
		}
		return errExpired("The id_token has no exp.")
	}
	if !now.Before(time.Unix(c.ExpiresAt, 0).Add(skew)) {
		return errExpired("The id_token has expired.")
	}
	// T-TOK-15.
	if !c.HasIat {
		if c.bad&badIat != 0 {
			return c.errorFor(badIat)
		}
		return errIat("The id_token has no iat.")
	}
	iat := time.Unix(c.IssuedAt, 0)
	if iat.After(now.Add(skew)) {
		return errIat("The id_token was issued in the future.")
	}
	if now.Sub(iat) > maxAge {
		return errIat("The id_token was issued too long ago.")
	}
	return nil
}

func checkResourceLink(c *Claims) *apierr.Error {
	const mt = MessageResourceLink
	switch {
	case c.bad&badTargetLinkURI != 0:
		return c.errorFor(badTargetLinkURI)
	case c.TargetLinkURI == "":
		return errMissingClaim("target_link_uri", mt)
	case c.bad&badResourceLink != 0:
		return c.errorFor(badResourceLink)
	case c.ResourceLink == nil:
		return errMissingClaim("resource_link", mt)
	case c.bad&badResourceLinkID != 0:
		return c.errorFor(badResourceLinkID)
	case c.ResourceLink.ID == "":
		return errMissingClaim("resource_link.id", mt)
	case len(c.ResourceLink.ID) > MaxIdentifierLength:
		return errTooLong("resource_link.id", "T-TOK-21")
	case c.bad&badRoles != 0:
		return c.errorFor(badRoles)
	case !c.RolesPresent:
		return errMissingClaim("roles", mt) // [""] and [] are accepted (§12.2)
	}
	return nil
}

func checkDeepLinking(c *Claims) *apierr.Error {
	const mt = MessageDeepLinking
	dl := c.DeepLinking
	switch {
	case c.bad&badDeepLinking != 0:
		return c.errorFor(badDeepLinking)
	case dl == nil:
		return errMissingClaim("deep_linking_settings", mt)
	case c.bad&badDLReturnURL != 0:
		return c.errorFor(badDLReturnURL)
	case dl.DeepLinkReturnURL == "":
		return errMissingClaim("deep_linking_settings.deep_link_return_url", mt)
	case c.bad&badDLAcceptTypes != 0:
		return c.errorFor(badDLAcceptTypes)
	case dl.AcceptTypes == nil:
		return errMissingClaim("deep_linking_settings.accept_types", mt)
	case c.bad&badDLTargets != 0:
		return c.errorFor(badDLTargets)
	case dl.AcceptPresentationDocumentTargets == nil:
		return errMissingClaim("deep_linking_settings.accept_presentation_document_targets", mt)
	case c.bad&badTargetLinkURI != 0: // optional for DL, but not of another type
		return c.errorFor(badTargetLinkURI)
	}
	return nil
}

func checkSubject(c *Claims, allowAnonymous bool) *apierr.Error {
	switch {
	case c.bad&badSub != 0:
		return c.errorFor(badSub)
	case c.Subject == "" && !allowAnonymous:
		return errMissingClaim("sub", c.MessageType)
	case len(c.Subject) > MaxIdentifierLength:
		return errTooLong("sub", "T-TOK-21")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
