package lti

// The LTI 1.1 legacy claims an LTI 1.3 launch may carry (LTI 1.3 Migration Guide), and the
// Basic Outcomes claim. They live in this file, registered into claimFields at init, so
// the claim table stays one entry per claim.

// Claim names of the legacy claims.
const (
	ClaimLTI1p1            = "https://purl.imsglobal.org/spec/lti/claim/lti1p1"
	ClaimLTI11LegacyUserID = "https://purl.imsglobal.org/spec/lti/claim/lti11_legacy_user_id"
	ClaimBasicOutcome      = "https://purl.imsglobal.org/spec/lti-bo/claim/basicoutcome"
)

// BasicOutcome is the basicoutcome claim: where LTI 1.1 Basic Outcomes are sent, and the
// result they replace.
type BasicOutcome struct {
	ServiceURL, SourcedID string
}

// LTI1p1 is the lti1p1 migration claim: the launch's LTI 1.1 identifiers and, when the
// platform signs them, oauth_consumer_key_sign (verified by package lti11). Exp, Nonce,
// Issuer, Audience and DeploymentID of the token are signed with it.
type LTI1p1 struct {
	UserID, ConsumerKey, ConsumerKeySign, ResourceLinkID, ContextID, ToolConsumerInstanceGUID string
}

func init() {
	claimFields[ClaimBasicOutcome] = optional(func(c *Claims) **BasicOutcome { return &c.BasicOutcome }, decodeBasicOutcome)
	claimFields[ClaimLTI1p1] = optional(func(c *Claims) **LTI1p1 { return &c.LTI1p1 }, decodeLTI1p1)
	claimFields[ClaimLTI11LegacyUserID] = optional(func(c *Claims) *string { return &c.LTI11LegacyUserID }, readOptString)
}

func decodeBasicOutcome(sc *scanner) *BasicOutcome {
	if !enterObject(sc) {
		return nil
	}
	b := &BasicOutcome{}
	for sc.NextMember() {
		switch sc.Key() {
		case "lis_outcome_service_url":
			b.ServiceURL = readOptString(sc)
		case "lis_result_sourcedid":
			b.SourcedID = readOptString(sc)
		}
	}
	if b.ServiceURL == "" || b.SourcedID == "" {
		return nil
	}
	return b
}

func decodeLTI1p1(sc *scanner) *LTI1p1 {
	if !enterObject(sc) {
		return nil
	}
	l := slot(sc, func(m *claimMem) *LTI1p1 { return &m.l1p1 })
	for sc.NextMember() {
		var at *string
		switch sc.Key() {
		case "user_id":
			at = &l.UserID
		case "oauth_consumer_key":
			at = &l.ConsumerKey
		case "oauth_consumer_key_sign":
			at = &l.ConsumerKeySign
		case "resource_link_id":
			at = &l.ResourceLinkID
		case "context_id":
			at = &l.ContextID
		case "tool_consumer_instance_guid":
			at = &l.ToolConsumerInstanceGUID
		default:
			continue
		}
		*at, _ = readStringify(sc) // ids may come as numbers
	}
	return l
}

// IDTokenLTI11 is idtoken.lti11: the LTI 1.1 identifiers of the launch. Status says how far
// they are vouched for (package lti11: VERIFIED, LTI11_LAUNCH, UNSIGNED, NO_SECRET,
// CONSUMER_KEY_MISMATCH, INVALID_SIGNATURE); Verified is true only for the first two.
type IDTokenLTI11 struct {
	Verified                 bool   `json:"verified"`
	Status                   string `json:"status"`
	ConsumerKey              string `json:"consumerKey,omitempty"`
	UserID                   string `json:"userId,omitempty"`
	ResourceLinkID           string `json:"resourceLinkId,omitempty"`
	ContextID                string `json:"contextId,omitempty"`
	ToolConsumerInstanceGUID string `json:"toolConsumerInstanceGuid,omitempty"`
}
