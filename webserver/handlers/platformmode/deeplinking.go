package platformmode

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

const deepLinkingTitle = "The selected content cannot be added"

// maxRedirectURL bounds the integrator URL carrying a deep-linking result; a larger result
// is posted as a form instead (browsers and proxies cut long URLs).
const maxRedirectURL = 8 << 10

// ContentItemsResult is what a verified deep-linking response hands to the integrator,
// both inside the signed ?payload= and from POST /api/launches/content-items.
type ContentItemsResult struct {
	Issuer    string `json:"iss"`
	Audience  string `json:"aud"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
	ID        string `json:"jti"`

	ToolID       string            `json:"toolId"`
	ClientID     string            `json:"clientId"`
	DeploymentID string            `json:"deploymentId"`
	User         string            `json:"user"`
	ContextID    string            `json:"contextId,omitempty"`
	Data         json.RawMessage   `json:"data,omitempty"`
	ContentItems []lti.ContentItem `json:"contentItems"`
	Msg          string            `json:"msg,omitempty"`
	Log          string            `json:"log,omitempty"`
	ErrorMsg     string            `json:"errorMsg,omitempty"`
	ErrorLog     string            `json:"errorLog,omitempty"`
}

// DeepLinkingReturn receives a tool's LtiDeepLinkingResponse (the deep_link_return_url
// ltiop put in the request): it verifies the JWT (P-DLR-01..13) against the request sealed
// in ?ctx=, and hands the content items to the integrator's return page as a signed payload.
func (p *Platform) DeepLinkingReturn(w http.ResponseWriter, r *http.Request) {
	now := p.now()
	raw, _, err := p.sealer.Open(sessions.PurposeDeepLinkReturn, r.URL.Query().Get("ctx"), now)
	var ret deepLinkReturn
	if err != nil || json.Unmarshal(raw, &ret) != nil {
		p.deepLinkingPage(w, r, httpapi.Errorf(http.StatusBadRequest, CodeInvalidReturnState,
			"This return address is not one this platform issued, or the deep-linking session expired (2 hours)."))
		return
	}
	t := p.tools.Get(ret.ToolID)
	if !t.Usable() || t.ClientID != ret.ClientID {
		if t != nil && t.ClientID != ret.ClientID {
			t = nil // an answer to an earlier registration of that name: not this one's
		}
		p.deepLinkingRefused(w, r, t, httpapi.Errorf(http.StatusForbidden, CodeToolInactive, "The tool is no longer active."))
		return
	}
	token := r.PostFormValue("JWT")
	res, pe := ltiplatform.VerifyDeepLinkingResponse(r.Context(), token, ltiplatform.DeepLinkingRequest{
		Issuer: p.opts.Issuer, ClientID: t.ClientID, DeploymentID: ret.DeploymentID,
		Data: ret.Data, HasData: ret.Data != "", AcceptTypes: ret.AcceptTypes,
		AcceptMultiple: ret.AcceptMultiple, AcceptLineItem: ret.AcceptLineItem,
	}, p.keyFunc(t), now, p.opts.ClockSkew)
	if pe != nil {
		p.deepLinkingRefused(w, r, t, pe)
		return
	}
	// The nonce is remembered until the response expires: a response valid for longer than
	// a deep-linking session would pin replay-store entries for as long.
	if res.Expires.After(now.Add(DeepLinkTTL)) {
		p.deepLinkingRefused(w, r, t, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeLifetimeTooLong,
			"The deep-linking response expires too late (exp more than 2 hours ahead)."))
		return
	}
	// SEC §5.2.2 and P-DLR-09: the nonce guards against replay of the response.
	if first, err := p.replays.Use(r.Context(), "dlnonce\x00"+t.ClientID+"\x00"+res.Nonce, res.Expires.Add(p.opts.ClockSkew), now); err != nil {
		p.deepLinkingRefused(w, r, t, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		p.deepLinkingRefused(w, r, t, httpapi.Errorf(http.StatusBadRequest, CodeDuplicateDLNonce, "This deep-linking response was already received."))
		return
	}
	out := ContentItemsResult{
		Issuer: p.opts.Issuer, Audience: ltiplatform.PayloadAudience, IssuedAt: now.Unix(),
		ExpiresAt: now.Add(ResultTTL).Unix(), ID: httpapi.RandomToken(16),
		ToolID: t.ID, ClientID: t.ClientID, DeploymentID: ret.DeploymentID, User: ret.User, ContextID: ret.Context,
		Data: ret.IntegratorData, ContentItems: res.ContentItems,
		Msg: res.Msg, Log: res.Log, ErrorMsg: res.ErrorMsg, ErrorLog: res.ErrorLog,
	}
	if out.ContentItems == nil {
		out.ContentItems = []lti.ContentItem{}
	}
	tok, he := p.sign(now, ltiwire.TypeDeepLinking, &out)
	if he != nil {
		p.deepLinkingRefused(w, r, t, he)
		return
	}
	count("deeplinking", "ok")
	target := p.opts.DeepLinkingReturnURL
	if target == "" {
		p.deepLinkingPage(w, r, httpapi.Errorf(http.StatusServiceUnavailable, CodeNotConfigured,
			"Platform mode has no deep-linking return page configured (platformDeepLinkingReturnUrl)."))
		return
	}
	if u := withQuery(target, "payload", tok); len(u) <= maxRedirectURL {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, u, http.StatusSeeOther)
		return
	}
	_ = httpapi.WriteAutoPostPage(w, http.StatusOK, target, []httpapi.Field{{Name: "payload", Value: tok}})
}

// deepLinkingRefused is deepLinkingPage for a response of the known tool t (nil: none):
// launch health learns of it too.
func (p *Platform) deepLinkingRefused(w http.ResponseWriter, r *http.Request, t *registry.Tool, e *httpapi.Error) {
	p.refused(t, launchhealth.StepDeepLinking, e)
	p.deepLinkingPage(w, r, e)
}

func (p *Platform) deepLinkingPage(w http.ResponseWriter, r *http.Request, e *httpapi.Error) {
	count("deeplinking", e.Code)
	httpapi.WriteErrorPage(w, r, e, deepLinkingTitle)
}

// ContentItems verifies a deep-linking result payload and returns it as JSON:
// POST /api/launches/content-items (Bearer), body {"payload": "..."}.
func (p *Platform) ContentItems(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Payload string `json:"payload"`
	}
	if !httpapi.ReadJSON(w, r, &body) {
		return
	}
	if body.Payload == "" {
		httpapi.WriteError(w, invalid("payload", "required: the payload your return page received"))
		return
	}
	raw, err := p.signer.Verify(body.Payload, ltiwire.TypeDeepLinking)
	var res ContentItemsResult
	ok := err == nil
	if ok {
		ok = json.Unmarshal(raw, &res) == nil && res.Issuer == p.opts.Issuer
	}
	if !ok {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidPayload, "payload: not a deep-linking result signed by this platform."))
		return
	}
	if !p.now().Before(time.Unix(res.ExpiresAt, 0)) {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodePayloadExpired, "payload: expired."))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, &res)
}
