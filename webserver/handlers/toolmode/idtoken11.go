package toolmode

import (
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// addLTI11 completes a simplified token with what LTI 1.1 adds: the version of a 1.1
// launch, Basic Outcomes availability, and the legacy identity, verified with the
// registration's 1.1 secret or marked as not verified (status says why; lti11.Identity).
func (t *Tool) addLTI11(token *lti.IDToken, launch *openedLaunch, c *lti.Claims, g *grant) {
	p := t.registry.Get(launch.PlatformID)
	secret, hasSecret := t.registry.LTI11Secret(p)
	token.Services.Outcomes.Available = g.OutcomeURL != "" && g.SourcedID != "" && hasSecret
	consumerKey := ""
	if p != nil && p.Spec.LTI11 != nil {
		consumerKey = p.Spec.LTI11.ConsumerKey
	}
	if launch.LTIVersion != "" {
		token.LTIVersion = launch.LTIVersion
	}
	l := lti11.Identity(c, launch.LTIVersion != "", launch.ClientID, consumerKey, secret)
	if l == nil {
		return
	}
	token.LTI11 = l
	if l.Verified {
		token.User.LTI11LegacyUserID = l.UserID
	}
}

// outcomesKey is the registration's 1.1 consumer key and secret, for signing Basic Outcomes.
func (t *Tool) outcomesKey(p *registry.Platform) (key, secret string, ok bool) {
	secret, ok = t.registry.LTI11Secret(p)
	if !ok {
		return "", "", false
	}
	return p.Spec.LTI11.ConsumerKey, secret, true
}
