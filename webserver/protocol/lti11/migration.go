package lti11

import (
	"crypto/hmac"

	"github.com/ltiop/ltiop/internal/oauth1"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// Migration statuses of the lti1p1 claim, as /api/idtoken reports them (lti11.status).
// Only StatusVerified vouches for the legacy identity.
const (
	// StatusVerified: oauth_consumer_key_sign matches, under the registration's 1.1 secret.
	StatusVerified = "VERIFIED"
	// StatusLaunch: the launch itself was LTI 1.1, OAuth-signed with that secret.
	StatusLaunch = "LTI11_LAUNCH"
	// StatusUnsigned: the claim carries no oauth_consumer_key_sign (Canvas before 2023).
	StatusUnsigned = "UNSIGNED"
	// StatusNoSecret: the registration has no LTI 1.1 secret to check the sign with.
	StatusNoSecret = "NO_SECRET"
	// StatusKeyMismatch: the claim names another consumer key than the registration's.
	StatusKeyMismatch = "CONSUMER_KEY_MISMATCH"
	// StatusInvalid: the sign does not match.
	StatusInvalid = "INVALID_SIGNATURE"
)

// Migration is the verdict on the lti1p1 claim of validated 1.3 claims c, for the
// registration with client id clientID and 1.1 credentials (consumerKey, secret; empty when
// it has none). ok is false when the launch carries no legacy claim at all.
func Migration(c *lti.Claims, clientID, consumerKey, secret string) (status string, ok bool) {
	l := c.LTI1p1
	if l == nil {
		return "", false
	}
	switch {
	case l.ConsumerKeySign == "":
		return StatusUnsigned, true
	case secret == "":
		return StatusNoSecret, true
	case l.ConsumerKey != consumerKey:
		return StatusKeyMismatch, true
	case !c.HasExp:
		return StatusInvalid, true
	}
	want := oauth1.ConsumerKeySign(l.ConsumerKey, c.DeploymentID, c.Issuer, clientID, c.ExpiresAt, c.Nonce, secret)
	if !hmac.Equal([]byte(want), []byte(l.ConsumerKeySign)) {
		return StatusInvalid, true
	}
	return StatusVerified, true
}

// Identity is the lti11 member of /api/idtoken for claims c of a launch to the registration
// with client id clientID and 1.1 credentials (consumerKey, secret; empty when it has
// none): for a launch made over LTI 1.1 (launched11), its own ids, vouched for by the
// OAuth signature; for a 1.3 launch, the legacy ids of its lti1p1 claim (or its
// lti11_legacy_user_id) with the Migration verdict. nil when a 1.3 launch carries neither.
// Only a Verified identity may be shown as the user's legacy id.
func Identity(c *lti.Claims, launched11 bool, clientID, consumerKey, secret string) *lti.IDTokenLTI11 {
	if launched11 {
		l := &lti.IDTokenLTI11{Verified: true, Status: StatusLaunch, ConsumerKey: c.DeploymentID, UserID: c.Subject}
		if c.ResourceLink != nil {
			l.ResourceLinkID = c.ResourceLink.ID
		}
		if c.Context != nil {
			l.ContextID = c.Context.ID
		}
		if c.ToolPlatform != nil {
			l.ToolConsumerInstanceGUID = c.ToolPlatform.GUID
		}
		return l
	}
	if c.LTI1p1 == nil && c.LTI11LegacyUserID == "" {
		return nil
	}
	l := &lti.IDTokenLTI11{Status: StatusUnsigned, UserID: c.LTI11LegacyUserID}
	if m := c.LTI1p1; m != nil {
		l.Status, _ = Migration(c, clientID, consumerKey, secret)
		l.ConsumerKey, l.ResourceLinkID, l.ContextID, l.ToolConsumerInstanceGUID = m.ConsumerKey, m.ResourceLinkID, m.ContextID, m.ToolConsumerInstanceGUID
		if m.UserID != "" {
			l.UserID = m.UserID
		}
	}
	l.Verified = l.Status == StatusVerified
	return l
}
