package lmssim

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Paths of the OAuth2 authorization server that protects the platform's REST API, and of
// one API call, as Canvas names them. They answer 404 until EnableOAuth2.
const (
	OAuthAuthorizePath = "/login/oauth2/auth"
	OAuthTokenPath     = "/login/oauth2/token"
	APIProfilePath     = "/api/v1/users/self/profile"
)

const (
	oauthCodeLifetime   = 60 * time.Second
	oauthAccessLifetime = time.Hour
)

// oauthServer is the state of the REST API's OAuth2 authorization server, guarded by LMS.mu.
type oauthServer struct {
	clientID, clientSecret string

	detectReuse   bool
	failStatus    int
	tokenRequests int

	codes   map[string]*oauthCode
	refresh map[string]*oauthGrant // every refresh token issued, rotated-out ones included
	access  map[string]oauthAccess
}

// oauthCode is an authorization code and what the authorization request bound it to.
type oauthCode struct {
	clientID, redirectURI, challenge, scope, user string
	expires                                       time.Time
	grant                                         *oauthGrant // set once redeemed
}

// oauthGrant is one authorization: the refresh token family started by a redeemed code.
type oauthGrant struct {
	clientID, user, scope string
	refresh               string // the current refresh token
	revoked               bool
}

type oauthAccess struct {
	grant   *oauthGrant
	expires time.Time
}

// EnableOAuth2 makes Handler serve an OAuth2 authorization server for the platform's REST
// API, as Canvas and Brightspace have, for the one confidential API client clientID with
// clientSecret; until it is called the paths answer 404. Calling it again only changes the
// client's credentials (what was issued to the former client is refused to the new one).
//
// The authorization endpoint (GET OAuthAuthorizePath) requires response_type=code,
// client_id, redirect_uri (an absolute http(s) URL without fragment; the client has no
// registered list), state and PKCE with code_challenge_method=S256; scope is optional and
// granted as requested. It does not ask a user: it approves at once for user "user-1",
// redirecting (302) to redirect_uri, its query kept, with code and state. An unknown
// client_id or an unusable redirect_uri is answered 400; any other bad request is
// redirected with error=invalid_request, error_description and state. Codes live 60 s.
//
// The token endpoint (POST OAuthTokenPath, a form) authenticates the client by
// client_secret_post or HTTP Basic (form-encoded credentials, RFC 6749 §2.3.1), not both,
// and answers 401 invalid_client to a bad client. grant_type=authorization_code requires
// code (single use), redirect_uri equal to the authorization request's and code_verifier
// matching the challenge; a code is used up only by a successful exchange.
// grant_type=refresh_token rotates: each answer carries a new refresh token and the one
// presented becomes invalid; an optional scope may narrow, not widen, the grant. Both
// answer access_token, token_type Bearer, expires_in 3600, refresh_token and scope.
// Refusals are RFC 6749 §5.2 errors (invalid_request, invalid_grant, invalid_scope,
// unsupported_grant_type), HTTP 400.
//
// APIProfilePath answers the user's profile to Authorization: Bearer <access token>; 401
// without a valid, unexpired, unrevoked one.
func (l *LMS) EnableOAuth2(clientID, clientSecret string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oa == nil {
		l.oa = &oauthServer{
			codes: map[string]*oauthCode{}, refresh: map[string]*oauthGrant{}, access: map[string]oauthAccess{},
		}
	}
	l.oa.clientID, l.oa.clientSecret = clientID, clientSecret
}

// OAuthTokenRequests is the number of requests the OAuth2 token endpoint received,
// refused and failed ones included.
func (l *LMS) OAuthTokenRequests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oa == nil {
		return 0
	}
	return l.oa.tokenRequests
}

// FailOAuthToken makes the OAuth2 token endpoint answer every request with status and
// {"error":"server_error"}, without looking at it, until called with 0. Like
// ExpireOAuthCodes, ExpireOAuthAccessTokens and DetectOAuthReuse, it has no effect before
// EnableOAuth2.
func (l *LMS) FailOAuthToken(status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oa != nil {
		l.oa.failStatus = status
	}
}

// ExpireOAuthCodes makes every authorization code issued so far expired.
func (l *LMS) ExpireOAuthCodes() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oa != nil {
		for _, c := range l.oa.codes {
			c.expires = time.Time{}
		}
	}
}

// ExpireOAuthAccessTokens makes every API access token issued so far expired; refresh
// tokens stay valid.
func (l *LMS) ExpireOAuthAccessTokens() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oa != nil {
		for k, a := range l.oa.access {
			a.expires = time.Time{}
			l.oa.access[k] = a
		}
	}
}

// DetectOAuthReuse turns on (or off) replay detection: presenting an authorization code
// again, or a refresh token that was rotated out, then also revokes the whole grant it
// belongs to, its current refresh token and access tokens included (RFC 6749 §4.1.2, OAuth
// security BCP §4.14.2). Off by default: a replay is only refused.
func (l *LMS) DetectOAuthReuse(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oa != nil {
		l.oa.detectReuse = on
	}
}

func (l *LMS) oauthRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]http.HandlerFunc{
		"GET " + OAuthAuthorizePath: l.oauthAuthorize,
		"POST " + OAuthTokenPath:    l.oauthToken,
		"GET " + APIProfilePath:     l.apiProfile,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			l.mu.Lock()
			enabled := l.oa != nil
			l.mu.Unlock()
			if !enabled {
				http.NotFound(w, r)
				return
			}
			h(w, r)
		})
	}
}

// oauthAuthorize is the authorization endpoint (RFC 6749 §4.1.1, RFC 7636 §4.3).
func (l *LMS) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l.mu.Lock()
	clientID := l.oa.clientID
	l.mu.Unlock()
	if len(q["client_id"]) != 1 || q.Get("client_id") != clientID {
		http.Error(w, "invalid_client: unknown client_id", http.StatusBadRequest)
		return
	}
	redirectURI := q.Get("redirect_uri")
	redirect, err := url.Parse(redirectURI)
	if len(q["redirect_uri"]) != 1 || err != nil || (redirect.Scheme != "https" && redirect.Scheme != "http") ||
		redirect.Host == "" || redirect.Fragment != "" || strings.Contains(redirectURI, "#") {
		http.Error(w, "invalid_request: redirect_uri must be one absolute http(s) URL without a fragment", http.StatusBadRequest)
		return
	}
	state := q.Get("state")
	reply := func(params url.Values) {
		if state != "" {
			params.Set("state", state)
		}
		u := *redirect
		if u.RawQuery != "" {
			u.RawQuery += "&" + params.Encode()
		} else {
			u.RawQuery = params.Encode()
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	refuse := func(desc string) {
		reply(url.Values{"error": {"invalid_request"}, "error_description": {desc}})
	}
	for _, k := range []string{"response_type", "state", "scope", "code_challenge", "code_challenge_method"} {
		if len(q[k]) > 1 {
			refuse(k + " must not be repeated")
			return
		}
	}
	switch {
	case q.Get("response_type") != "code":
		refuse("response_type must be code")
		return
	case state == "":
		refuse("state is required")
		return
	case q.Get("code_challenge") == "":
		refuse("PKCE is required: code_challenge is missing")
		return
	case q.Get("code_challenge_method") != "S256":
		refuse("code_challenge_method must be S256")
		return
	}
	challenge := q.Get("code_challenge")
	if b, err := base64.RawURLEncoding.DecodeString(challenge); err != nil || len(b) != sha256.Size {
		refuse("code_challenge must be the base64url SHA-256 of the code_verifier")
		return
	}

	code := randomHex(32)
	now := time.Now()
	l.mu.Lock()
	oa := l.oa
	if len(oa.codes) >= maxRemembered {
		for k, c := range oa.codes {
			if c.expires.Before(now.Add(-10 * time.Minute)) {
				delete(oa.codes, k)
			}
		}
	}
	oa.codes[code] = &oauthCode{
		clientID: clientID, redirectURI: redirectURI, challenge: challenge,
		scope: strings.Join(strings.Fields(q.Get("scope")), " "), user: defaultSub, expires: now.Add(oauthCodeLifetime),
	}
	l.mu.Unlock()
	reply(url.Values{"code": {code}})
}

// oauthToken is the token endpoint (RFC 6749 §4.1.3 and §6, RFC 7636 §4.6).
func (l *LMS) oauthToken(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.oa.tokenRequests++
	fail := l.oa.failStatus
	l.mu.Unlock()
	if fail != 0 {
		oauthReply(w, fail, map[string]string{"error": "server_error"})
		return
	}

	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if !hasContentType(r, "application/x-www-form-urlencoded") {
		oauthRefuse(w, http.StatusBadRequest, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthRefuse(w, http.StatusBadRequest, "invalid_request", "unreadable form: "+err.Error())
		return
	}
	f := r.PostForm
	for k, v := range f {
		if len(v) > 1 {
			oauthRefuse(w, http.StatusBadRequest, "invalid_request", k+" must not be repeated")
			return
		}
	}

	// Client authentication: client_secret_basic or client_secret_post, one of them.
	clientID, secret := f.Get("client_id"), f.Get("client_secret")
	if user, pass, ok := r.BasicAuth(); ok {
		if _, ok := f["client_secret"]; ok {
			oauthRefuse(w, http.StatusBadRequest, "invalid_request", "use one client authentication method: HTTP Basic or client_secret")
			return
		}
		u, err1 := url.QueryUnescape(user)
		p, err2 := url.QueryUnescape(pass)
		if err1 != nil || err2 != nil || (clientID != "" && clientID != u) {
			oauthRefuse(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
			return
		}
		clientID, secret = u, p
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	oa := l.oa
	if clientID == "" || secret == "" || clientID != oa.clientID ||
		subtle.ConstantTimeCompare([]byte(secret), []byte(oa.clientSecret)) != 1 {
		oauthRefuse(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}

	now := time.Now()
	var g *oauthGrant
	scope := ""
	switch f.Get("grant_type") {
	case "authorization_code":
		code := f.Get("code")
		if code == "" {
			oauthRefuse(w, http.StatusBadRequest, "invalid_request", "code is required")
			return
		}
		if f.Get("redirect_uri") == "" {
			oauthRefuse(w, http.StatusBadRequest, "invalid_request", "redirect_uri is required")
			return
		}
		c := oa.codes[code]
		if c == nil {
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
			return
		}
		if c.grant != nil {
			if oa.detectReuse {
				c.grant.revoked = true
			}
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
			return
		}
		switch {
		case c.clientID != clientID:
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "the authorization code was issued to another client")
			return
		case !now.Before(c.expires):
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
			return
		case f.Get("redirect_uri") != c.redirectURI:
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
			return
		case !pkceVerifierMatches(f.Get("code_verifier"), c.challenge):
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "code_verifier is missing or does not match code_challenge")
			return
		}
		g = &oauthGrant{clientID: clientID, user: c.user, scope: c.scope}
		c.grant = g
		scope = c.scope

	case "refresh_token":
		tok := f.Get("refresh_token")
		if tok == "" {
			oauthRefuse(w, http.StatusBadRequest, "invalid_request", "refresh_token is required")
			return
		}
		g = oa.refresh[tok]
		switch {
		case g == nil:
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		case g.clientID != clientID:
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
			return
		case g.revoked:
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "the refresh token was revoked")
			return
		case subtle.ConstantTimeCompare([]byte(tok), []byte(g.refresh)) != 1:
			if oa.detectReuse {
				g.revoked = true
			}
			oauthRefuse(w, http.StatusBadRequest, "invalid_grant", "the refresh token was rotated out and is no longer valid")
			return
		}
		scope = g.scope
		if _, ok := f["scope"]; ok {
			granted := strings.Fields(g.scope)
			requested := strings.Fields(f.Get("scope"))
			for _, s := range requested {
				if !slices.Contains(granted, s) {
					oauthRefuse(w, http.StatusBadRequest, "invalid_scope", "scope exceeds the grant: "+s)
					return
				}
			}
			scope = strings.Join(requested, " ")
		}

	case "":
		oauthRefuse(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		oauthRefuse(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
		return
	}

	g.refresh = randomHex(32)
	oa.refresh[g.refresh] = g
	if len(oa.access) >= maxRemembered {
		for k, a := range oa.access {
			if a.expires.Before(now) {
				delete(oa.access, k)
			}
		}
	}
	access := randomHex(32)
	oa.access[access] = oauthAccess{grant: g, expires: now.Add(oauthAccessLifetime)}
	oauthReply(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": int64(oauthAccessLifetime / time.Second),
		"refresh_token": g.refresh, "scope": scope,
	})
}

// pkceVerifierMatches checks an RFC 7636 code_verifier (43 to 128 unreserved characters)
// against an S256 code_challenge.
func pkceVerifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for _, c := range verifier {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func oauthReply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, "application/json", body)
}

func oauthRefuse(w http.ResponseWriter, status int, code, description string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="lmssim"`)
	}
	oauthReply(w, status, map[string]string{"error": code, "error_description": description})
}

// apiProfile is GET /api/v1/users/self/profile, answered to a valid access token.
func (l *LMS) apiProfile(w http.ResponseWriter, r *http.Request) {
	tok := bearerToken(r)
	l.mu.Lock()
	a, ok := l.oa.access[tok]
	valid := ok && time.Now().Before(a.expires) && !a.grant.revoked
	l.mu.Unlock()
	if !valid {
		challenge := `Bearer realm="lmssim"`
		if tok != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeJSON(w, http.StatusUnauthorized, "application/json",
			map[string]any{"errors": []map[string]string{{"message": "Invalid access token."}}})
		return
	}
	writeJSON(w, http.StatusOK, "application/json",
		map[string]any{"id": 1, "name": "Ada Lovelace", "primary_email": "ada@example.edu"})
}
