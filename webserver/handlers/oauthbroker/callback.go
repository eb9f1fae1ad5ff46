package oauthbroker

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// oneTimeCode is sealed into the code handed to the integrator's return URL.
type oneTimeCode struct {
	PlatformID   string `json:"p"`
	PlatformUID  string `json:"u"`
	AccessToken  string `json:"a"`
	Expiry       int64  `json:"e,omitempty"` // unix seconds; 0: the LMS did not say
	RefreshToken string `json:"r,omitempty"` // the LMS's own
	Scope        string `json:"s,omitempty"`
}

// Callback serves GET /oauth/callback?code=…&state=… (or error=…): the LMS's authorization
// response. On success the browser goes to the flow's return URL with our one-time code.
func (b *Broker) Callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rawState := q.Get("state")
	if rawState == "" {
		b.fail(w, r, httpapi.Errorf(http.StatusBadRequest, CodeInvalidState,
			"The authorization response carries no state; start again from the application."))
		return
	}
	now := b.clock()
	opened, err := b.keyring.OpenToken(PurposeState, rawState, now)
	var st flowState
	if err == nil {
		err = json.Unmarshal(opened.Payload, &st)
	}
	if err != nil {
		if errors.Is(err, sessions.ErrExpired) {
			b.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, CodeStateExpired,
				"The authorization took too long; start again from the application."))
		} else {
			b.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, CodeInvalidState, "The state is not one ltiop issued."))
		}
		return
	}
	c, err := r.Cookie(bindingCookie(st.ID))
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(st.Bind)) != 1 {
		b.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, CodeBrowserBinding,
			"This browser did not start the authorization (no matching cookie). Allow cookies for ltiop and start again."))
		return
	}
	// Single use before the exchange: two concurrent exchanges of one LMS code could make
	// the LMS revoke the tokens it issued (RFC 6749 §4.1.2).
	if first, err := b.replay.Use(r.Context(), "oauth-state:"+opened.ID, opened.Expires, now); err != nil {
		b.fail(w, r, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		b.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, CodeStateReused,
			"This authorization response was already used; start again from the application."))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: bindingCookie(st.ID), Path: CookiePath, MaxAge: -1, HttpOnly: true, //nolint:gosec // G124: deletes the cookie; Secure follows the configuration (false only for http:// development URLs)
		Secure: b.secureCookies(), SameSite: http.SameSiteLaxMode})

	if lmsErr := q.Get("error"); lmsErr != "" { // RFC 6749 §4.1.2.1: back to the application
		params := url.Values{"error": {clip(lmsErr, maxLMSErrorText)}}
		if d := q.Get("error_description"); d != "" {
			params.Set("error_description", clip(d, maxLMSErrorText))
		}
		b.redirectBack(w, r, st.ReturnURL, params)
		return
	}
	code := q.Get("code")
	if code == "" {
		b.fail(w, r, httpapi.Errorf(http.StatusBadRequest, CodeMissingCode, "The authorization response carries no code."))
		return
	}

	p := b.registry.Get(st.PlatformID)
	if p == nil || string(p.UID) != st.PlatformUID {
		b.fail(w, r, httpapi.Errorf(http.StatusNotFound, httpapi.CodePlatformNotFound,
			"The platform registration that started this authorization no longer exists."))
		return
	}
	if !p.Spec.IsActive() {
		b.fail(w, r, httpapi.Errorf(http.StatusForbidden, CodePlatformInactive, "The platform registration is inactive."))
		return
	}
	cc, herr := b.client(r.Context(), p)
	if herr != nil {
		b.fail(w, r, herr)
		return
	}
	tok, uerr := b.tokenRequest(r.Context(), cc, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {b.callbackURL},
		"code_verifier": {st.Verifier},
	})
	if uerr != nil {
		uerr.log(r.Context(), p.ID, "authorization_code")
		status, code := http.StatusBadGateway, CodeExchangeFailed
		if uerr.Timeout {
			status = http.StatusGatewayTimeout
		}
		if uerr.Refused {
			code = httpapi.CodeURLNotAllowed
		}
		b.fail(w, r, &httpapi.Error{Status: status, Code: code,
			Description: "The LMS did not exchange the authorization code: " + uerr.summary(),
			Upstream:    &httpapi.Upstream{Status: uerr.Status, Body: uerr.Body}})
		return
	}
	otc := oneTimeCode{
		PlatformID: p.ID, PlatformUID: string(p.UID), AccessToken: tok.AccessToken,
		RefreshToken: tok.RefreshToken, Scope: tok.Scope,
	}
	if otc.Scope == "" {
		otc.Scope = st.Scope
	}
	if tok.ExpiresIn.set {
		otc.Expiry = now.Unix() + tok.ExpiresIn.v
	}
	payload, _ := json.Marshal(otc) //nolint:gosec // G117: the payload is sealed (encrypted) on the next line
	sealed, err := b.keyring.Seal(PurposeCode, payload, codeTTL)
	if err != nil {
		b.fail(w, r, sessions.ErrSealingNotReady)
		return
	}
	b.redirectBack(w, r, st.ReturnURL, url.Values{"code": {sealed}})
}

// redirectBack sends the browser to the flow's return URL with params added to its query.
func (b *Broker) redirectBack(w http.ResponseWriter, r *http.Request, returnURL string, params url.Values) {
	u, err := url.Parse(returnURL)
	if err != nil { // checked at Start; sealed since
		b.fail(w, r, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The return URL is not a URL."))
		return
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	noStore(w)
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}
