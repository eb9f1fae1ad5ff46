package oauthbroker

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// flowState is sealed into the OAuth2 state parameter: all the callback needs comes back
// with the browser, so any replica can finish a flow another one started.
type flowState struct {
	ID          string `json:"i"` // names the binding cookie
	Bind        string `json:"b"` // the browser-binding secret, the cookie's value
	PlatformID  string `json:"p"`
	PlatformUID string `json:"u"` // a re-created registration is another one
	Verifier    string `json:"v"` // the PKCE code_verifier
	ReturnURL   string `json:"r"`
	Scope       string `json:"s,omitempty"` // space-separated, as requested
}

// Start serves GET /oauth/start/{platformId}?scope=…&return_url=…: it sends the browser
// to the LMS's authorize endpoint.
func (b *Broker) Start(w http.ResponseWriter, r *http.Request) {
	p, herr := b.platform(r)
	if herr != nil {
		b.fail(w, r, herr)
		return
	}
	cc, herr := b.client(r.Context(), p)
	if herr != nil {
		b.fail(w, r, herr)
		return
	}
	q := r.URL.Query()
	returnURL, herr := b.returnURL(q.Get("return_url"))
	if herr != nil {
		b.fail(w, r, herr)
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	if len(scopes) == 0 {
		scopes = cc.Scopes
	}
	scope := strings.Join(scopes, " ")
	if herr := checkScope(scope); herr != nil {
		b.fail(w, r, herr)
		return
	}
	authURL, err := url.Parse(cc.AuthorizeURL)
	if err != nil {
		b.fail(w, r, httpapi.Errorf(http.StatusConflict, CodeNotConfigured, "The platform's OAuth2 authorize URL is not a URL."))
		return
	}

	verifier := randomToken(32) // RFC 7636 §4.1: 43 characters of base64url
	st := flowState{
		ID: randomToken(12), Bind: randomToken(16), PlatformID: p.ID, PlatformUID: string(p.UID),
		Verifier: verifier, ReturnURL: returnURL, Scope: scope,
	}
	payload, _ := json.Marshal(st)
	state, err := b.keyring.Seal(PurposeState, payload, stateTTL)
	if err != nil {
		b.fail(w, r, sessions.ErrSealingNotReady)
		return
	}

	aq := authURL.Query() // the authorize URL's own query is kept
	aq.Set("response_type", "code")
	aq.Set("client_id", cc.ClientID)
	aq.Set("redirect_uri", b.callbackURL)
	if scope != "" {
		aq.Set("scope", scope)
	} else {
		aq.Del("scope")
	}
	aq.Set("state", state)
	aq.Set("code_challenge", pkceChallenge(verifier))
	aq.Set("code_challenge_method", "S256")
	authURL.RawQuery = aq.Encode()

	// SameSite=Lax: the callback is a top-level GET navigation from the LMS, which carries
	// Lax cookies. The flow must therefore run in a top-level window (or a popup), not an iframe.
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure follows the configuration (false only for http:// development URLs)
		Name: bindingCookie(st.ID), Value: st.Bind, Path: CookiePath,
		MaxAge: int(stateTTL.Seconds()), HttpOnly: true, Secure: b.secureCookies(), SameSite: http.SameSiteLaxMode,
	})
	noStore(w)
	http.Redirect(w, r, authURL.String(), http.StatusFound)
}

// pkceChallenge is the S256 code_challenge of verifier (RFC 7636 §4.2).
func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// returnURL picks the flow's destination: the requested one when it is allowed, else the
// configured ReturnURL.
func (b *Broker) returnURL(requested string) (string, *httpapi.Error) {
	if b.opts.ReturnURL == "" && len(b.opts.AllowedReturnURLs) == 0 {
		return "", httpapi.Errorf(http.StatusServiceUnavailable, CodeReturnURLNotConfigured,
			"ltiop has no OAuth2 return URL configured (setting oauthReturnUrl).")
	}
	if requested == "" {
		if b.opts.ReturnURL == "" {
			return "", httpapi.Errorf(http.StatusBadRequest, CodeInvalidReturnURL,
				"return_url is required: no default OAuth2 return URL is configured.")
		}
		if !absoluteHTTP(b.opts.ReturnURL) {
			return "", httpapi.Errorf(http.StatusServiceUnavailable, CodeReturnURLNotConfigured,
				"ltiop's OAuth2 return URL is not an absolute http(s) URL.")
		}
		return b.opts.ReturnURL, nil
	}
	u, err := url.Parse(requested)
	if err == nil && u.User == nil && u.Fragment == "" && !strings.Contains(requested, "#") && absoluteHTTP(requested) {
		for _, allowed := range append([]string{b.opts.ReturnURL}, b.opts.AllowedReturnURLs...) {
			a, err := url.Parse(allowed)
			if allowed == "" || err != nil {
				continue
			}
			if strings.EqualFold(a.Scheme, u.Scheme) && strings.EqualFold(a.Host, u.Host) && a.EscapedPath() == u.EscapedPath() {
				return requested, nil
			}
		}
	}
	return "", httpapi.Errorf(http.StatusBadRequest, CodeInvalidReturnURL,
		"return_url is not one of the configured OAuth2 return URLs (scheme, host and path must match exactly).")
}

// checkScope accepts what RFC 6749 §3.3 allows in a scope, within a length bound.
func checkScope(scope string) *httpapi.Error {
	if len(scope) > maxScopeLength {
		return httpapi.Errorf(http.StatusBadRequest, CodeInvalidScope, "scope is too long.")
	}
	for i := 0; i < len(scope); i++ {
		if c := scope[i]; c != ' ' && (c < 0x21 || c == '"' || c == '\\' || c > 0x7e) {
			return httpapi.Errorf(http.StatusBadRequest, CodeInvalidScope,
				"scope must be space-separated tokens of printable ASCII without \" or \\.")
		}
	}
	return nil
}

// absoluteHTTP reports whether s is an absolute http(s) URL with a host.
func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
