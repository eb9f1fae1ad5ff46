// Package dynreg is the tool side of LTI Dynamic Registration 1.0 (conformance checklist §6):
// it reads a platform's OpenID configuration, builds ltiop's tool registration, posts it to
// the platform's registration endpoint and reads the answer, and renders the page that
// hands the browser back to the LMS. It also builds Canvas's developer-key JSON for manual
// setup.
//
// The package speaks the protocol only. Every outbound request goes through the
// *http.Client the caller passes, which is where the outbound guard belongs (https only
// outside dev mode, no loopback, private, link-local or metadata addresses, checked on the
// resolved address and after redirects). Storing the result (a PlatformRegistration) is
// the caller's job.
package dynreg

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/paths"
)

// Scopes ltiop asks for: the AGS, NRPS and Course Groups services it supports, in this
// order.
var Scopes = []string{
	ltiwire.ScopeLineItem,
	ltiwire.ScopeLineItemReadOnly,
	ltiwire.ScopeResultReadOnly,
	ltiwire.ScopeScore,
	ltiwire.ScopeMembershipReadOnly,
	ltiwire.ScopeGroupReadOnly,
}

// Message types ltiop can be launched with.
const (
	MessageResourceLink = "LtiResourceLinkRequest"
	MessageDeepLinking  = "LtiDeepLinkingRequest"
)

// Keys of the registration documents.
const (
	// KeyToolConfiguration is the tool configuration member of a registration (and of the
	// platform's answer, where Moodle puts deployment_id).
	KeyToolConfiguration = "https://purl.imsglobal.org/spec/lti-tool-configuration"
	// KeyPlatformConfiguration is the LTI member of a platform's OpenID configuration.
	KeyPlatformConfiguration = "https://purl.imsglobal.org/spec/lti-platform-configuration"
	// KeyCanvasPrivacyLevel is Canvas's privacy level, a member of the tool configuration.
	KeyCanvasPrivacyLevel = "https://canvas.instructure.com/lti/privacy_level"
)

// Canvas privacy levels: which personal data Canvas puts in launches.
const (
	PrivacyAnonymous = "anonymous"
	PrivacyNameOnly  = "name_only"
	PrivacyEmailOnly = "email_only"
	PrivacyPublic    = "public"
)

// ToolConfig is what ltiop tells platforms about itself (from ltiop's configuration).
type ToolConfig struct {
	// PublicURL is ltiop's base URL, without a trailing slash (one is tolerated): login =
	// PublicURL+"/lti/login", launch and redirect = PublicURL+"/lti/launch", JWKS =
	// PublicURL+"/lti/keys".
	PublicURL string
	// Name is the tool's name (client_name, message labels); "ltiop" when empty.
	Name string
	// Description is a short description of the tool; optional.
	Description string
	// LogoURL is an absolute URL of the tool's logo (logo_uri, icon_uri); optional.
	LogoURL string
	// DeepLinking offers LtiDeepLinkingRequest (a Deep Linking URL is configured).
	DeepLinking bool
	// CustomParameters are sent with every launch (values may use substitution variables).
	CustomParameters map[string]string
	// CanvasPrivacyLevel is anonymous, name_only, email_only or public; empty means public.
	CanvasPrivacyLevel string
	// AssetProcessor offers the Asset Processor and EULA message types and asks for their
	// scopes (assetprocessor.go).
	AssetProcessor bool
	// Notices asks for the Platform Notification Service scope (a notice webhook is
	// configured): see notices.go.
	Notices bool
}

// Validate reports a ToolConfig that BuildRegistration would turn into a registration the
// platforms refuse or misread. Check it when the configuration is loaded.
func (tc ToolConfig) Validate() error {
	u, err := url.Parse(tc.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("dynreg: public URL %q must be an absolute http(s) URL without query or fragment", tc.PublicURL)
	}
	if tc.LogoURL != "" && !isAbsoluteURL(tc.LogoURL) {
		return fmt.Errorf("dynreg: logo URL %q must be an absolute http(s) URL", tc.LogoURL)
	}
	switch tc.CanvasPrivacyLevel {
	case "", PrivacyAnonymous, PrivacyNameOnly, PrivacyEmailOnly, PrivacyPublic:
	default:
		return fmt.Errorf("dynreg: Canvas privacy level %q: want anonymous, name_only, email_only or public", tc.CanvasPrivacyLevel)
	}
	return nil
}

func (tc ToolConfig) base() string   { return strings.TrimRight(tc.PublicURL, "/") }
func (tc ToolConfig) login() string  { return tc.base() + paths.Login }
func (tc ToolConfig) launch() string { return tc.base() + paths.Launch }
func (tc ToolConfig) keys() string   { return tc.base() + paths.Keys }

func (tc ToolConfig) keySet(id string) string {
	if id == "" {
		return tc.keys()
	}
	return tc.base() + paths.KeySet(id)
}

func (tc ToolConfig) name() string {
	if tc.Name == "" {
		return "ltiop"
	}
	return tc.Name
}

// domain is the host (and port, when there is one) of PublicURL.
func (tc ToolConfig) domain() string {
	u, err := url.Parse(tc.PublicURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// privacyLevel is the Canvas privacy level to ask for: public when unset, anonymous (the
// least data) when the configured value is not one Canvas knows.
func (tc ToolConfig) privacyLevel() string {
	switch tc.CanvasPrivacyLevel {
	case "":
		return PrivacyPublic
	case PrivacyAnonymous, PrivacyNameOnly, PrivacyEmailOnly, PrivacyPublic:
		return tc.CanvasPrivacyLevel
	default:
		return PrivacyAnonymous
	}
}

func (tc ToolConfig) customParameters() map[string]any {
	out := make(map[string]any, len(tc.CustomParameters))
	for k, v := range tc.CustomParameters {
		out[k] = v
	}
	return out
}

// Error codes, stable: the registration endpoint and the pre-approval API return them.
const (
	// CodeConfigurationUnavailable: the OpenID configuration could not be fetched (no
	// answer, or a status other than 200; Status says which).
	CodeConfigurationUnavailable = "CONFIGURATION_UNAVAILABLE"
	// CodeInvalidConfiguration: the configuration URL, or the document it serves, is not
	// a usable OpenID configuration.
	CodeInvalidConfiguration = "INVALID_CONFIGURATION"
	// CodeIssuerMismatch: the issuer is not on the configuration URL's host, or the
	// registration endpoint not on the issuer's host (T-DR-02).
	CodeIssuerMismatch = "ISSUER_MISMATCH"
	// CodeRegistrationUnavailable: the registration endpoint did not answer.
	CodeRegistrationUnavailable = "REGISTRATION_UNAVAILABLE"
	// CodeRegistrationRefused: the registration endpoint answered with a non-2xx status.
	CodeRegistrationRefused = "REGISTRATION_REFUSED"
	// CodeInvalidRegistrationResponse: the registration endpoint's 2xx answer is not a
	// JSON object with a client_id.
	CodeInvalidRegistrationResponse = "INVALID_REGISTRATION_RESPONSE"
)

// Error is a registration failure with a stable Code. Message is meant for the
// administrator registering the tool: it names the problem and, for a refusal, quotes the
// start of the platform's answer (render it escaped).
type Error struct {
	Code    string
	Message string
	Status  int // the platform's HTTP status, when it answered; 0 otherwise

	err error // the underlying cause, if any (a network error, a context error)
}

func (e *Error) Error() string {
	s := "dynreg: " + e.Code + ": " + e.Message
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	return s
}

// Unwrap returns the underlying cause, e.g. context.DeadlineExceeded.
func (e *Error) Unwrap() error { return e.err }

// CodeOf returns the Code of err when it is (or wraps) an *Error, "" otherwise.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(code, msg string, status int, cause error) *Error {
	return &Error{Code: code, Message: msg, Status: status, err: cause}
}
