package platformmode

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

const authorizeTitle = "This tool launch cannot continue"

// endpointAuthorizeUnverified counts the authorization requests refused before their
// lti_message_hint opened: anyone can send one naming any client_id, so they are counted
// apart from the refusals of requests that carry a hint ltiop issued for the tool's launch
// (endpoint "authorize", which LtiopToolRequestsRefused watches). The tool's launch health
// still learns of their code: a tool's wrong redirect_uri is the commonest setup mistake,
// and its hints word the refusal as what a request claimed, quoting nothing it sent.
const endpointAuthorizeUnverified = "authorize_unverified"

// Authorize is the OIDC authorization endpoint tools send the browser to (GET or POST,
// no authentication; service-interface §4.3, lti-conformance §1.7). An unknown client or
// an unregistered redirect_uri gets an error page and never a redirect (P-AUTH-06); every
// other failure is an OIDC error posted back to the registered redirect_uri (P-AUTH-13).
// Success: 302 to the integrator's launch page with ?payload=<platform-signed JWT>.
func (p *Platform) Authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil { // P-AUTH-01: query or form body
		p.authorizePage(w, r, endpointAuthorizeUnverified, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "The request parameters could not be read."))
		return
	}
	req := ltiplatform.ParseAuthRequest(r.Form)
	t := p.tools.ByClientID(req.ClientID)
	switch {
	case req.ClientID == "" || t == nil:
		p.authorizePage(w, r, endpointAuthorizeUnverified, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeUnknownClient,
			"client_id does not name a registered tool (P-AUTH-05)."))
		return
	case !t.Usable():
		e := httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeInactiveTool, "The tool is inactive or not ready (P-AUTH-05).")
		e.Rule = "P-AUTH-05"
		p.authorizeRefused(w, r, t, endpointAuthorizeUnverified, e)
		return
	case !ltiplatform.RedirectAllowed(req.RedirectURI, t.RedirectionURIs()):
		e := httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeInvalidRedirectURI,
			"redirect_uri is not one of the tool's registered redirection URIs (P-AUTH-06).")
		e.Rule = "P-AUTH-06"
		p.authorizeRefused(w, r, t, endpointAuthorizeUnverified, e)
		return
	}
	now := p.now()
	pl, verified, e := p.checkAuthorization(r.Context(), req, now)
	if e != nil {
		if verified {
			count("authorize", e.Code)
		} else {
			count(endpointAuthorizeUnverified, e.Code)
		}
		p.refused(t, launchhealth.StepAuthorize, e)
		fields := ltiplatform.ErrorParams(e, req.State)
		out := make([]httpapi.Field, len(fields))
		for i, f := range fields {
			out[i] = httpapi.Field{Name: f[0], Value: f[1]}
		}
		if err := httpapi.WriteAutoPostPage(w, http.StatusOK, req.RedirectURI, out); err != nil {
			p.authorizePage(w, r, endpointAuthorizeUnverified, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeInvalidRedirectURI, "The redirect_uri cannot receive a form."))
		}
		return
	}
	target := p.opts.LaunchURL
	if pl.Launch.MessageType == ltiplatform.MessageDeepLinking {
		target = p.opts.DeepLinkingURL
	}
	if target == "" {
		p.authorizeRefused(w, r, t, "authorize", httpapi.Errorf(http.StatusServiceUnavailable, CodeNotConfigured,
			"Platform mode has no launch page configured (platformLaunchUrl)."))
		return
	}
	tok, he := p.sign(now, ltiwire.TypeLaunchPayload, pl)
	if he != nil {
		p.authorizeRefused(w, r, t, "authorize", he)
		return
	}
	count("authorize", "ok")
	if p.health != nil {
		p.health.Launched(t)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, withQuery(target, "payload", tok), http.StatusFound) //nolint:gosec // G710: the target is the configured launch URL, not request input
}

// checkAuthorization runs the checks that answer to the redirect_uri: §1.7 in order, then
// the message hint (P-AUTH-10), its binding (P-AUTH-05, P-AUTH-09) and the nonce window.
// verified says the request carried a message hint ltiop issued (the refusal is then of a
// launch of the tool, not of anyone naming its client_id).
func (p *Platform) checkAuthorization(ctx context.Context, req ltiplatform.AuthRequest, now time.Time) (pl *ltiplatform.Payload, verified bool, e *httpapi.Error) {
	if e := ltiplatform.CheckAuthRequest(req); e != nil {
		return nil, false, e
	}
	raw, _, err := p.sealer.Open(sessions.PurposeMessageHint, req.MessageHint, now)
	if errors.Is(err, sessions.ErrExpired) {
		return nil, false, ltiplatform.ErrMessageHintExpired()
	}
	var h ltiplatform.MessageHint
	if err != nil || json.Unmarshal(raw, &h) != nil {
		return nil, false, ltiplatform.ErrInvalidMessageHint()
	}
	if e := ltiplatform.CheckHintBinding(req, &h); e != nil {
		return nil, true, e
	}
	// The nonce is remembered only for a request that passed every other check, so a
	// failed attempt does not lock out the tool's retry. A nonce that could not be
	// recorded ends the launch: temporarily_unavailable, REPLAY_STORE_UNAVAILABLE.
	if first, err := p.replays.Use(ctx, "nonce\x00"+req.ClientID+"\x00"+req.Nonce, now.Add(NonceWindow), now); err != nil {
		return nil, true, httpapi.ReplayStoreUnavailable(err)
	} else if !first {
		return nil, true, ltiplatform.ErrDuplicateNonce()
	}
	return &ltiplatform.Payload{
		Issuer: p.opts.Issuer, Audience: ltiplatform.PayloadAudience, IssuedAt: now.Unix(),
		ExpiresAt: now.Add(PayloadTTL).Unix(), ID: httpapi.RandomToken(16),
		Launch: ltiplatform.LaunchOf{MessageHint: h, RedirectURI: req.RedirectURI, State: req.State, Nonce: req.Nonce},
	}, true, nil
}

// authorizeRefused is authorizePage for a request naming the known tool t: launch health
// learns of it too.
func (p *Platform) authorizeRefused(w http.ResponseWriter, r *http.Request, t *registry.Tool, endpoint string, e *httpapi.Error) {
	p.refused(t, launchhealth.StepAuthorize, e)
	p.authorizePage(w, r, endpoint, e)
}

func (p *Platform) authorizePage(w http.ResponseWriter, r *http.Request, endpoint string, e *httpapi.Error) {
	count(endpoint, e.Code)
	httpapi.WriteErrorPage(w, r, e, authorizeTitle)
}
