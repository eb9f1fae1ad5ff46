package platformmode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/urls"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// CreateLaunchRequest is the body of POST /api/launches.
type CreateLaunchRequest struct {
	ToolID        string                    `json:"toolId"`
	User          string                    `json:"user"`
	MessageType   string                    `json:"messageType,omitempty"`
	TargetLinkURI string                    `json:"targetLinkUri,omitempty"`
	DeploymentID  string                    `json:"deploymentId,omitempty"`
	ResourceLink  *ltiplatform.ResourceLink `json:"resourceLink,omitempty"`
	Data          json.RawMessage           `json:"data,omitempty"`
	// Services are the launch's services (as in POST /api/launches/idtoken), carried to the
	// answer, which may give its own instead.
	Services *ltiplatform.Services `json:"services,omitempty"`
}

// LoginParams are the parameters of the tool's login initiation (§1.7, in the order Open
// edX sends them).
type LoginParams struct {
	Issuer          string `json:"iss"`
	LoginHint       string `json:"login_hint"`
	TargetLinkURI   string `json:"target_link_uri"`
	LTIMessageHint  string `json:"lti_message_hint"`
	ClientID        string `json:"client_id"`
	LTIDeploymentID string `json:"lti_deployment_id"`
}

// LaunchParameters is the answer of POST /api/launches.
type LaunchParameters struct {
	ToolID    string      `json:"toolId"`
	LoginURL  string      `json:"loginUrl"`
	Params    LoginParams `json:"params"`
	URL       string      `json:"url"`
	Form      string      `json:"form"`
	ExpiresAt time.Time   `json:"expiresAt"`
}

// CreateLaunch issues the login initiation of a launch: POST /api/launches (Bearer).
func (p *Platform) CreateLaunch(w http.ResponseWriter, r *http.Request) {
	var req CreateLaunchRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	out, e := p.createLaunch(&req)
	if e != nil {
		count("launches", e.Code)
		httpapi.WriteError(w, e)
		return
	}
	count("launches", "ok")
	httpapi.WriteJSON(w, http.StatusCreated, out)
}

func invalid(field, msg string) *httpapi.Error {
	return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, field+": "+msg)
}

func (p *Platform) createLaunch(req *CreateLaunchRequest) (*LaunchParameters, *httpapi.Error) {
	if req.ToolID == "" {
		return nil, invalid("toolId", "required")
	}
	if req.User == "" || len(req.User) > ltiplatform.MaxIdentifier {
		return nil, invalid("user", "required, the user's id (the login_hint), at most 255 characters")
	}
	t, e := p.usableTool(req.ToolID)
	if e != nil {
		return nil, e
	}
	h := ltiplatform.MessageHint{
		ToolID: t.ID, ClientID: t.ClientID, DeploymentID: t.DeploymentID, User: req.User,
		MessageType: req.MessageType, TargetLinkURI: req.TargetLinkURI, ResourceLink: req.ResourceLink, Services: req.Services,
	}
	switch h.MessageType {
	case "":
		h.MessageType = ltiplatform.MessageResourceLink
	case ltiplatform.MessageResourceLink, ltiplatform.MessageDeepLinking, ltiplatform.MessageSubmissionReview:
	default:
		return nil, invalid("messageType", "must be LtiResourceLinkRequest, LtiDeepLinkingRequest or LtiSubmissionReviewRequest")
	}
	if h.TargetLinkURI == "" {
		h.TargetLinkURI = string(t.Spec.TargetLinkURI)
		if h.MessageType == ltiplatform.MessageDeepLinking {
			if t.Spec.DeepLinkingURL == "" {
				return nil, invalid("messageType", "tool "+t.ID+" has no deepLinkingUrl: it takes no deep-linking requests")
			}
			h.TargetLinkURI = string(t.Spec.DeepLinkingURL)
		}
	} else if urls.Check(h.TargetLinkURI, p.opts.DevMode || t.Spec.DevMode) != nil {
		return nil, invalid("targetLinkUri", "must be an absolute https URL")
	}
	if req.DeploymentID != "" && req.DeploymentID != t.DeploymentID {
		return nil, invalid("deploymentId", "tool "+t.ID+" is deployed as "+t.DeploymentID)
	}
	if rl := req.ResourceLink; rl != nil {
		if rl.ID == "" || len(rl.ID) > ltiplatform.MaxIdentifier {
			return nil, invalid("resourceLink.id", "required, 1 to 255 ASCII characters")
		}
	}
	if len(req.Data) > 0 {
		if len(req.Data) > ltiplatform.MaxDataBytes {
			return nil, invalid("data", "must be at most 4096 bytes of JSON")
		}
		h.Data = req.Data
	}
	b, err := json.Marshal(&h)
	if err != nil {
		return nil, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The launch could not be encoded.")
	}
	now := time.Now()
	hint, err := p.sealer.Seal(sessions.PurposeMessageHint, b, MessageHintTTL)
	if err != nil {
		return nil, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The sealing keys are not loaded yet.")
	}
	params := LoginParams{
		Issuer: p.opts.Issuer, LoginHint: h.User, TargetLinkURI: h.TargetLinkURI, LTIMessageHint: hint,
		ClientID: t.ClientID, LTIDeploymentID: t.DeploymentID,
	}
	fields := []httpapi.Field{
		{Name: "iss", Value: params.Issuer}, {Name: "login_hint", Value: params.LoginHint},
		{Name: "target_link_uri", Value: params.TargetLinkURI}, {Name: "lti_message_hint", Value: params.LTIMessageHint},
		{Name: "client_id", Value: params.ClientID}, {Name: "lti_deployment_id", Value: params.LTIDeploymentID},
	}
	loginURL := string(t.Spec.LoginURL)
	form, err := httpapi.AutoPostForm(loginURL, fields)
	if err != nil {
		return nil, invalid("toolId", "the tool's loginUrl is not usable: "+err.Error())
	}
	q := url.Values{}
	for _, f := range fields {
		q.Set(f.Name, f.Value)
	}
	u, _ := url.Parse(loginURL)
	if u.RawQuery != "" {
		u.RawQuery += "&" + q.Encode()
	} else {
		u.RawQuery = q.Encode()
	}
	return &LaunchParameters{
		ToolID: t.ID, LoginURL: loginURL, Params: params, URL: u.String(), Form: form,
		ExpiresAt: now.Add(MessageHintTTL).UTC().Truncate(time.Second),
	}, nil
}

// IDTokenAnswer is the answer of POST /api/launches/idtoken.
type IDTokenAnswer struct {
	Form        string `json:"form"`
	IDToken     string `json:"idToken"`
	RedirectURI string `json:"redirectUri"`
	State       string `json:"state"`
}

// deepLinkReturn is the deep-linking request a response must answer, sealed into the
// return URL so that any replica can check the response against it.
type deepLinkReturn struct {
	ToolID         string          `json:"tool"`
	ClientID       string          `json:"client"`
	DeploymentID   string          `json:"deployment"`
	User           string          `json:"user"`
	Data           string          `json:"data,omitempty"`
	AcceptTypes    []string        `json:"acceptTypes"`
	AcceptMultiple bool            `json:"acceptMultiple,omitempty"`
	AcceptLineItem *bool           `json:"acceptLineItem,omitempty"`
	Context        string          `json:"context,omitempty"`
	IntegratorData json.RawMessage `json:"integratorData,omitempty"`
}

// AnswerLaunch mints the id_token for a payload: POST /api/launches/idtoken (Bearer).
func (p *Platform) AnswerLaunch(w http.ResponseWriter, r *http.Request) {
	var d ltiplatform.LaunchData
	if !httpapi.ReadJSON(w, r, &d) {
		return
	}
	out, e := p.answer(r.Context(), &d)
	if e != nil {
		count("idtoken", e.Code)
		httpapi.WriteError(w, e)
		return
	}
	count("idtoken", "ok")
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (p *Platform) answer(ctx context.Context, d *ltiplatform.LaunchData) (*IDTokenAnswer, *httpapi.Error) {
	now := p.now()
	pl, e := p.openPayload(d.Payload, now)
	if e != nil {
		return nil, e
	}
	l := &pl.Launch
	t, e := p.usableTool(l.ToolID)
	if e != nil {
		return nil, e
	}
	if t.ClientID != l.ClientID || t.DeploymentID != l.DeploymentID {
		return nil, httpapi.Errorf(http.StatusConflict, CodeToolInactive,
			"Tool "+t.ID+" was re-registered since the launch began (client or deployment changed): launch again.")
	}
	mp := ltiplatform.MintParams{
		Issuer: p.opts.Issuer, Now: now, Lifetime: IDTokenTTL, Launch: *l, AllowedScopes: t.Scopes(),
		AllowHTTP: p.opts.DevMode || t.Spec.DevMode, ToolCustom: t.Spec.Custom,
	}
	if p.servesData(t) {
		mp.ServiceRoot = func(o ltiplatform.ServiceOffer) (string, error) { return p.serviceRoot(t, o) }
	}
	if l.MessageType == ltiplatform.MessageDeepLinking && d.DeepLinking != nil {
		ret := deepLinkReturn{
			ToolID: t.ID, ClientID: t.ClientID, DeploymentID: t.DeploymentID, User: l.User,
			Data: d.DeepLinking.Data, AcceptTypes: d.DeepLinking.AcceptTypes,
			AcceptMultiple: d.DeepLinking.AcceptMultiple != nil && *d.DeepLinking.AcceptMultiple,
			AcceptLineItem: d.DeepLinking.AcceptLineItem, IntegratorData: l.Data,
		}
		if d.Context != nil {
			ret.Context = d.Context.ID
		}
		b, err := json.Marshal(&ret)
		if err != nil {
			return nil, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The deep-linking return could not be encoded.")
		}
		sealed, err := p.sealer.Seal(sessions.PurposeDeepLinkReturn, b, DeepLinkTTL)
		if err != nil {
			return nil, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The sealing keys are not loaded yet.")
		}
		mp.DeepLinkReturnURL = withQuery(p.opts.PublicURL+paths.PlatformDeepLinkingReturn, "ctx", sealed)
	}
	if d.Services == nil {
		d.Services = l.Services
	}
	claims, pe := ltiplatform.IDTokenClaims(mp, d)
	if pe != nil {
		return nil, pe
	}
	// Only a payload that made an id_token is used up: bad launch data can be corrected.
	if first, err := p.replays.Use(ctx, "payload\x00"+pl.ID, time.Unix(pl.ExpiresAt, 0), now); err != nil {
		return nil, httpapi.ReplayStoreUnavailable(err)
	} else if !first {
		return nil, httpapi.Errorf(http.StatusConflict, CodePayloadUsed, "This payload was already answered: every launch gets one id_token.")
	}
	idToken, err := p.signer.SignAt(now, ltiwire.TypeJWT, claims)
	if err != nil {
		return nil, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The platform signing key is not loaded yet.")
	}
	form, ferr := httpapi.AutoPostForm(l.RedirectURI, []httpapi.Field{{Name: "id_token", Value: idToken}, {Name: "state", Value: l.State}})
	if ferr != nil {
		return nil, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The launch form could not be built.")
	}
	return &IDTokenAnswer{Form: form, IDToken: idToken, RedirectURI: l.RedirectURI, State: l.State}, nil
}

// openPayload verifies a ?payload= JWT of the authorization endpoint.
func (p *Platform) openPayload(token string, now time.Time) (*ltiplatform.Payload, *httpapi.Error) {
	if token == "" {
		return nil, invalid("payload", "required: the payload your launch page received")
	}
	raw, err := p.signer.Verify(token, ltiwire.TypeLaunchPayload)
	var pl ltiplatform.Payload
	ok := err == nil
	if ok {
		ok = json.Unmarshal(raw, &pl) == nil && pl.Issuer == p.opts.Issuer && pl.Audience == ltiplatform.PayloadAudience && pl.ID != ""
	}
	if !ok {
		return nil, httpapi.Errorf(http.StatusBadRequest, CodeInvalidPayload, "payload: not a launch payload signed by this platform.")
	}
	if !now.Before(time.Unix(pl.ExpiresAt, 0)) {
		return nil, httpapi.Errorf(http.StatusBadRequest, CodePayloadExpired, "payload: expired; the tool must start the launch again.")
	}
	return &pl, nil
}
