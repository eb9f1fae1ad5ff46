package toolsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"maps"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// Claim names.
const (
	ClaimMessageType   = "https://purl.imsglobal.org/spec/lti/claim/message_type"
	ClaimVersion       = "https://purl.imsglobal.org/spec/lti/claim/version"
	ClaimDeploymentID  = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	ClaimTargetLinkURI = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
	ClaimResourceLink  = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
	ClaimRoles         = "https://purl.imsglobal.org/spec/lti/claim/roles"
	ClaimCustom        = "https://purl.imsglobal.org/spec/lti/claim/custom"
	ClaimDLSettings    = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	ClaimDLContent     = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
	ClaimDLData        = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
	ClaimAGSEndpoint   = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	ClaimForUser       = "https://purl.imsglobal.org/spec/lti/claim/for_user"
)

// Message types.
const (
	ResourceLinkRequest = "LtiResourceLinkRequest"
	DeepLinkingRequest  = "LtiDeepLinkingRequest"
	DeepLinkingResponse = "LtiDeepLinkingResponse"
	// SubmissionReviewRequest is AGS 2.0's submission review launch.
	SubmissionReviewRequest = "LtiSubmissionReviewRequest"
)

const (
	clockSkew  = 60 * time.Second // leeway on exp and iat (T-TOK-14, T-TOK-15)
	maxIDAge   = 10 * time.Minute // an id_token older than this (by iat) is refused
	nonceTTL   = time.Hour        // accepted nonces are remembered this long at least
	maxIDToken = 64 << 10
)

// Launch is one launch attempt at a redirect URI, successful or not.
type Launch struct {
	OK bool
	// Err is why the launch was refused: a validation failure, or the platform's OIDC
	// error as "error: description".
	Err string
	// OAuthError and OAuthErrorDescription are the error the platform answered with
	// instead of an id_token (OIDC §3.1.2.6).
	OAuthError, OAuthErrorDescription string
	State                             string
	MessageType, Subject, Nonce       string
	// Claims is the verified payload (nil unless the signature was verified).
	Claims map[string]any
	// IDToken is the raw id_token as posted.
	IDToken string
}

// launchError is a refused launch and the HTTP status to answer with.
type launchError struct {
	status int
	msg    string
}

func (e *launchError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) *launchError {
	return &launchError{status: status, msg: fmt.Sprintf(format, args...)}
}

// launch is a redirect URI: it receives the authentication response (§1.4) and records it.
func (t *Tool) launch(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		t.record(Launch{Err: "unreadable form"})
		http.Error(w, "launch refused: unreadable form", http.StatusBadRequest)
		return
	}
	form := r.PostForm
	l := Launch{State: form.Get("state"), IDToken: form.Get("id_token")}
	if e := form.Get("error"); e != "" {
		// An authentication error response (T-TOK-02): not a launch. Its state is spent.
		l.OAuthError, l.OAuthErrorDescription = e, form.Get("error_description")
		l.Err = e
		if l.OAuthErrorDescription != "" {
			l.Err += ": " + l.OAuthErrorDescription
		}
		if l.State != "" {
			t.takeState(l.State)
		}
		t.record(l)
		http.Error(w, "the platform answered with an error: "+l.Err, http.StatusBadRequest)
		return
	}
	err := t.validate(r.Context(), &l)
	if err != nil {
		l.Err = err.msg
		t.record(l)
		http.Error(w, "launch refused: "+err.msg, err.status)
		return
	}
	l.OK = true
	t.record(l)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "<!doctype html>\n<html><body><p>launched %s for %s</p></body></html>\n",
		html.EscapeString(l.MessageType), html.EscapeString(l.Subject))
}

// validate checks the authentication response in l (state, id_token) in the order of
// lti-conformance.md §1.4 and fills in the rest of l.
func (t *Tool) validate(ctx context.Context, l *Launch) *launchError {
	if l.State == "" {
		return refuse(http.StatusBadRequest, "state is missing") // T-STATE-01
	}
	login, ok := t.takeState(l.State)
	if !ok {
		return refuse(http.StatusUnauthorized, "state is unknown, expired or already used") // T-STATE-02/03
	}
	if l.IDToken == "" {
		return refuse(http.StatusBadRequest, "id_token is missing") // T-TOK-01
	}
	if len(l.IDToken) > maxIDToken {
		return refuse(http.StatusBadRequest, "id_token is too large")
	}
	cfg := t.Config()

	// T-TOK-03..05: a compact JWS with one RS256 signature and a kid.
	msg, err := jws.Parse([]byte(l.IDToken), jws.WithCompact())
	if err != nil {
		return refuse(http.StatusBadRequest, "id_token is not a compact JWS")
	}
	sigs := msg.Signatures()
	if len(sigs) != 1 {
		return refuse(http.StatusBadRequest, "id_token must have exactly one signature")
	}
	h := sigs[0].ProtectedHeaders()
	if alg, _ := h.Algorithm(); alg.String() != "RS256" {
		return refuse(http.StatusUnauthorized, "alg %q is not RS256", alg.String())
	}
	kid, _ := h.KeyID()
	if kid == "" {
		return refuse(http.StatusUnauthorized, "the id_token header has no kid")
	}

	// T-TOK-08..10: the platform key named kid, and the signature.
	key, err := t.platformKey(ctx, cfg, kid)
	if err != nil {
		if errors.Is(err, errUnknownKID) {
			return refuse(http.StatusUnauthorized, "%v", err)
		}
		return refuse(http.StatusServiceUnavailable, "the platform JWKS is unavailable: %v", err)
	}
	payload, err := jws.Verify([]byte(l.IDToken), jws.WithKey(jwa.RS256(), key))
	if err != nil {
		return refuse(http.StatusUnauthorized, "invalid signature")
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil || claims == nil {
		return refuse(http.StatusBadRequest, "the id_token payload is not a JSON object")
	}
	l.Claims = claims
	l.MessageType, _ = claims[ClaimMessageType].(string)
	l.Subject, _ = claims["sub"].(string)
	l.Nonce, _ = claims["nonce"].(string)

	// T-TOK-11..16: issuer, audience, time, nonce.
	if iss, _ := claims["iss"].(string); iss != cfg.Issuer || iss == "" {
		return refuse(http.StatusUnauthorized, "iss %q is not the platform issuer %q", trim(fmt.Sprint(claims["iss"])), cfg.Issuer)
	}
	if err := checkAudience(claims, cfg.ClientID); err != nil {
		return err
	}
	if err := checkTimes(claims, time.Now()); err != nil {
		return err
	}
	if l.Nonce == "" {
		return refuse(http.StatusUnauthorized, "nonce is missing") // T-NONCE-01
	}
	if l.Nonce != login.nonce {
		return refuse(http.StatusUnauthorized, "nonce does not match the one sent for this state") // T-NONCE-02
	}
	if !t.useNonce(l.Nonce) {
		return refuse(http.StatusUnauthorized, "nonce was already used") // T-NONCE-03
	}

	// T-TOK-17..22: the LTI claims.
	if v, _ := claims[ClaimVersion].(string); v != "1.3.0" {
		return refuse(http.StatusBadRequest, "version %v is not 1.3.0", claims[ClaimVersion])
	}
	if l.MessageType != ResourceLinkRequest && l.MessageType != DeepLinkingRequest && l.MessageType != SubmissionReviewRequest {
		return refuse(http.StatusBadRequest, "message_type %v is not handled", claims[ClaimMessageType])
	}
	dep, _ := claims[ClaimDeploymentID].(string)
	switch {
	case dep == "":
		return refuse(http.StatusBadRequest, "deployment_id is missing")
	case cfg.DeploymentID != "" && dep != cfg.DeploymentID:
		return refuse(http.StatusForbidden, "deployment_id %q is not %q", trim(dep), cfg.DeploymentID)
	case login.deploymentID != "" && dep != login.deploymentID:
		return refuse(http.StatusBadRequest, "deployment_id %q is not the login's lti_deployment_id %q", trim(dep), login.deploymentID)
	}
	if tl, _ := claims[ClaimTargetLinkURI].(string); tl != login.targetLinkURI {
		return refuse(http.StatusBadRequest, "target_link_uri %v is not the login's %q", claims[ClaimTargetLinkURI], login.targetLinkURI)
	}
	if l.Subject == "" {
		return refuse(http.StatusBadRequest, "sub is missing (anonymous launches are refused)")
	}
	if _, ok := claims[ClaimRoles].([]any); !ok && l.MessageType == ResourceLinkRequest {
		return refuse(http.StatusBadRequest, "roles must be an array")
	}
	switch l.MessageType {
	case ResourceLinkRequest:
		rl, _ := claims[ClaimResourceLink].(map[string]any)
		if id, _ := rl["id"].(string); id == "" {
			return refuse(http.StatusBadRequest, "resource_link.id is missing")
		}
		custom, _ := claims[ClaimCustom].(map[string]any)
		for _, k := range cfg.RequiredCustom {
			if v, _ := custom[k].(string); v == "" || strings.HasPrefix(v, "$") {
				return refuse(http.StatusBadRequest, "custom parameter %q is missing or unresolved (%v)", k, custom[k])
			}
		}
	case SubmissionReviewRequest: // AGS 2.0 submission review: the line item and the learner
		ags, _ := claims[ClaimAGSEndpoint].(map[string]any)
		if li, _ := ags["lineitem"].(string); li == "" {
			return refuse(http.StatusBadRequest, "the AGS endpoint claim with lineitem is missing")
		}
		fu, _ := claims[ClaimForUser].(map[string]any)
		if id, _ := fu["user_id"].(string); id == "" {
			return refuse(http.StatusBadRequest, "for_user.user_id is missing")
		}
	case DeepLinkingRequest:
		s, ok := claims[ClaimDLSettings].(map[string]any)
		if !ok {
			return refuse(http.StatusBadRequest, "deep_linking_settings is missing")
		}
		if u, _ := s["deep_link_return_url"].(string); u == "" {
			return refuse(http.StatusBadRequest, "deep_linking_settings.deep_link_return_url is missing")
		}
		for _, name := range []string{"accept_types", "accept_presentation_document_targets"} {
			if !nonEmptyStrings(s[name]) {
				return refuse(http.StatusBadRequest, "deep_linking_settings.%s must be a non-empty array of strings", name)
			}
		}
	}
	return nil
}

// checkAudience: aud is the client id or an array holding it and nothing untrusted; azp
// is required with several audiences and must be the client id (T-TOK-12, T-TOK-13).
func checkAudience(claims map[string]any, clientID string) *launchError {
	var aud []string
	switch v := claims["aud"].(type) {
	case string:
		aud = []string{v}
	case []any:
		for _, a := range v {
			s, ok := a.(string)
			if !ok {
				return refuse(http.StatusUnauthorized, "aud holds a non-string")
			}
			aud = append(aud, s)
		}
	default:
		return refuse(http.StatusUnauthorized, "aud must be a string or an array of strings")
	}
	found := false
	for _, a := range aud {
		if a != clientID {
			return refuse(http.StatusUnauthorized, "aud holds %q, which is not the client id %q", trim(a), clientID)
		}
		found = true
	}
	if !found || clientID == "" {
		return refuse(http.StatusUnauthorized, "aud does not contain the client id %q", clientID)
	}
	azp, has := claims["azp"]
	if len(aud) > 1 && !has {
		return refuse(http.StatusUnauthorized, "azp is required when aud has several values")
	}
	if has && azp != clientID {
		return refuse(http.StatusUnauthorized, "azp %v is not the client id %q", azp, clientID)
	}
	return nil
}

// checkTimes: exp in the future, iat neither in the future nor too old (T-TOK-14, T-TOK-15).
func checkTimes(claims map[string]any, now time.Time) *launchError {
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return refuse(http.StatusUnauthorized, "exp must be a number")
	}
	iat, ok := numericDate(claims["iat"])
	if !ok {
		return refuse(http.StatusUnauthorized, "iat must be a number")
	}
	switch {
	case !now.Before(exp.Add(clockSkew)):
		return refuse(http.StatusUnauthorized, "the id_token expired at %s", exp.UTC().Format(time.RFC3339))
	case iat.After(now.Add(clockSkew)):
		return refuse(http.StatusUnauthorized, "iat %s is in the future", iat.UTC().Format(time.RFC3339))
	case now.Sub(iat) > maxIDAge+clockSkew:
		return refuse(http.StatusUnauthorized, "iat %s is too old", iat.UTC().Format(time.RFC3339))
	case exp.Before(iat):
		return refuse(http.StatusUnauthorized, "exp is before iat")
	}
	return nil
}

func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

func nonEmptyStrings(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	for _, e := range l {
		if s, ok := e.(string); !ok || s == "" {
			return false
		}
	}
	return true
}

// useNonce marks nonce as used; false when it already was.
func (t *Tool) useNonce(nonce string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for n, at := range t.used {
		if now.Sub(at) > nonceTTL {
			delete(t.used, n)
		}
	}
	if _, seen := t.used[nonce]; seen {
		return false
	}
	t.used[nonce] = now
	return true
}

func (t *Tool) record(l Launch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.launches = append(t.launches, l)
	close(t.changed)
	t.changed = make(chan struct{})
}

// Launches returns the launch attempts recorded so far, in order.
func (t *Tool) Launches() []Launch {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Launch, len(t.launches))
	for i, l := range t.launches {
		out[i] = l.clone()
	}
	return out
}

// LastLaunch returns the last launch attempt recorded.
func (t *Tool) LastLaunch() (Launch, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.launches) == 0 {
		return Launch{}, false
	}
	return t.launches[len(t.launches)-1].clone(), true
}

// WaitLaunch waits until at least n launch attempts were recorded and returns the n-th
// (1-based), or ctx's error.
func (t *Tool) WaitLaunch(ctx context.Context, n int) (Launch, error) {
	if n < 1 {
		return Launch{}, fmt.Errorf("launch number %d: the first is 1", n)
	}
	for {
		t.mu.Lock()
		if len(t.launches) >= n {
			l := t.launches[n-1].clone()
			t.mu.Unlock()
			return l, nil
		}
		changed, have := t.changed, len(t.launches)
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Launch{}, fmt.Errorf("waiting for launch %d (have %d): %w", n, have, ctx.Err())
		}
	}
}

// clone copies l so that callers cannot change the record (Claims is copied deeply).
func (l Launch) clone() Launch {
	if l.Claims != nil {
		l.Claims = deepCopy(l.Claims).(map[string]any)
	}
	return l
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := maps.Clone(v)
		for k, e := range m {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}
