package lmssim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// Scopes of the LTI Advantage services.
const (
	ScopeNRPS             = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
	ScopeLineItem         = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	ScopeLineItemReadOnly = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
	ScopeResultReadOnly   = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
	ScopeScore            = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
)

// AllScopes returns the scopes the token endpoint grants by default.
func AllScopes() []string {
	return []string{ScopeNRPS, ScopeLineItem, ScopeLineItemReadOnly, ScopeResultReadOnly, ScopeScore, ScopeGroups}
}

// ClientAssertionType is the only client_assertion_type the token endpoint accepts.
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Media types of the services.
const (
	MediaMembershipContainer = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
	MediaLineItem            = "application/vnd.ims.lis.v2.lineitem+json"
	MediaLineItemContainer   = "application/vnd.ims.lis.v2.lineitemcontainer+json"
	MediaScore               = "application/vnd.ims.lis.v1.score+json"
	MediaResultContainer     = "application/vnd.ims.lis.v2.resultcontainer+json"
)

const (
	claimDeploymentID = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	claimMessageType  = "https://purl.imsglobal.org/spec/lti/claim/message_type"
	claimVersion      = "https://purl.imsglobal.org/spec/lti/claim/version"
	claimDLSettings   = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	claimDLData       = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
	claimDLItems      = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"

	maxAssertionLifetime = 300 // seconds, exp-iat of a client assertion
	maxDLLifetime        = 600 // seconds, exp-iat of a deep-linking response
	clockSkew            = 60  // seconds an iat may lie in the future
	defaultPageSize      = 100
	maxPageSize          = 1000
	maxBody              = 1 << 20
)

// services is the state of the LTI Advantage services, guarded by LMS.mu.
type services struct {
	jwksURL  string
	toolKeys jwk.Set // the tool's JWKS, refetched on an unknown kid
	pageKey  []byte  // authenticates page tokens

	tokenRequests int
	lastAssertion map[string]any
	jtis          map[string]time.Time // client assertion jti → its exp
	tokens        map[string]accessToken
	issued        []IssuedToken // the last maxIssuedLog tokens, revoked ones included

	lineItems []*lineItem // by n
	nextItem  int
	scores    int // stored scores, all line items

	dlNonces    map[string]time.Time // deep-linking response nonce → its exp
	dlResponses []map[string]any
}

type accessToken struct {
	scopes  []string
	expires time.Time
}

// IssuedToken describes an access token the token endpoint issued.
type IssuedToken struct {
	Scopes  []string // the granted scopes, in the order requested
	Expires time.Time
}

const maxIssuedLog = 1000

// EnableServices makes Handler serve the token endpoint, NRPS, AGS, the Course Groups
// Service and the deep-linking return URL, trusting the tool keys published at toolJWKSURL. Until it is called those
// routes answer 404. Calling it again only changes the JWKS URL (and drops the cached keys).
func (l *LMS) EnableServices(toolJWKSURL string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc != nil {
		l.svc.jwksURL, l.svc.toolKeys = toolJWKSURL, nil
		return
	}
	pageKey := make([]byte, 32)
	_, _ = rand.Read(pageKey)
	l.svc = &services{
		jwksURL: toolJWKSURL, pageKey: pageKey,
		jtis: map[string]time.Time{}, tokens: map[string]accessToken{}, dlNonces: map[string]time.Time{},
		lineItems: []*lineItem{newLineItem(1, map[string]any{
			"label": "Week 1 quiz", "scoreMaximum": float64(100), "resourceLinkId": "resource-link-1",
		})},
		nextItem: 2,
	}
}

func (l *LMS) serviceRoutes(mux *http.ServeMux) {
	item := LineItemsPath + "/{n}/lineitem"
	for pattern, h := range map[string]http.HandlerFunc{
		"POST " + TokenPath:          l.token,
		"GET " + MembershipsPath:     l.memberships,
		"GET " + LineItemsPath:       l.listLineItems,
		"POST " + LineItemsPath:      l.createLineItem,
		"GET " + item:                l.getLineItem,
		"PUT " + item:                l.putLineItem,
		"DELETE " + item:             l.deleteLineItem,
		"POST " + item + "/scores":   l.postScore,
		"GET " + item + "/results":   l.results,
		"POST " + DeepLinkReturnPath: l.deepLinkReturn,
		"GET " + GroupsPath:          l.groups,
		"GET " + GroupSetsPath:       l.groupSets,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if l.state() == nil {
				http.NotFound(w, r)
				return
			}
			h(w, r)
		})
	}
}

// state returns the services' state, nil before EnableServices. The pointer never changes
// once set; its fields are guarded by l.mu.
func (l *LMS) state() *services {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.svc
}

// TokenRequests is the number of requests the token endpoint received, refused ones included.
func (l *LMS) TokenRequests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return 0
	}
	return l.svc.tokenRequests
}

// LastAssertionClaims returns the claims of the last client assertion the token endpoint
// could decode, whether or not it was accepted; nil if none.
func (l *LMS) LastAssertionClaims() map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return nil
	}
	return maps.Clone(l.svc.lastAssertion)
}

// IssuedTokens returns the access tokens issued so far (the last 1,000), oldest first,
// revoked and expired ones included.
func (l *LMS) IssuedTokens() []IssuedToken {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return nil
	}
	out := make([]IssuedToken, len(l.svc.issued))
	for i, t := range l.svc.issued {
		out[i] = IssuedToken{Scopes: slices.Clone(t.Scopes), Expires: t.Expires}
	}
	return out
}

// RevokeTokens invalidates every access token issued so far: services answer 401 to them.
func (l *LMS) RevokeTokens() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc != nil {
		clear(l.svc.tokens)
	}
}

// oauthError writes an RFC 6749 §5.2 error response.
func oauthError(w http.ResponseWriter, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// token is the RFC 7523 client-credentials token endpoint (SEC §4.1.1, P-TOK rules).
func (l *LMS) token(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.svc.tokenRequests++
	l.mu.Unlock()

	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if !hasContentType(r, "application/x-www-form-urlencoded") {
		oauthError(w, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", "unreadable form: "+err.Error())
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "client_credentials" {
		oauthError(w, "unsupported_grant_type", "grant_type must be client_credentials")
		return
	}
	if f.Get("client_assertion_type") != ClientAssertionType {
		oauthError(w, "invalid_request", "client_assertion_type must be "+ClientAssertionType)
		return
	}
	raw := f.Get("client_assertion")
	if raw == "" {
		oauthError(w, "invalid_request", "client_assertion is required")
		return
	}
	claims, kid, err := parseToolJWT(raw)
	if err != nil {
		oauthError(w, "invalid_client", "client_assertion: "+err.Error())
		return
	}
	l.mu.Lock()
	l.svc.lastAssertion = claims
	l.mu.Unlock()
	if err := l.verifyToolSignature(r.Context(), raw, kid); err != nil {
		oauthError(w, "invalid_client", "client_assertion: "+err.Error())
		return
	}
	now := time.Now()
	exp, err := l.checkAssertion(claims, now)
	if err != nil {
		oauthError(w, "invalid_client", "client_assertion: "+err.Error())
		return
	}
	jti, _ := claims["jti"].(string)
	if jti == "" {
		oauthError(w, "invalid_client", "client_assertion: jti is required")
		return
	}

	requested := []string{}
	for _, s := range strings.Fields(f.Get("scope")) {
		if !slices.Contains(requested, s) {
			requested = append(requested, s)
		}
	}
	grantable := l.GrantableScopes
	if grantable == nil {
		grantable = append(l.defaultScopes(), AssetProcessorScopes()...)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	pruneExpired(l.svc.jtis, now)
	if _, seen := l.svc.jtis[jti]; seen {
		oauthError(w, "invalid_grant", "client_assertion: jti "+jti+" was already used")
		return
	}
	l.svc.jtis[jti] = exp
	if len(requested) == 0 {
		oauthError(w, "invalid_scope", "no scope requested")
		return
	}
	for _, s := range requested {
		if !slices.Contains(grantable, s) {
			oauthError(w, "invalid_scope", "scope not granted to this client: "+s)
			return
		}
	}
	lifetime := l.TokenLifetime
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	for k, t := range l.svc.tokens {
		if t.expires.Before(now) {
			delete(l.svc.tokens, k)
		}
	}
	access := randomHex(32)
	l.svc.tokens[access] = accessToken{scopes: requested, expires: now.Add(lifetime)}
	l.svc.issued = append(l.svc.issued, IssuedToken{Scopes: slices.Clone(requested), Expires: now.Add(lifetime)})
	if len(l.svc.issued) > maxIssuedLog {
		l.svc.issued = slices.Delete(l.svc.issued, 0, len(l.svc.issued)-maxIssuedLog)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": access, "token_type": "Bearer",
		"expires_in": int64(lifetime / time.Second), "scope": strings.Join(requested, " "),
	})
}

// maxRemembered bounds the jti and nonce replay caches: past it, expired entries are
// forgotten (an expired assertion or response is refused anyway).
const maxRemembered = 10000

func pruneExpired(seen map[string]time.Time, now time.Time) {
	if len(seen) < maxRemembered {
		return
	}
	for k, exp := range seen {
		if exp.Before(now) {
			delete(seen, k)
		}
	}
}

// checkAssertion checks the claims of a client assertion and returns its expiry.
func (l *LMS) checkAssertion(c map[string]any, now time.Time) (time.Time, error) {
	iss, _ := c["iss"].(string)
	sub, _ := c["sub"].(string)
	if iss != l.ClientID {
		return time.Time{}, fmt.Errorf("iss %q is not the client_id %q", iss, l.ClientID)
	}
	if sub != l.ClientID {
		return time.Time{}, fmt.Errorf("sub %q is not the client_id %q", sub, l.ClientID)
	}
	aud := l.TokenAudience
	if aud == "" {
		aud = l.Issuer + TokenPath
	}
	if !audienceContains(c["aud"], aud) {
		return time.Time{}, fmt.Errorf("aud %v does not contain %q", c["aud"], aud)
	}
	exp, err := checkLifetime(c, now, maxAssertionLifetime)
	if err != nil {
		return time.Time{}, err
	}
	if d, ok := c[claimDeploymentID]; ok && d != l.DeploymentID {
		return time.Time{}, fmt.Errorf("deployment_id %v is not %q", d, l.DeploymentID)
	}
	return exp, nil
}

// checkLifetime requires numeric iat and exp, exp in the future, iat not in the future
// (beyond clock skew) and exp-iat ≤ maxLifetime seconds. It returns exp.
func checkLifetime(c map[string]any, now time.Time, maxLifetime float64) (time.Time, error) {
	exp, ok := c["exp"].(float64)
	if !ok {
		return time.Time{}, errors.New("exp must be a number")
	}
	iat, ok := c["iat"].(float64)
	if !ok {
		return time.Time{}, errors.New("iat must be a number")
	}
	t := float64(now.UnixNano()) / 1e9
	switch {
	case exp <= t:
		return time.Time{}, errors.New("expired (exp is in the past)")
	case iat > t+clockSkew:
		return time.Time{}, errors.New("iat is in the future")
	case exp-iat > maxLifetime:
		return time.Time{}, fmt.Errorf("exp-iat is %.0f s, more than %.0f s", exp-iat, maxLifetime)
	}
	return time.Unix(int64(exp), 0), nil
}

// audienceContains reports whether aud, a string or an array, names want.
func audienceContains(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if v == want {
				return true
			}
		}
	}
	return false
}

// parseToolJWT decodes a compact JWS the tool signed: one signature, alg RS256, a kid, a
// JSON object payload. It does not verify the signature.
func parseToolJWT(raw string) (claims map[string]any, kid string, err error) {
	msg, err := jws.Parse([]byte(raw), jws.WithCompact())
	if err != nil {
		return nil, "", errors.New("not a compact JWS")
	}
	sigs := msg.Signatures()
	if len(sigs) != 1 {
		return nil, "", errors.New("want exactly one signature")
	}
	h := sigs[0].ProtectedHeaders()
	if alg, _ := h.Algorithm(); alg.String() != "RS256" {
		return nil, "", fmt.Errorf("alg %q, want RS256", alg.String())
	}
	kid, _ = h.KeyID()
	if kid == "" {
		return nil, "", errors.New("no kid in the header")
	}
	if err := json.Unmarshal(msg.Payload(), &claims); err != nil || claims == nil {
		return nil, "", errors.New("the payload is not a JSON object")
	}
	return claims, kid, nil
}

// verifyToolSignature checks raw's RS256 signature with the tool key named kid.
func (l *LMS) verifyToolSignature(ctx context.Context, raw, kid string) error {
	key, err := l.toolKey(ctx, kid)
	if err != nil {
		return err
	}
	if _, err := jws.Verify([]byte(raw), jws.WithKey(jwa.RS256(), key)); err != nil {
		return errors.New("invalid signature")
	}
	return nil
}

// toolKey finds kid in the cached tool JWKS, fetching the JWKS again when it is not there.
func (l *LMS) toolKey(ctx context.Context, kid string) (jwk.Key, error) {
	l.mu.Lock()
	set, jwksURL := l.svc.toolKeys, l.svc.jwksURL
	l.mu.Unlock()
	k, ok := lookupKey(set, kid)
	if !ok && l.CacheToolKeys && set != nil {
		return nil, fmt.Errorf("kid %q is not in the cached tool JWKS", kid)
	}
	if !ok {
		var err error
		if set, err = l.fetchJWKS(ctx, jwksURL); err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.svc.toolKeys = set
		l.mu.Unlock()
		if k, ok = lookupKey(set, kid); !ok {
			return nil, fmt.Errorf("kid %q is not in the tool's JWKS", kid)
		}
	}
	if k.KeyType().String() != "RSA" {
		return nil, fmt.Errorf("kid %q is not an RSA key", kid)
	}
	return k, nil
}

// RefreshToolKeys fetches the tool's JWKS into the cache now, as a caching LMS does on its
// schedule, and returns the kids it holds.
func (l *LMS) RefreshToolKeys(ctx context.Context) ([]string, error) {
	l.mu.Lock()
	jwksURL := l.svc.jwksURL
	l.mu.Unlock()
	set, err := l.fetchJWKS(ctx, jwksURL)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.svc.toolKeys = set
	l.mu.Unlock()
	var kids []string
	for i := range set.Len() {
		if k, ok := set.Key(i); ok {
			if kid, ok := k.KeyID(); ok {
				kids = append(kids, kid)
			}
		}
	}
	return kids, nil
}

func lookupKey(set jwk.Set, kid string) (jwk.Key, bool) {
	if set == nil {
		return nil, false
	}
	return set.LookupKeyID(kid)
}

func (l *LMS) fetchJWKS(ctx context.Context, u string) (jwk.Set, error) {
	c := l.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("tool JWKS URL: %w", err)
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the tool's JWKS: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the tool's JWKS: HTTP %d", res.StatusCode)
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("the tool's JWKS: %w", err)
	}
	return set, nil
}

// bearer checks the request's access token: unexpired, not revoked, holding one of
// scopes. It answers 401 or 403 itself and returns false when the request must stop.
func (l *LMS) bearer(w http.ResponseWriter, r *http.Request, scopes ...string) bool {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lmssim"`)
		http.Error(w, "an access token is required: Authorization: Bearer <token>", http.StatusUnauthorized)
		return false
	}
	l.mu.Lock()
	at, ok := l.svc.tokens[tok]
	l.mu.Unlock()
	if !ok || !time.Now().Before(at.expires) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lmssim", error="invalid_token"`)
		http.Error(w, "invalid, expired or revoked access token", http.StatusUnauthorized)
		return false
	}
	for _, s := range scopes {
		if slices.Contains(at.scopes, s) {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="lmssim", error="insufficient_scope", scope="`+strings.Join(scopes, " ")+`"`)
	http.Error(w, "the access token lacks the scope "+strings.Join(scopes, " or "), http.StatusForbidden)
	return false
}

// accepts reports whether the Accept header lists mediaType itself (not a wildcard).
func accepts(r *http.Request, mediaType string) bool {
	for _, line := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(line, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == mediaType {
				return true
			}
		}
	}
	return false
}

func hasContentType(r *http.Request, mediaType string) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == mediaType
}

// requireAccept answers 406 unless the request accepts mediaType.
func requireAccept(w http.ResponseWriter, r *http.Request, mediaType string) bool {
	if !accepts(r, mediaType) {
		http.Error(w, "Accept must name "+mediaType, http.StatusNotAcceptable)
		return false
	}
	return true
}

// requireContentType answers 415 unless the request body is of mediaType.
func requireContentType(w http.ResponseWriter, r *http.Request, mediaType string) bool {
	if !hasContentType(r, mediaType) {
		http.Error(w, "Content-Type must be "+mediaType, http.StatusUnsupportedMediaType)
		return false
	}
	return true
}

// decodeObject reads a request body that must be one JSON object.
func decodeObject(w http.ResponseWriter, r *http.Request) (map[string]any, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("the body must be a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the body must be a single JSON object")
	}
	return obj, nil
}

func writeJSON(w http.ResponseWriter, status int, mediaType string, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// paginate picks the window of a listing of total entries the request asks for: limit
// (default 100, at most 1000) and an opaque page token bound to the path and the other
// query parameters, so a tool must follow the next URL verbatim. next is empty on the
// last page; otherwise the caller sends it as Link: <next>; rel="next".
func (l *LMS) paginate(r *http.Request, total int) (start, end int, next string, err error) {
	q := r.URL.Query()
	limit := defaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, "", errors.New("limit must be a positive integer")
		}
		limit = min(n, maxPageSize)
	}
	if p := q.Get("page"); p != "" {
		if start, err = l.readPage(r.URL.Path, q, p); err != nil {
			return 0, 0, "", err
		}
	}
	start = min(start, total)
	end = min(start+limit, total)
	if end < total {
		q.Set("page", l.pageToken(r.URL.Path, q, end))
		next = l.Issuer + r.URL.Path + "?" + q.Encode()
	}
	return start, end, next, nil
}

func (l *LMS) pageMAC(path string, q url.Values, offset int) string {
	c := maps.Clone(q)
	c.Del("page")
	m := hmac.New(sha256.New, l.state().pageKey)
	fmt.Fprintf(m, "%s\n%s\n%d", path, c.Encode(), offset)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

func (l *LMS) pageToken(path string, q url.Values, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(offset))) + "." + l.pageMAC(path, q, offset)
}

func (l *LMS) readPage(path string, q url.Values, token string) (int, error) {
	bad := errors.New("invalid page token: follow the next URL verbatim, without changing its query")
	enc, mac, ok := strings.Cut(token, ".")
	if !ok {
		return 0, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return 0, bad
	}
	offset, err := strconv.Atoi(string(b))
	if err != nil || offset < 0 || !hmac.Equal([]byte(mac), []byte(l.pageMAC(path, q, offset))) {
		return 0, bad
	}
	return offset, nil
}

func setNext(w http.ResponseWriter, next string) {
	if next != "" {
		w.Header().Set("Link", "<"+next+`>; rel="next"`)
	}
}
