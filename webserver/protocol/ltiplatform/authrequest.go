package ltiplatform

import (
	"net/url"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// The checks of an incoming OIDC authorization request (lti-conformance.md §1.7) and the
// codes they fail with. P-AUTH-05 (unknown client) and P-AUTH-06 (redirect_uri not
// registered) are the caller's, because they need the tool registry and decide whether a
// redirect is allowed at all; so are P-AUTH-10 (opening the message hint) and the nonce
// replay window.
const (
	CodeUnknownClient       = "UNKNOWN_CLIENT"        // P-AUTH-05, error page
	CodeInactiveTool        = "TOOL_INACTIVE"         // P-AUTH-05, error page
	CodeInvalidRedirectURI  = "INVALID_REDIRECT_URI"  // P-AUTH-06, error page
	CodeMissingParameter    = "MISSING_PARAMETER"     // P-AUTH-02
	CodeInvalidScope        = "INVALID_SCOPE"         // P-AUTH-03
	CodeInvalidResponseType = "INVALID_RESPONSE_TYPE" // P-AUTH-04
	CodeClientMismatch      = "CLIENT_MISMATCH"       // P-AUTH-05
	CodeInvalidResponseMode = "INVALID_RESPONSE_MODE" // P-AUTH-07
	CodeInvalidPrompt       = "INVALID_PROMPT"        // P-AUTH-08
	CodeLoginHintMismatch   = "LOGIN_HINT_MISMATCH"   // P-AUTH-09
	CodeInvalidMessageHint  = "INVALID_MESSAGE_HINT"  // P-AUTH-10
	CodeMessageHintExpired  = "MESSAGE_HINT_EXPIRED"  // P-AUTH-10
	CodeDuplicateNonce      = "DUPLICATE_NONCE"       // service-interface §4.3, §8
)

// AuthRequest is the authorization request a tool sends to the platform (SEC §5.1.1.2).
type AuthRequest struct {
	Scope, ResponseType, ResponseMode, Prompt string
	ClientID, RedirectURI, LoginHint          string
	MessageHint, State, Nonce                 string
}

// ParseAuthRequest reads the parameters from the query string or form body (P-AUTH-01).
func ParseAuthRequest(v url.Values) AuthRequest {
	return AuthRequest{
		Scope: v.Get("scope"), ResponseType: v.Get("response_type"), ResponseMode: v.Get("response_mode"),
		Prompt: v.Get("prompt"), ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"),
		LoginHint: v.Get("login_hint"), MessageHint: v.Get("lti_message_hint"), State: v.Get("state"), Nonce: v.Get("nonce"),
	}
}

// RedirectAllowed reports whether uri is, byte for byte, one of the registered redirection
// URIs (P-AUTH-06: no prefix or host-only matching).
func RedirectAllowed(uri string, registered []string) bool {
	if uri == "" {
		return false
	}
	for _, r := range registered {
		if r == uri {
			return true
		}
	}
	return false
}

// CheckAuthRequest checks what needs no lookup, in the order of §1.7: required parameters,
// scope, response_type, response_mode, prompt. The errors go back to the registered
// redirect_uri.
func CheckAuthRequest(r AuthRequest) *apierr.Error {
	for _, p := range [...]struct{ name, value string }{
		{"scope", r.Scope}, {"response_type", r.ResponseType}, {"client_id", r.ClientID},
		{"redirect_uri", r.RedirectURI}, {"login_hint", r.LoginHint}, {"lti_message_hint", r.MessageHint},
		{"nonce", r.Nonce}, {"state", r.State}, {"response_mode", r.ResponseMode}, {"prompt", r.Prompt},
	} {
		if p.value == "" {
			return newError(400, CodeMissingParameter, OAuthInvalidRequest, "P-AUTH-02", "The "+p.name+" parameter is required.")
		}
	}
	if r.Scope != "openid" {
		return newError(400, CodeInvalidScope, OAuthInvalidScope, "P-AUTH-03", "scope must be openid.")
	}
	if r.ResponseType != "id_token" {
		return newError(400, CodeInvalidResponseType, OAuthUnsupportedResponseType, "P-AUTH-04", "response_type must be id_token.")
	}
	if r.ResponseMode != "form_post" {
		return newError(400, CodeInvalidResponseMode, OAuthInvalidRequest, "P-AUTH-07", "response_mode must be form_post.")
	}
	if r.Prompt != "none" {
		// The platform never shows a login page to a tool's request (SEC: "must just fail the flow").
		return newError(400, CodeInvalidPrompt, OAuthInvalidRequest, "P-AUTH-08", "prompt must be none.")
	}
	if len(r.Nonce) > maxIdentifier || len(r.State) > maxState {
		return newError(400, CodeMissingParameter, OAuthInvalidRequest, "P-AUTH-02", "nonce or state is too long.")
	}
	return nil
}

// CheckHintBinding checks the opened message hint against the request: issued for this
// client (P-AUTH-05) and for the user named by login_hint (P-AUTH-09).
func CheckHintBinding(r AuthRequest, h *MessageHint) *apierr.Error {
	if h.ClientID != r.ClientID {
		return newError(400, CodeClientMismatch, OAuthUnauthorizedClient, "P-AUTH-05",
			"The lti_message_hint was issued for another client.")
	}
	if h.User != r.LoginHint {
		return newError(400, CodeLoginHintMismatch, OAuthAccessDenied, "P-AUTH-09",
			"login_hint does not name the user the launch was created for.")
	}
	return nil
}

// ErrInvalidMessageHint and ErrMessageHintExpired are the P-AUTH-10 failures.
func ErrInvalidMessageHint() *apierr.Error {
	return newError(400, CodeInvalidMessageHint, OAuthInvalidRequest, "P-AUTH-10",
		"The lti_message_hint is not one this platform issued.")
}

// ErrMessageHintExpired is P-AUTH-10 for a hint older than its hour.
func ErrMessageHintExpired() *apierr.Error {
	return newError(400, CodeMessageHintExpired, OAuthInvalidRequest, "P-AUTH-10",
		"The lti_message_hint has expired (it is valid for one hour): create the launch again.")
}

// ErrDuplicateNonce is a nonce seen within the replay window.
func ErrDuplicateNonce() *apierr.Error {
	return &apierr.Error{Status: 400, Code: CodeDuplicateNonce, OAuth: OAuthInvalidRequest,
		Description: "The nonce was already used within the last 30 seconds."}
}

// ErrorParams are the fields of an OIDC error response (P-AUTH-12, P-AUTH-13).
func ErrorParams(e *apierr.Error, state string) [][2]string {
	desc := e.Code + ": " + e.Description
	fields := [][2]string{{"error", e.OAuth}, {"error_description", desc}}
	if state != "" {
		fields = append(fields, [2]string{"state", state})
	}
	return fields
}

const (
	maxIdentifier = 1024
	maxState      = 4096
)
