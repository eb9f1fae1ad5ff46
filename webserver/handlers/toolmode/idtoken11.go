package toolmode

import (
	"encoding/json"

	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// rawLTI11 is /api/idtoken?raw=true of a 1.1 launch: its parameters as received (without
// oauth_signature), with ltiVersion, as the LTIAAS SDK reads a raw OAuth payload.
func rawLTI11(claims json.RawMessage) (map[string]json.RawMessage, error) {
	var all struct {
		Params map[string]json.RawMessage `json:"https://ltiop.dev/claim/lti11_params"`
	}
	if err := json.Unmarshal(claims, &all); err != nil {
		return nil, err
	}
	if all.Params == nil {
		all.Params = map[string]json.RawMessage{}
	}
	all.Params["ltiVersion"] = json.RawMessage(`"` + lti11.Version + `"`)
	return all.Params, nil
}

// addLTI11 completes a simplified token with what LTI 1.1 adds: the version of a 1.1
// launch, Basic Outcomes availability, and the legacy identity, verified with the
// registration's 1.1 secret or marked as not verified (status says why).
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
		l := &lti.IDTokenLTI11{Verified: true, Status: lti11.StatusLaunch, ConsumerKey: c.DeploymentID, UserID: c.Subject}
		if c.ResourceLink != nil {
			l.ResourceLinkID = c.ResourceLink.ID
		}
		if c.Context != nil {
			l.ContextID = c.Context.ID
		}
		if c.ToolPlatform != nil {
			l.ToolConsumerInstanceGUID = c.ToolPlatform.GUID
		}
		token.LTI11, token.User.LTI11LegacyUserID = l, c.Subject
		return
	}
	if c.LTI1p1 == nil && c.LTI11LegacyUserID == "" {
		return
	}
	l := &lti.IDTokenLTI11{Status: lti11.StatusUnsigned, UserID: c.LTI11LegacyUserID}
	if m := c.LTI1p1; m != nil {
		l.Status, _ = lti11.Migration(c, launch.ClientID, consumerKey, secret)
		l.ConsumerKey, l.ResourceLinkID, l.ContextID, l.ToolConsumerInstanceGUID = m.ConsumerKey, m.ResourceLinkID, m.ContextID, m.ToolConsumerInstanceGUID
		if m.UserID != "" {
			l.UserID = m.UserID
		}
	}
	l.Verified = l.Status == lti11.StatusVerified
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
