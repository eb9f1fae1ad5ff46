package platformmode

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// accessTokenClaims are the claims of the access tokens ltiop issues to tools (RFC 9068
// shape). The integrator's NRPS and AGS endpoints verify them offline with the platform
// JWKS, or through POST /api/tokens/introspect.
type accessTokenClaims struct {
	Issuer    string `json:"iss"`
	Audience  string `json:"aud"`
	Subject   string `json:"sub"`
	ClientID  string `json:"client_id"`
	Scope     string `json:"scope"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
	ID        string `json:"jti"`
	ToolID    string `json:"tool_id"`
	// ToolUID binds the token to this registration of the tool: one deleted and made
	// again under the same names does not accept it.
	ToolUID      string `json:"tool_uid"`
	DeploymentID string `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
}

type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

type oauthError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
}

// Token is the token endpoint for tools: client_credentials with a JWT client assertion
// (lti-conformance §2, P-TOK). Errors follow RFC 6749 §5.2.
func (p *Platform) Token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		p.tokenError(w, &httpapi.Error{Status: 400, Code: httpapi.CodeUnsupportedMedia, OAuth: ltiplatform.OAuthInvalidRequest,
			Description: "The token request must be application/x-www-form-urlencoded."})
		return
	}
	if err := r.ParseForm(); err != nil {
		p.tokenError(w, &httpapi.Error{Status: 400, Code: httpapi.CodeInvalidBody, OAuth: ltiplatform.OAuthInvalidRequest,
			Description: "The form body could not be read."})
		return
	}
	req, e := ltiplatform.ParseTokenRequest(r.PostForm)
	if e != nil {
		p.tokenError(w, e)
		return
	}
	clientID, e := ltiplatform.PeekAssertionClient(req.Assertion)
	if e != nil {
		p.tokenError(w, e)
		return
	}
	if req.ClientID != "" && req.ClientID != clientID { // RFC 7521 §4.2: the same client
		p.tokenError(w, &httpapi.Error{Status: 401, Code: ltiplatform.CodeIssuerMismatch, OAuth: ltiplatform.OAuthInvalidClient,
			Rule: "P-TOK-04", Description: "client_id names another client than the assertion."})
		return
	}
	t := p.tools.ByClientID(clientID)
	if !t.Usable() { // P-TOK-04
		p.tokenError(w, &httpapi.Error{Status: 401, Code: ltiplatform.CodeUnknownClient, OAuth: ltiplatform.OAuthInvalidClient,
			Rule: "P-TOK-04", Description: "The assertion's issuer is not an active registered tool."})
		return
	}
	now := p.now()
	signed, e := ltiplatform.VerifyAssertionSignature(r.Context(), req.Assertion, t.ClientID, p.keyFunc(t))
	if e != nil { // P-TOK-08: anyone can name a tool, so this is not the tool's refusal
		p.tokenError(w, e)
		return
	}
	a, e := signed.Check(p.tokenAudiences, now, p.opts.ClockSkew)
	if e != nil {
		p.toolTokenError(w, t, e)
		return
	}
	// P-TOK-07: an assertion is good for one token.
	if first, err := p.replays.Use(r.Context(), "jti\x00"+t.ClientID+"\x00"+a.JTI, a.Expires.Add(p.opts.ClockSkew), now); err != nil {
		p.toolTokenError(w, t, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		p.toolTokenError(w, t, &httpapi.Error{Status: 401, Code: ltiplatform.CodeAssertionReplayed, OAuth: ltiplatform.OAuthInvalidClient,
			Rule: "P-TOK-07", Description: "This client assertion (jti) was already used."})
		return
	}
	granted, e := ltiplatform.GrantScopes(req.Scopes, t.Scopes())
	if e != nil {
		p.toolTokenError(w, t, e)
		return
	}
	scope := strings.Join(granted, " ")
	tok, he := p.sign(now, ltiwire.TypeAccessToken, &accessTokenClaims{
		Issuer: p.opts.Issuer, Audience: p.opts.Issuer, Subject: t.ClientID, ClientID: t.ClientID, Scope: scope,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(AccessTokenTTL).Unix(), ID: httpapi.RandomToken(16),
		ToolID: t.ID, ToolUID: string(t.UID), DeploymentID: t.DeploymentID,
	})
	if he != nil {
		he.OAuth = ltiplatform.OAuthTemporarilyUnavailable // p.sign made he for this request
		p.toolTokenError(w, t, he)
		return
	}
	count("token", "ok")
	httpapi.WriteJSON(w, http.StatusOK, tokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int(AccessTokenTTL / time.Second), Scope: scope})
}

// TokenError answers a refused token request in the OAuth 2.0 error form of the token
// endpoint (for refusals decided before the handler, such as the rate limit).
func (p *Platform) TokenError(w http.ResponseWriter, e *httpapi.Error) { p.tokenError(w, e) }

// endpointTokenUnverified counts the token requests refused before a client assertion's
// signature verified: anyone can send them, naming any tool, so they are counted apart
// from the tools' own refusals (endpoint "token", which LtiopToolRequestsRefused watches)
// and recorded on no registration.
const endpointTokenUnverified = "token_unverified"

// tokenError answers a token request refused before its client assertion verified.
func (p *Platform) tokenError(w http.ResponseWriter, e *httpapi.Error) {
	count(endpointTokenUnverified, e.Code)
	writeTokenError(w, e)
}

// toolTokenError answers a token request of the tool t whose client assertion's signature
// verified: launch health learns of it too.
func (p *Platform) toolTokenError(w http.ResponseWriter, t *registry.Tool, e *httpapi.Error) {
	p.refused(t, launchhealth.StepToken, e)
	count("token", e.Code)
	writeTokenError(w, e)
}

func writeTokenError(w http.ResponseWriter, e *httpapi.Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_client"`)
	}
	desc := e.Code + ": " + e.Description
	if e.Rule != "" {
		desc += " [" + e.Rule + "]"
	}
	httpapi.WriteJSON(w, e.Status, oauthError{Error: e.OAuth, ErrorDescription: desc})
}

// Introspection is the answer of POST /api/tokens/introspect (RFC 7662 members).
type Introspection struct {
	Active       bool   `json:"active"`
	Scope        string `json:"scope,omitempty"`
	ClientID     string `json:"client_id,omitempty"`
	Subject      string `json:"sub,omitempty"`
	Issuer       string `json:"iss,omitempty"`
	Audience     string `json:"aud,omitempty"`
	IssuedAt     int64  `json:"iat,omitempty"`
	ExpiresAt    int64  `json:"exp,omitempty"`
	ID           string `json:"jti,omitempty"`
	TokenType    string `json:"token_type,omitempty"`
	ToolID       string `json:"tool_id,omitempty"`
	DeploymentID string `json:"deployment_id,omitempty"`
}

// Introspect tells the integrator whether an access token a tool presented is valid:
// POST /api/tokens/introspect (Bearer), body {"token": "..."} (JSON) or token=... (form).
// A token of a tool since deactivated or deleted is inactive.
func (p *Platform) Introspect(w http.ResponseWriter, r *http.Request) {
	var token string
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		if err := r.ParseForm(); err != nil {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidBody, "The form body could not be read."))
			return
		}
		token = r.PostForm.Get("token")
	} else {
		var body struct {
			Token string `json:"token"`
		}
		if !httpapi.ReadJSON(w, r, &body) {
			return
		}
		token = body.Token
	}
	if token == "" {
		httpapi.WriteError(w, invalid("token", "required"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, p.introspect(token))
}

func (p *Platform) introspect(token string) Introspection {
	raw, err := p.signer.Verify(token, ltiwire.TypeAccessToken)
	var c accessTokenClaims
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Issuer != p.opts.Issuer || !p.now().Before(time.Unix(c.ExpiresAt, 0)) {
		return Introspection{}
	}
	t := p.tokenTool(&c)
	if !t.Usable() {
		return Introspection{}
	}
	return Introspection{
		Active: true, Scope: currentScopes(&c, t), ClientID: c.ClientID, Subject: c.Subject, Issuer: c.Issuer, Audience: c.Audience,
		IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt, ID: c.ID, TokenType: "Bearer", ToolID: c.ToolID, DeploymentID: c.DeploymentID,
	}
}
