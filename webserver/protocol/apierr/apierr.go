// Package apierr holds the one error type behind every error ltiop answers with: the
// protocol packages (lti, ltiplatform) build it, and httpapi writes it as the envelope
//
//	{"status":N,"error":"<reason phrase>","details":{"message":"<CODE>","description":"…"}}
//
// or, at platform mode's OAuth endpoints, as an RFC 6749 error. It sits below all of them
// and imports nothing but the standard library, so the protocol packages stay pure.
package apierr

// Error is a failure to answer with.
type Error struct {
	Status      int    // the HTTP status
	Code        string // the stable code, details.message: integrators match on it, never rename one
	Description string // details.description: safe to show, never a secret
	// Reason, when set, is a more precise stable code than Code, sent as details.reason:
	// where the service interface (§7) names the code of a case, Code is that one and the
	// code ltiop answered with before goes here.
	Reason string
	// Rule is the lti-conformance.md rule the failed check enforces, if any.
	Rule string
	// OAuth is the OAuth 2.0 / OIDC error value ("invalid_client") of answers that go
	// back to a tool in platform mode; empty elsewhere.
	OAuth string
	// Upstream is set when the failure is the LMS's.
	Upstream *Upstream
	// Sent is the value the request sent that the check refused, when it is registration
	// data an administrator compares with the registration (the deployment id of an
	// UNKNOWN_DEPLOYMENT): for the registration's Events, never written to a response.
	// Set only from what a verified signature covers (an id_token's claims): an Event
	// quotes it as the LMS's word.
	Sent string
	// Cause is the underlying failure (a key-set fetch error): for logs and errors.Is,
	// never written to a response.
	Cause error
}

// Upstream describes an LMS failure passed on to the integrator.
type Upstream struct {
	Status int    // the LMS's HTTP status (0 when it did not answer)
	Body   string // its body, truncated
}

// Error reads "CODE: description [rule]: cause", leaving out what is not set.
func (e *Error) Error() string {
	s := e.Code + ": " + e.Description
	if e.Rule != "" {
		s += " [" + e.Rule + "]"
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }
