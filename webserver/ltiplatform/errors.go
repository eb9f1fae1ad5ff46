package ltiplatform

// Error is a platform-mode validation failure: the HTTP status to answer with, a stable
// ltiop code (details.message), the OAuth 2.0 / OIDC error value (error) for responses that
// go back to the tool, a description that never holds secrets, and the conformance rule.
type Error struct {
	Status      int
	Code        string
	OAuth       string
	Description string
	Rule        string
}

func (e *Error) Error() string {
	s := e.Code + ": " + e.Description
	if e.Rule != "" {
		s += " [" + e.Rule + "]"
	}
	return s
}

func newError(status int, code, oauth, rule, description string) *Error {
	return &Error{Status: status, Code: code, OAuth: oauth, Rule: rule, Description: description}
}

// OAuth 2.0 and OIDC error values (RFC 6749 §4.1.2.1, §5.2; OIDC Core §3.1.2.6).
const (
	OAuthInvalidRequest          = "invalid_request"
	OAuthInvalidClient           = "invalid_client"
	OAuthInvalidGrant            = "invalid_grant"
	OAuthUnauthorizedClient      = "unauthorized_client"
	OAuthUnsupportedGrantType    = "unsupported_grant_type"
	OAuthUnsupportedResponseType = "unsupported_response_type"
	OAuthInvalidScope            = "invalid_scope"
	OAuthAccessDenied            = "access_denied"
	OAuthLoginRequired           = "login_required"
	OAuthServerError             = "server_error"
	OAuthTemporarilyUnavailable  = "temporarily_unavailable"
)
