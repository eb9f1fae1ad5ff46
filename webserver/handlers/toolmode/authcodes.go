package toolmode

import (
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// schemeFailure gives a 401 of the launch services the one code of the credential the
// caller used, as service interface §7 does for the ltik: INVALID_LTIK_AUTH_AUTHORIZATION_HEADER
// for an ltik or no usable scheme at all (g nil), INVALID_SERVICE_AUTH_AUTHORIZATION_HEADER
// for a service key, INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER for a notice key. The precise code (INVALID_AUTHORIZATION_SCHEME,
// UNREGISTERED_OR_INACTIVE_PLATFORM) moves to details.reason; other statuses pass unchanged.
func schemeFailure(e *httpapi.Error, g *grant) *httpapi.Error {
	if e == nil || e.Status != http.StatusUnauthorized {
		return e
	}
	code := CodeInvalidLtikAuth
	switch {
	case g != nil && g.notice:
		code = CodeInvalidNoticeKeyAuth
	case g != nil && g.launch == nil:
		code = CodeInvalidServiceAuth
	}
	if e.Code == code {
		return e
	}
	out := *e
	out.Code, out.Reason = code, e.Code
	return &out
}
