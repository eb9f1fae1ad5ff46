package lti11

import (
	"strconv"
	"strings"
	"time"

	"github.com/ltiop/ltiop/webserver/apierr"
)

// Stable codes of LTI 1.1 refusals (details.message). Never rename one.
const (
	CodeMissingParameters          = "LTI11_MISSING_PARAMETERS"
	CodeInvalidMessageType         = "LTI11_UNSUPPORTED_MESSAGE_TYPE"
	CodeUnknownConsumerKey         = "LTI11_UNKNOWN_CONSUMER_KEY"
	CodeUnsupportedSignatureMethod = "LTI11_UNSUPPORTED_SIGNATURE_METHOD"
	CodeStaleTimestamp             = "LTI11_STALE_TIMESTAMP"
	CodeInvalidSignature           = "LTI11_INVALID_SIGNATURE"
	CodeNonceReused                = "LTI11_NONCE_ALREADY_USED"
	CodeBodyHashMismatch           = "LTI11_BODY_HASH_MISMATCH"
)

// Window is how far oauth_timestamp may be from now either way. A nonce must be remembered
// at least 2×Window: a timestamp Window ahead stays acceptable for another 2×Window.
const Window = 5 * time.Minute

// NonceTTL is how long a used nonce is remembered.
const NonceTTL = 2 * Window

// Bounds on what a request may carry, so a refused request costs little and a recorded
// nonce is small.
const (
	MaxNonceLength       = 128
	MaxConsumerKeyLength = 255
)

func newError(status int, code, rule, description string) *apierr.Error {
	return &apierr.Error{Status: status, Code: code, Rule: rule, Description: description}
}

func errUnsupportedMethod(m string) *apierr.Error {
	return newError(400, CodeUnsupportedSignatureMethod, "LTI11-SIG-02",
		"oauth_signature_method must be HMAC-SHA1 or HMAC-SHA256, not "+strconv.Quote(truncate(m, 40))+".")
}

// RequireOAuth checks that the OAuth parameters are present exactly once and in bounds
// (LTI11-PARAM-02). It says nothing of their values' validity.
func RequireOAuth(ps Params) *apierr.Error {
	var missing []string
	for _, name := range []string{"oauth_consumer_key", "oauth_signature_method", "oauth_timestamp", "oauth_nonce", "oauth_signature"} {
		if ps.Count(name) != 1 || ps.Get(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-02",
			"The request lacks (or repeats) the OAuth parameters "+strings.Join(missing, ", ")+".")
	}
	if len(ps.Get("oauth_nonce")) > MaxNonceLength || len(ps.Get("oauth_consumer_key")) > MaxConsumerKeyLength {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-02", "oauth_nonce or oauth_consumer_key is too long.")
	}
	if v := ps.Get("oauth_version"); v != "" && v != "1.0" {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-02", "oauth_version must be 1.0.")
	}
	return nil
}

// Request is a signed request as received.
type Request struct {
	Method string
	// URL is the URL the request was sent to as the sender saw it: ltiop's public URL and
	// path (never the Host header behind a proxy), with the query as received.
	URL string
	// Params are every parameter: query, form body, and the Authorization header's oauth_*.
	Params Params
	// Body, when BodyHashed, is a non-form body whose oauth_body_hash must match.
	Body       []byte
	BodyHashed bool
}

// Verify checks a request whose OAuth parameters RequireOAuth accepted, signed with
// consumerSecret: the signature method (LTI11-SIG-02), the timestamp window
// (LTI11-TS-01), the signature (LTI11-SIG-01) and, for a non-form body, the body hash
// (LTI11-BODY-01). Single use of the nonce (LTI11-NONCE-01) is the caller's, after this
// succeeds, so an unsigned request never grows the replay store.
func Verify(r Request, consumerSecret string, now time.Time) *apierr.Error {
	ps := r.Params
	method := ps.Get("oauth_signature_method")
	if method != MethodHMACSHA1 && method != MethodHMACSHA256 {
		return errUnsupportedMethod(method)
	}
	ts, err := strconv.ParseInt(ps.Get("oauth_timestamp"), 10, 64)
	if err != nil {
		return newError(401, CodeStaleTimestamp, "LTI11-TS-01", "oauth_timestamp is not a number of seconds.")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Window || d < -Window {
		return newError(401, CodeStaleTimestamp, "LTI11-TS-01",
			"oauth_timestamp is more than 5 minutes from this server's clock: the request is stale, or one of the clocks is wrong.")
	}
	if !SignatureMatches(r.Method, r.URL, ps, consumerSecret) {
		return newError(401, CodeInvalidSignature, "LTI11-SIG-01",
			"The OAuth signature does not match: check the shared secret, and that the LMS launches the URL ltiop presents (publicUrl).")
	}
	if r.BodyHashed {
		if ps.Count("oauth_body_hash") != 1 || !constantEqual(ps.Get("oauth_body_hash"), BodyHash(r.Body)) {
			return newError(401, CodeBodyHashMismatch, "LTI11-BODY-01", "oauth_body_hash is missing or is not the SHA-1 of the body.")
		}
	}
	return nil
}

// NonceKey is the replay-store key of a request's nonce: per consumer key, like the
// signature that covers it.
func NonceKey(ps Params) string {
	return "oauth1:" + ps.Get("oauth_consumer_key") + "\x00" + ps.Get("oauth_nonce")
}

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

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
