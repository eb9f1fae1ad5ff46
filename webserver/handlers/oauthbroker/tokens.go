package oauthbroker

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// AccessTokenRequest is the body of POST /api/oauth/access-token/{platformId}.
type AccessTokenRequest struct {
	Code string `json:"code"`
}

// RefreshRequest is the body of POST /api/oauth/access-token/{platformId}/refresh.
type RefreshRequest struct {
	RefreshToken string `json:"refreshToken"`
}

// TokenResponse is the answer of both token endpoints.
type TokenResponse struct {
	TokenType   string `json:"tokenType"` // always "Bearer"
	AccessToken string `json:"accessToken"`
	// ExpiresIn is the access token's remaining lifetime in seconds; absent when the LMS
	// did not say.
	ExpiresIn *int64 `json:"expiresIn,omitempty"`
	// RefreshToken is the LMS's refresh token sealed by ltiop; absent when the LMS gave none.
	RefreshToken string `json:"refreshToken,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

// sealedRefresh is sealed into the refresh token handed to the integrator.
type sealedRefresh struct {
	PlatformID   string `json:"p"`
	PlatformUID  string `json:"u"`
	RefreshToken string `json:"r"`
}

// AccessToken serves POST /api/oauth/access-token/{platformId} {"code": …}: it trades the
// one-time code of the return URL for the LMS access token. The router checks the API key.
func (b *Broker) AccessToken(w http.ResponseWriter, r *http.Request) {
	p, herr := b.platform(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	var req AccessTokenRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	if req.Code == "" {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "code: required."))
		return
	}
	now := b.clock()
	opened, err := b.keyring.OpenToken(PurposeCode, req.Code, now)
	var otc oneTimeCode
	if err == nil {
		err = json.Unmarshal(opened.Payload, &otc)
	}
	switch {
	case errors.Is(err, sessions.ErrExpired):
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeCodeExpired,
			"The code expired (codes are valid for 5 minutes); start the authorization again."))
		return
	case err != nil:
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidCode, "The code is not one ltiop issued."))
		return
	case otc.PlatformID != p.ID || otc.PlatformUID != string(p.UID):
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidCode,
			"The code was issued for another platform registration."))
		return
	}
	if first, err := b.replay.Use(r.Context(), "oauth-code:"+opened.ID, opened.Expires, now); err != nil {
		httpapi.WriteError(w, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeCodeReused, "The code was already used."))
		return
	}
	out := TokenResponse{TokenType: "Bearer", AccessToken: otc.AccessToken, Scope: otc.Scope}
	if otc.Expiry != 0 {
		left := max(otc.Expiry-now.Unix(), 0)
		out.ExpiresIn = &left
	}
	if otc.RefreshToken != "" {
		if out.RefreshToken, herr = b.sealRefresh(p, otc.RefreshToken); herr != nil {
			httpapi.WriteError(w, herr)
			return
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// Refresh serves POST /api/oauth/access-token/{platformId}/refresh {"refreshToken": …}: a
// fresh access token from the LMS. The router checks the API key.
func (b *Broker) Refresh(w http.ResponseWriter, r *http.Request) {
	p, herr := b.platform(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	var req RefreshRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	if req.RefreshToken == "" {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "refreshToken: required."))
		return
	}
	payload, _, err := b.keyring.Open(PurposeRefresh, req.RefreshToken, b.clock())
	var sr sealedRefresh
	if err == nil {
		err = json.Unmarshal(payload, &sr)
	}
	switch {
	case errors.Is(err, sessions.ErrExpired):
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidRefreshToken,
			"The refresh token expired; start the authorization again."))
		return
	case err != nil || sr.RefreshToken == "":
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidRefreshToken,
			"The refresh token is not one ltiop issued."))
		return
	case sr.PlatformID != p.ID || sr.PlatformUID != string(p.UID):
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidRefreshToken,
			"The refresh token was sealed for another platform registration."))
		return
	}
	cc, herr := b.client(r.Context(), p)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	tok, uerr := b.tokenRequest(r.Context(), cc, url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {sr.RefreshToken},
	})
	if uerr != nil {
		uerr.log(r.Context(), p.ID, "refresh_token")
		httpapi.WriteError(w, upstreamAPIError(uerr))
		return
	}
	out := TokenResponse{TokenType: "Bearer", AccessToken: tok.AccessToken, Scope: tok.Scope, RefreshToken: req.RefreshToken}
	if tok.ExpiresIn.set {
		left := tok.ExpiresIn.v
		out.ExpiresIn = &left
	}
	if tok.RefreshToken != "" && tok.RefreshToken != sr.RefreshToken { // the LMS rotated it
		if out.RefreshToken, herr = b.sealRefresh(p, tok.RefreshToken); herr != nil {
			httpapi.WriteError(w, herr)
			return
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (b *Broker) sealRefresh(p *registry.Platform, lmsToken string) (string, *httpapi.Error) {
	payload, _ := json.Marshal(sealedRefresh{PlatformID: p.ID, PlatformUID: string(p.UID), RefreshToken: lmsToken}) //nolint:gosec // G117: the payload is sealed (encrypted) on the next line
	sealed, err := b.keyring.Seal(PurposeRefresh, payload, refreshTTL)
	if err != nil {
		return "", sessions.ErrSealingNotReady
	}
	return sealed, nil
}

// upstreamAPIError maps a failed token request to the envelope with details.externalError:
// the LMS's 4xx stays (400 invalid_grant: the refresh token is revoked or expired), except
// 401 and 403, which concern ltiop's client credentials, not the integrator's request;
// anything else is 502, and no answer in time 504.
func upstreamAPIError(e *upstreamError) *httpapi.Error {
	if e.Timeout {
		return &httpapi.Error{Status: http.StatusGatewayTimeout, Code: httpapi.CodeUpstreamTimeout,
			Description: "The LMS token endpoint did not answer in time.", Upstream: &httpapi.Upstream{}}
	}
	if e.Refused {
		return &httpapi.Error{Status: http.StatusBadGateway, Code: httpapi.CodeURLNotAllowed,
			Description: "The LMS token endpoint could not be used: " + e.summary(), Upstream: &httpapi.Upstream{}}
	}
	status := e.Status
	if status < 400 || status >= 500 || status == http.StatusUnauthorized || status == http.StatusForbidden {
		status = http.StatusBadGateway
	}
	return &httpapi.Error{Status: status, Code: httpapi.CodeUpstream,
		Description: "The LMS refused to refresh the access token: " + e.summary(),
		Upstream:    &httpapi.Upstream{Status: e.Status, Body: e.Body}}
}
