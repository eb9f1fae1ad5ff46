// Package httpapi holds what every handler of the web server shares: the error envelope
// and its stable codes, JSON reading and writing with limits, and the API-key check.
package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// Stable error codes, sent in details.message. Integrators match on them: never rename one.
const (
	CodeMissingAuthorization = "MISSING_AUTHORIZATION_HEADER"
	CodeInvalidAuthScheme    = "INVALID_AUTHORIZATION_SCHEME"
	CodeInvalidAPIKey        = "INVALID_API_KEY"
	CodeAPIKeyNotConfigured  = "API_KEY_NOT_CONFIGURED"
	CodeNotFound             = "NOT_FOUND"
	CodePlatformNotFound     = "PLATFORM_NOT_FOUND"
	// CodeKeySetNotFound: no registration has the key set asked for (/lti/keys/{id}).
	CodeKeySetNotFound    = "KEY_SET_NOT_FOUND"
	CodeMethodNotAllowed  = "METHOD_NOT_ALLOWED"
	CodePayloadTooLarge   = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMedia  = "UNSUPPORTED_MEDIA_TYPE"
	CodeInvalidBody       = "INVALID_REQUEST_BODY"
	CodeInvalidParameters = "INVALID_PARAMETERS"
	CodePlatformExists    = "PLATFORM_ALREADY_REGISTERED"
	CodeConflict          = "CONFLICT"
	CodeNotReady          = "NOT_READY"
	CodeInternal          = "INTERNAL_SERVER_ERROR"
	CodeUpstream          = "UPSTREAM_ERROR"
	CodeUpstreamTimeout   = "UPSTREAM_TIMEOUT"
	// CodeAPIServerUnavailable: a write could not reach the Kubernetes API server (reads are
	// served from the cache meanwhile).
	CodeAPIServerUnavailable = "API_SERVER_UNAVAILABLE"
	// CodeReplayStoreUnavailable: a single use (state, nonce, code…) could not be
	// recorded, so the request is refused rather than accepted unrecorded.
	CodeReplayStoreUnavailable = "REPLAY_STORE_UNAVAILABLE"
	// CodeRateLimited: the client address sent more requests than the route's rate limit
	// allows; Retry-After says when to try again.
	CodeRateLimited = "RATE_LIMITED"
	// CodeURLNotAllowed: the outbound policy refused a URL (or a redirect) ltiop was to
	// call: a loopback, private or cloud metadata address, http where https is required,
	// another host for a call that carries a credential. Nothing was sent there.
	CodeURLNotAllowed = "URL_NOT_ALLOWED"
)

// Error is the one error type of every answer (package apierr), so the protocol
// packages' errors reach WriteError as they are. Upstream is set on LMS failures.
type Error = apierr.Error

// Upstream describes an LMS failure passed on to the integrator.
type Upstream = apierr.Upstream

// Errorf builds an *Error.
func Errorf(status int, code, description string) *Error {
	return &Error{Status: status, Code: code, Description: description}
}

// ReplayStoreUnavailable is the refusal of a request whose single use could not be
// recorded (replay.ErrUnavailable in cause). It carries the OAuth value too, for the
// platform-mode endpoints that answer tools in RFC 6749 form.
func ReplayStoreUnavailable(cause error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeReplayStoreUnavailable, OAuth: "temporarily_unavailable",
		Description: "The replay store did not answer, so this single-use request could not be recorded; try again in a moment.",
		Cause:       cause}
}

// Envelope is the error body of every endpoint:
// {"status":N,"error":"<reason phrase>","details":{"message":"<CODE>","description":"…"}}.
type Envelope struct {
	Status  int             `json:"status"`
	Error   string          `json:"error"`
	Details EnvelopeDetails `json:"details"`
}

// EnvelopeDetails carries the stable code and the description.
type EnvelopeDetails struct {
	Message     string `json:"message"`
	Description string `json:"description"`
	// Reason is a more precise code than Message, when the service interface fixes
	// Message for the case (apierr.Error.Reason).
	Reason string `json:"reason,omitempty"`
	// Set on LMS failures: the LMS's status and (truncated) body.
	ExternalError  bool   `json:"externalError,omitempty"`
	UpstreamStatus int    `json:"upstreamStatus,omitempty"`
	UpstreamBody   string `json:"upstreamBody,omitempty"`
}

// WriteError writes err in the envelope. 401s also carry WWW-Authenticate, unless the
// handler set a more precise one (RFC 6750 §3: error="invalid_token").
func WriteError(w http.ResponseWriter, err *Error) {
	if err.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ltiop"`)
	}
	details := EnvelopeDetails{Message: err.Code, Description: err.Description, Reason: err.Reason}
	if err.Upstream != nil {
		details.ExternalError, details.UpstreamStatus, details.UpstreamBody = true, err.Upstream.Status, err.Upstream.Body
	}
	WriteJSON(w, err.Status, Envelope{Status: err.Status, Error: http.StatusText(err.Status), Details: details})
}

// WriteJSON writes v as the JSON response body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	// URLs are common in these bodies: keep "&" as it is rather than "\u0026". The body is
	// JSON with nosniff, never HTML, so HTML escaping buys nothing.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"status":500,"error":"Internal Server Error","details":{"message":"INTERNAL_SERVER_ERROR","description":"The response could not be encoded."}}`)
	}
	WriteRawJSON(w, status, b)
}

// WriteRawJSON writes already-encoded JSON.
func WriteRawJSON(w http.ResponseWriter, status int, b []byte) {
	StartJSON(w, status)
	_, _ = w.Write(b)
}

// StartJSON sends the status and the headers of a JSON answer, for a body written next
// (streamed, when building it whole would cost too much memory).
func StartJSON(w http.ResponseWriter, status int) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
}
