package onboarding

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/ltiop/ltiop/webserver/clients/dynreg"
)

// SupportedMessage is one message type the platform offers, in the LTIAAS shape
// ({type, placements}).
type SupportedMessage struct {
	Type       string   `json:"type"`
	Placements []string `json:"placements,omitempty"`
}

// sdkMessageTypes are the message types the LTIAAS Node SDK's schema allows in
// supportedMessages (its LTILaunchType): any other type would make the SDK refuse the
// whole answer, so those are listed in messagesSupported only.
var sdkMessageTypes = []string{dynreg.MessageResourceLink, dynreg.MessageDeepLinking, "basic-lti-launch-request"}

// supportedMessages is the platform's messages_supported in the LTIAAS shape, never nil.
func supportedMessages(pc *dynreg.PlatformConfig) []SupportedMessage {
	out := []SupportedMessage{}
	for _, m := range pc.MessagesSupported {
		if slices.Contains(sdkMessageTypes, m.Type) {
			out = append(out, SupportedMessage{Type: m.Type, Placements: m.Placements})
		}
	}
	return out
}

// MessageChoice is one entry of the messages of POST …/complete: a message type as a
// string (ltiop's first form) or an object {type, placements} (the LTIAAS SDK's form).
// Placements, when given, are asked for instead of the ones ltiop would pick.
type MessageChoice struct {
	Type       string
	Placements []string
	// placementsGiven distinguishes "placements": [] (ask for none) from no member.
	placementsGiven bool
	// malformed is set when the entry is neither form: the handler names its index.
	malformed bool
}

// UnmarshalJSON accepts "LtiResourceLinkRequest" or {"type": …, "placements": […]}.
// Anything else is remembered as malformed rather than failing the whole body, so that
// the answer can name the entry.
func (m *MessageChoice) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		m.malformed = json.Unmarshal(b, &m.Type) != nil
		return nil
	}
	var o struct {
		Type       string    `json:"type"`
		Placements *[]string `json:"placements"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&o) != nil || o.Type == "" {
		m.malformed = true
		return nil
	}
	m.Type = o.Type
	if o.Placements != nil {
		m.Placements, m.placementsGiven = *o.Placements, true
	}
	return nil
}

// Bounds of the placements an integrator may ask for.
const (
	maxPlacements     = 20
	maxPlacementBytes = 255
)

// check returns what is wrong with the entry, or "".
func (m *MessageChoice) check() string {
	switch {
	case m.malformed:
		return ": must be a message type or an object {type, placements}."
	case m.Type != dynreg.MessageResourceLink && m.Type != dynreg.MessageDeepLinking && !isAssetProcessorMessage(m.Type):
		return ": must be LtiResourceLinkRequest, LtiDeepLinkingRequest, LtiAssetProcessorSettingsRequest, LtiReportReviewRequest or LtiEulaRequest."
	}
	if msg := m.checkPlacements(); msg != "" {
		return ".placements: " + msg + "."
	}
	return ""
}

// checkPlacements returns what is wrong with the placements, or "".
func (m *MessageChoice) checkPlacements() string {
	if len(m.Placements) > maxPlacements {
		return "at most 20 placements"
	}
	for _, p := range m.Placements {
		if p == "" || len(p) > maxPlacementBytes {
			return "each placement must be 1 to 255 characters"
		}
	}
	return ""
}

// messageTypes returns the chosen types (nil when nothing was chosen, so that ltiop offers
// its defaults) and the placements asked for per type.
func messageTypes(choices []MessageChoice) ([]string, map[string][]string) {
	if choices == nil {
		return nil, nil
	}
	types := make([]string, 0, len(choices))
	var placements map[string][]string
	for _, c := range choices {
		types = append(types, c.Type)
		if c.placementsGiven {
			if placements == nil {
				placements = map[string][]string{}
			}
			placements[c.Type] = c.Placements
		}
	}
	return types, placements
}

// rawRegistration is the answer of GET /api/registrations/{id}?raw=true: the platform's
// OpenID configuration as received (ltiop's first answer, members at the top level), plus
// the LTIAAS shape the SDK validates, openIdConfiguration (the same document) and
// registrationToken (the platform's registration_token, "" when it sent none).
func rawRegistration(p *pending) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(p.Config, &doc); err != nil {
		return nil, err
	}
	token, err := json.Marshal(p.Token)
	if err != nil {
		return nil, err
	}
	doc["openIdConfiguration"], doc["registrationToken"] = p.Config, token
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // URLs keep their "&"
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
