package lti11

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/ltiop/ltiop/internal/oauth1"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// Stable codes of LTI 1.1 refusals (details.message). Never rename one.
const (
	CodeMissingParameters          = "LTI11_MISSING_PARAMETERS"
	CodeInvalidParameters          = "LTI11_INVALID_PARAMETERS"
	CodeInvalidMessageType         = "LTI11_UNSUPPORTED_MESSAGE_TYPE"
	CodeUnknownConsumerKey         = "LTI11_UNKNOWN_CONSUMER_KEY"
	CodeAmbiguousConsumerKey       = "LTI11_AMBIGUOUS_CONSUMER_KEY"
	CodeUnsupportedSignatureMethod = "LTI11_UNSUPPORTED_SIGNATURE_METHOD"
	CodeStaleTimestamp             = "LTI11_STALE_TIMESTAMP"
	CodeInvalidSignature           = "LTI11_INVALID_SIGNATURE"
	CodeNonceReused                = "LTI11_NONCE_ALREADY_USED"
	CodeBodyHashMismatch           = "LTI11_BODY_HASH_MISMATCH"
)

// The OAuth 1.0a types the handlers use, from internal/oauth1.
type (
	// Params are a request's parameters.
	Params = oauth1.Params
	// Param is one parameter.
	Param = oauth1.Param
	// Request is a signed request as received.
	Request = oauth1.Request
)

// Signature methods.
const (
	MethodHMACSHA1   = oauth1.MethodHMACSHA1
	MethodHMACSHA256 = oauth1.MethodHMACSHA256
)

// NonceTTL is how long a used nonce is remembered (twice the timestamp window).
const NonceTTL = oauth1.NonceTTL

func newError(status int, code, rule, description string) *apierr.Error {
	return &apierr.Error{Status: status, Code: code, Rule: rule, Description: description}
}

// RequireOAuth checks that the OAuth parameters are present exactly once and in bounds
// (LTI11-PARAM-02). It says nothing of their values' validity.
func RequireOAuth(ps Params) *apierr.Error {
	if missing := oauth1.Missing(ps); len(missing) > 0 {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-02",
			"The request lacks (or repeats) the OAuth parameters "+strings.Join(missing, ", ")+".")
	}
	if len(ps.Get("oauth_nonce")) > oauth1.MaxNonceLength || len(ps.Get("oauth_consumer_key")) > oauth1.MaxConsumerKeyLength {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-02", "oauth_nonce or oauth_consumer_key is too long.")
	}
	if v := ps.Get("oauth_version"); v != "" && v != "1.0" {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-02", "oauth_version must be 1.0.")
	}
	return nil
}

// Verify checks a request whose OAuth parameters RequireOAuth accepted, signed with
// consumerSecret: the signature method (LTI11-SIG-02), the timestamp window
// (LTI11-TS-01), the signature (LTI11-SIG-01) and, for a non-form body, the body hash
// (LTI11-BODY-01). Single use of the nonce (LTI11-NONCE-01) is the caller's, after this
// succeeds, so an unsigned request never grows the replay store.
func Verify(r Request, consumerSecret string, now time.Time) *apierr.Error {
	switch err := oauth1.Check(r, consumerSecret, now); {
	case err == nil:
		return nil
	case errors.Is(err, oauth1.ErrUnsupportedMethod):
		return newError(400, CodeUnsupportedSignatureMethod, "LTI11-SIG-02",
			"oauth_signature_method must be HMAC-SHA1 or HMAC-SHA256, not "+strconv.Quote(truncate(r.Params.Get("oauth_signature_method"), 40))+".")
	case errors.Is(err, oauth1.ErrStaleTimestamp):
		return newError(401, CodeStaleTimestamp, "LTI11-TS-01",
			"oauth_timestamp is more than 5 minutes from this server's clock: the request is stale, or one of the clocks is wrong.")
	case errors.Is(err, oauth1.ErrBodyHash):
		return newError(401, CodeBodyHashMismatch, "LTI11-BODY-01", "oauth_body_hash is missing or is not the SHA-1 of the body.")
	default:
		return newError(401, CodeInvalidSignature, "LTI11-SIG-01",
			"The OAuth signature does not match: check the shared secret, and that the LMS launches the URL ltiop presents (publicUrl).")
	}
}

// NonceKey is the replay-store key of a request's nonce.
func NonceKey(ps Params) string { return oauth1.NonceKey(ps) }

// ParseAuthorization reads the OAuth parameters of an Authorization header.
func ParseAuthorization(h string) (Params, bool) { return oauth1.ParseAuthorization(h) }

// ErrNonceReused is the refusal of a nonce seen before (LTI11-NONCE-01).
func ErrNonceReused() *apierr.Error {
	return newError(401, CodeNonceReused, "LTI11-NONCE-01", "This oauth_nonce was already used: the request is a replay.")
}

// ErrUnknownConsumerKey is the refusal of a consumer key no active registration holds
// (LTI11-KEY-01).
func ErrUnknownConsumerKey() *apierr.Error {
	return newError(401, CodeUnknownConsumerKey, "LTI11-KEY-01",
		"No active platform registration has this oauth_consumer_key (spec.lti11.consumerKey).")
}

// ErrAmbiguousConsumerKey is the refusal of a consumer key more than one registration holds
// (LTI11-KEY-03): a 1.1 launch names nothing else, so whose shared secret applies, and whose
// launch it is, cannot be told. An operator's fix, hence 503; the holders are named in
// their status (condition LTI11ConsumerKeyUnique), not here, where any sender reads them.
func ErrAmbiguousConsumerKey() *apierr.Error {
	return newError(503, CodeAmbiguousConsumerKey, "LTI11-KEY-03",
		"More than one platform registration holds this oauth_consumer_key (spec.lti11.consumerKey), so the launch cannot be attributed: "+
			"it is refused until one registration holds it. Their status (condition LTI11ConsumerKeyUnique) names them.")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
