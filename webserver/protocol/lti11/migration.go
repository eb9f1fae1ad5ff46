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
