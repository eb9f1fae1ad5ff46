package toolmode

import (
	"errors"
	"net/http"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// CodeServiceNotAvailable means the launch's context offers no such service, or not with the
// scope it needs.
const CodeServiceNotAvailable = "SERVICE_NOT_AVAILABLE_FOR_CONTEXT"

// RequireService admits LTIK-AUTH-V2 (and V1), SERVICE-AUTH-V1 <API_KEY>:<serviceKey> or
// NOTICE-AUTH-V1 <API_KEY>:<noticeKey>, and refuses everything else, Bearer included
// (credential.go).
func (t *Tool) RequireService(next http.Handler) http.Handler {
	return t.authenticator().require(next, true)
}

// credentials are the tool's client credentials toward the grant's platform. The
// registration is read again: one deleted, replaced or deactivated since the request was
// admitted answers 401, as it would have at admission.
func (t *Tool) credentials(g *grant) (advantage.Credentials, *registry.Platform, *httpapi.Error) {
	p, herr := t.auth.platformOf(g)
	if herr != nil {
		return advantage.Credentials{}, nil, schemeFailure(herr, g)
	}
	var urls []string
	for _, u := range []string{g.LineItemsURL, g.LineItemURL, g.MembershipsURL} {
		if u != "" {
			urls = append(urls, u)
		}
	}
	return advantage.Credentials{
		PlatformID:   p.ID,
		ClientID:     p.Spec.ClientID,
		TokenURL:     string(p.Spec.AccesstokenEndpoint),
		Audience:     p.Spec.TokenAudience(),
		DeploymentID: g.DeploymentID,
		KID:          p.Key.KID,
		Key:          p.Key,
		// The client refuses scopes the launch did not grant (T-AGS-02) and item ids off
		// the launch's service hosts: the token goes nowhere else.
		LaunchScopes: advantage.GrantedScopes(g.AGSScopes, g.MembershipsURL != "", g.impliedScopes()...),
		ServiceURLs:  urls,
		Source:       p.Source, // its URLs are fetched under the policy of who supplied them
	}, p, nil
}

func notAvailable(description string) *httpapi.Error {
	return httpapi.Errorf(http.StatusForbidden, CodeServiceNotAvailable, description)
}

// upstreamError turns a failed LMS call into the envelope (issue: details.externalError).
func upstreamError(err error) *httpapi.Error {
	var up *advantage.UpstreamError
	switch {
	case errors.Is(err, advantage.ErrURLRefused):
		// The platform's URL (or its redirect) points inside the network: its cause is
		// logged, never echoed (it names addresses).
		return &httpapi.Error{Status: http.StatusBadGateway, Code: httpapi.CodeURLNotAllowed,
			Description: "The platform's service or token URL, or a redirect it answered with, leads where ltiop does not connect (a loopback, private or cloud metadata address, plain http, or another host for a call carrying the token). Nothing was sent there.",
			Upstream:    &httpapi.Upstream{}, Cause: err}
	case errors.Is(err, advantage.ErrForeignURL):
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
			"The URL is not on the platform's service host; only URLs the platform gave can be used.")
	case errors.Is(err, advantage.ErrScopeNotGranted):
		return notAvailable("The platform did not grant the scope this needs.")
	case errors.As(err, &up) && up.Timeout:
		return &httpapi.Error{Status: http.StatusGatewayTimeout, Code: httpapi.CodeUpstreamTimeout,
			Description: "The platform did not answer in time.", Upstream: &httpapi.Upstream{}}
	case errors.As(err, &up):
		status := up.Status
		if status < 400 || status >= 500 || status == http.StatusUnauthorized || status == http.StatusForbidden {
			status = http.StatusBadGateway // the integrator's own credentials were fine
		}
		return &httpapi.Error{Status: status, Code: httpapi.CodeUpstream,
			Description: "The platform refused the request.", Upstream: &httpapi.Upstream{Status: up.Status, Body: up.Body}}
	default:
		return &httpapi.Error{Status: http.StatusBadGateway, Code: httpapi.CodeUpstream,
			Description: "The platform could not be reached.", Upstream: &httpapi.Upstream{}}
	}
}
