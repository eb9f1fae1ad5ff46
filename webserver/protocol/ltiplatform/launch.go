package ltiplatform

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// LTI message types a platform-mode launch can carry.
const (
	MessageResourceLink = "LtiResourceLinkRequest"
	MessageDeepLinking  = "LtiDeepLinkingRequest"
	// MessageSubmissionReview opens a tool's review of one learner's submission for a line
	// item (AGS 2.0 "Submission Review Message").
	MessageSubmissionReview = "LtiSubmissionReviewRequest"
)

// Limits of the launch API (service-interface §8 and our own bounds).
const (
	MaxIdentifier = 255     // ASCII: resource link id, deployment id, user id, platform guid
	MaxDataBytes  = 4 << 10 // the integrator's opaque data, carried in the hint and the payload
)

// ResourceLink is the resource_link claim.
type ResourceLink struct {
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// MessageHint is what the lti_message_hint carries: the launch as the integrator created
// it, bound to the tool and the user. It travels sealed (integrity-protected and opaque to
// the tool) and expires an hour after issue (service-interface §8).
type MessageHint struct {
	ToolID        string          `json:"tool"`
	ClientID      string          `json:"client"`
	DeploymentID  string          `json:"deployment"`
	User          string          `json:"user"`
	MessageType   string          `json:"type"`
	TargetLinkURI string          `json:"target"`
	ResourceLink  *ResourceLink   `json:"resourceLink,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
	// Services are the services of the launch given when it was created: the answer's
	// own services, when it gives some, win.
	Services *Services `json:"services,omitempty"`
}

// Payload is the validated authorization request handed to the integrator's launch page
// as a platform-signed JWT (?payload=). The integrator answers with it; it is single use.
type Payload struct {
	Issuer    string   `json:"iss"`
	Audience  string   `json:"aud"`
	IssuedAt  int64    `json:"iat"`
	ExpiresAt int64    `json:"exp"`
	ID        string   `json:"jti"`
	Launch    LaunchOf `json:"launch"`
}

// LaunchOf is the launch inside a Payload: the hint plus what the tool sent.
type LaunchOf struct {
	MessageHint
	RedirectURI string `json:"redirectUri"`
	State       string `json:"state"`
	Nonce       string `json:"nonce"`
}

// PayloadAudience is the aud of payload JWTs: the integrator's launch pages.
const PayloadAudience = "ltiop:platform-launch"

// asciiID reports whether s is 1..255 printable ASCII characters (LTI identifiers).
func asciiID(s string) bool {
	if s == "" || len(s) > MaxIdentifier {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validText reports whether s is valid UTF-8 of at most maxBytes bytes without control
// characters other than tab and newlines.
func validText(s string, maxBytes int) bool {
	if len(s) > maxBytes || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' })
}
