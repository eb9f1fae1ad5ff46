package ltiplatform

import "github.com/ltiop/ltiop/webserver/protocol/apierr"

// newError builds the shared *apierr.Error with the OAuth value a tool gets.
func newError(status int, code, oauth, rule, description string) *apierr.Error {
	return &apierr.Error{Status: status, Code: code, OAuth: oauth, Rule: rule, Description: description}
}

// OAuth 2.0 and OIDC error values (RFC 6749 §4.1.2.1, §5.2; OIDC Core §3.1.2.6).
const (
	OAuthInvalidRequest          = "invalid_request"
	OAuthInvalidClient           = "invalid_client"
	OAuthUnauthorizedClient      = "unauthorized_client"
	OAuthUnsupportedGrantType    = "unsupported_grant_type"
	OAuthUnsupportedResponseType = "unsupported_response_type"
	OAuthInvalidScope            = "invalid_scope"
	OAuthAccessDenied            = "access_denied"
	OAuthServerError             = "server_error"
	OAuthTemporarilyUnavailable  = "temporarily_unavailable"
)
