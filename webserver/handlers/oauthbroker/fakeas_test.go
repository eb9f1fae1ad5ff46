package oauthbroker_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// fakeAS is a simulated LMS authorization server: an authorize endpoint that sends the
// browser back with a code bound to its code_challenge, and a token endpoint that checks
// the code, redirect_uri, client credentials and PKCE verifier, and refreshes with rotation.
type fakeAS struct {
	srv                    *httptest.Server
	clientID, clientSecret string

	mu            sync.Mutex
	codes         map[string]authGrant
	refreshTokens map[string]string // LMS refresh token -> scope
	issued        int
	pkceVerified  int
	authorizeQ    url.Values // the last authorize request's query
	tokenForms    []url.Values
	// Knobs.
	rotate      bool   // refresh answers a new refresh_token and revokes the old one
	fail        string // "", "400", "401", "500", "slow", "echo": how the token endpoint fails
	deny        bool   // the authorize endpoint answers error=access_denied
	quotedExp   bool   // expires_in as a JSON string
	noRefresh   bool   // the code exchange returns no refresh_token
	omitScope   bool   // token responses have no scope member
	expiresIn   int
	authorizeQ0 string // the authorize URL's own query
}

type authGrant struct {
	challenge, redirectURI, clientID, scope string
}

const (
	authorizePath = "/login/oauth2/auth"
	tokenPath     = "/login/oauth2/token"
)

func newFakeAS(t testing.TB) *fakeAS {
	t.Helper()
	as := &fakeAS{
		clientID: "10000000000042", clientSecret: "lms-client-secret-Zx9",
		codes: map[string]authGrant{}, refreshTokens: map[string]string{},
		rotate: true, expiresIn: 3600, authorizeQ0: "tenant=t1",
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+authorizePath, as.authorize)
	mux.HandleFunc("POST "+tokenPath, as.token)
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

func (as *fakeAS) authorizeURL() string { return as.srv.URL + authorizePath + "?" + as.authorizeQ0 }
func (as *fakeAS) tokenURL() string     { return as.srv.URL + tokenPath }

func (as *fakeAS) set(f func(*fakeAS)) {
	as.mu.Lock()
	defer as.mu.Unlock()
	f(as)
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (as *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.authorizeQ = q
	redirectURI := q.Get("redirect_uri")
	if q.Get("client_id") != as.clientID || redirectURI == "" {
		http.Error(w, "unknown client", http.StatusBadRequest) // never redirect to an unchecked URI
		return
	}
	back, _ := url.Parse(redirectURI)
	bq := back.Query()
	bq.Set("state", q.Get("state"))
	switch {
	case as.deny:
		bq.Set("error", "access_denied")
		bq.Set("error_description", "The user denied access")
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		bq.Set("error", "invalid_request")
	case q.Get("tenant") != "t1":
		bq.Set("error", "invalid_request")
		bq.Set("error_description", "the authorize URL's own query was lost")
	default:
		code := randomString()
		as.codes[code] = authGrant{challenge: q.Get("code_challenge"), redirectURI: redirectURI,
			clientID: q.Get("client_id"), scope: q.Get("scope")}
		bq.Set("code", code)
	}
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func tokenError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

func (as *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		tokenError(w, http.StatusBadRequest, "invalid_request", "not a form")
		return
	}
	as.mu.Lock()
	fail := as.fail
	as.tokenForms = append(as.tokenForms, r.PostForm)
	as.mu.Unlock()
	switch fail {
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	case "400":
		tokenError(w, http.StatusBadRequest, "invalid_grant", "<script>alert(1)</script> the grant was revoked")
		return
	case "500":
		http.Error(w, "internal failure at the LMS", http.StatusInternalServerError)
		return
	case "echo": // an LMS that repeats what it was sent
		tokenError(w, http.StatusBadRequest, "invalid_grant", "bad refresh_token "+r.PostForm.Get("refresh_token"))
		return
	}
	if r.Header.Get("Accept") != "application/json" {
		tokenError(w, http.StatusNotAcceptable, "invalid_request", "Accept: application/json expected")
		return
	}
	if r.PostForm.Get("client_id") != as.clientID || r.PostForm.Get("client_secret") != as.clientSecret {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "bad client credentials")
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	var scope string
	resp := map[string]any{"token_type": "Bearer"}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok := as.codes[code]
		delete(as.codes, code) // single use
		if !ok || g.clientID != r.PostForm.Get("client_id") || g.redirectURI != r.PostForm.Get("redirect_uri") {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown code or redirect_uri mismatch")
			return
		}
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		}
		as.pkceVerified++
		scope = g.scope
		if !as.noRefresh {
			rt := fmt.Sprintf("lms-refresh-%d-%s", as.issued, randomString())
			as.refreshTokens[rt] = scope
			resp["refresh_token"] = rt
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		s, ok := as.refreshTokens[rt]
		if !ok {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "refresh token revoked")
			return
		}
		scope = s
		if as.rotate {
			delete(as.refreshTokens, rt)
			next := fmt.Sprintf("lms-refresh-%d-%s", as.issued, randomString())
			as.refreshTokens[next] = scope
			resp["refresh_token"] = next
		}
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "")
		return
	}
	as.issued++
	resp["access_token"] = fmt.Sprintf("lms-access-%d", as.issued)
	if as.quotedExp {
		resp["expires_in"] = fmt.Sprint(as.expiresIn)
	} else {
		resp["expires_in"] = as.expiresIn
	}
	if scope != "" && !as.omitScope {
		resp["scope"] = scope
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
