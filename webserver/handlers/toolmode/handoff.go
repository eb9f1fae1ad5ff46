package toolmode

import (
	"net/http"
	"net/url"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// handOff seals the validated launch of registration p into an ltik and counts it under
// step ("launch", "launch11"): the end an LTI 1.3 and an LTI 1.1 launch share before the
// browser goes on to the integrator's page with the ltik. targetLinkURI is the target
// /api/idtoken shows; ltiVersion is lti11.Version for an LTI 1.1 launch, else "".
func (t *Tool) handOff(step string, p *registry.Platform, c *lti.Claims, targetLinkURI, ltiVersion string) (string, *httpapi.Error) {
	ltik, err := t.keyring.Seal(sessions.PurposeLTIK, encodeLaunch(Launch{
		PlatformID: p.ID, PlatformUID: string(p.UID), Issuer: c.Issuer, ClientID: p.Spec.ClientID,
		DeploymentID: c.DeploymentID, MessageType: c.MessageType, Claims: c.Raw,
		TargetLinkURI: targetLinkURI, LTIVersion: ltiVersion,
	}), ltikTTL)
	if err != nil {
		return "", sessions.ErrSealingNotReady
	}
	launchesTotal.WithLabelValues(step, "ok").Inc()
	return ltik, nil
}

// destination is the integrator page for the message type, carrying the query of the
// target link from the signed claim (T-TOK-22: not the unsigned login parameter).
func (t *Tool) destination(c *lti.Claims) (string, *httpapi.Error) {
	u, herr := t.destinationBase(c.MessageType)
	if herr != nil {
		return "", herr
	}
	target := c.TargetLinkURI
	if target != "" {
		if tu, err := url.Parse(target); err == nil && tu.RawQuery != "" {
			q := u.Query()
			for k, vs := range tu.Query() {
				for _, v := range vs {
					q.Add(k, v)
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	return u.String(), nil
}

// destinationBase is the configured integrator page for the message type, with its own
// query only.
func (t *Tool) destinationBase(messageType string) (*url.URL, *httpapi.Error) {
	base := t.opts.LaunchURL
	if messageType == lti.MessageDeepLinking && t.opts.DeepLinkingURL != "" {
		base = t.opts.DeepLinkingURL
	}
	if u := t.opts.MessageLaunchURLs[messageType]; u != "" {
		base = u
	} else if messageType == lti.MessageSubmissionReview && t.opts.SubmissionReviewURL != "" {
		base = t.opts.SubmissionReviewURL // T-SR-06
	}
	if base == "" {
		return nil, httpapi.Errorf(http.StatusServiceUnavailable, lti.CodeLaunchNotConfigured,
			"The tool has no Launch URL configured (setting launchUrl).")
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, httpapi.Errorf(http.StatusServiceUnavailable, lti.CodeLaunchNotConfigured, "The Launch URL is not a URL.")
	}
	return u, nil
}

func withLtik(destination, ltik string) string {
	u, _ := url.Parse(destination)
	q := u.Query()
	q.Set("ltik", ltik)
	u.RawQuery = q.Encode()
	return u.String()
}
