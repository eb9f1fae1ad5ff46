package advantage

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/version"
)

// Client-assertion and token-cache parameters.
const (
	// AssertionLifetime is exp-iat of the client assertion (T-CC-03: at most 300 s).
	AssertionLifetime = 5 * time.Minute
	// assertionBackdate is how far iat is set in the past, for LMS clocks slightly behind.
	assertionBackdate = 5 * time.Second
	// TokenMargin: a cached token is replaced this long before the LMS says it expires (T-CC-09).
	TokenMargin = 60 * time.Second
	// defaultTokenLifetime is assumed when the token response has no usable expires_in.
	defaultTokenLifetime = 5 * time.Minute
	maxTokenLifetime     = 24 * time.Hour
	// maxTokenEntries bounds the cache; past it, spent entries are swept, then all dropped.
	maxTokenEntries = 10000
	// maxScopes bounds one token request's scope list (the hit path is quadratic in it).
	maxScopes = 32

	claimDeploymentID      = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	assertionTypeJWTBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// Credentials say who asks for a token: the tool, for one registration (and launch).
type Credentials struct {
	PlatformID   string // registration ID (part of the token cache key)
	ClientID     string
	TokenURL     string        // the platform's token endpoint
	Audience     string        // client-assertion aud: the registration's authorizationServer, else TokenURL (T-CC-01, T-QUIRK-06)
	DeploymentID string        // sent as the deployment_id claim when set (T-CC-05); part of the cache key
	KID          string        // the tool key's kid, in the JWS header (T-CC-06); required
	Key          crypto.Signer // an *rsa.PrivateKey, or a signer that parses one when it signs

	// LaunchScopes are the scopes the launch granted: the AGS endpoint claim's scope array,
	// plus ltiwire.ScopeMembershipReadOnly when the launch has the NRPS claim (GrantedScopes builds
	// this). When set, a service method whose scope is not among them fails with
	// ErrScopeNotGranted before any request (T-AGS-02), and every service method asks for
	// the same token: the Advantage scopes among them (T-CC-10), so one token serves a
	// launch. When empty, each method asks for the one scope it needs.
	LaunchScopes []string

	// ServiceURLs are the launch's service URLs (AGS lineitems and lineitem, NRPS
	// context_memberships_url). Line item ids passed to GetLineItem, UpdateLineItem,
	// DeleteLineItem, PostScore and Results must be on the host of one of them (SameHost),
	// else ErrForeignURL: the token is never sent to a host the launch did not name. With
	// none, every item id is refused.
	ServiceURLs []string

	// Source is who supplied the registration's URLs (registry.Platform.Source): the token
	// endpoint and the platform's services are called with the client of that source's
	// policy, so a dynamic registration never reaches what only the operator's allowance opens.
	Source outbound.Source
}

// accessToken is one token the platform issued.
type accessToken struct {
	value     string
	granted   []string  // sorted; the response's scope, else what was asked for (T-CC-08)
	refreshAt time.Time // expires_in minus TokenMargin after the request was sent
}

// tokenEntry is the cache slot of one (PlatformID, ClientID, TokenURL, DeploymentID, scope
// set). Its identity fields never change once it is in the map.
type tokenEntry struct {
	platformID, clientID, tokenURL, deploymentID string
	scopes                                       []string // sorted, distinct
	scopeParam                                   string   // scopes joined by spaces
	next                                         *tokenEntry

	cur    atomic.Pointer[accessToken]
	mu     sync.Mutex   // guards flight
	flight *tokenFlight // the token request under way, if any (single flight)
}

type tokenFlight struct {
	done chan struct{}
	tok  *accessToken
	err  error
}

// Token returns an access token for scopes (any order; duplicates ignored). A cached
// token is returned until TokenMargin before it expires (T-CC-09); otherwise one request
// per cache key goes to the token endpoint and concurrent callers wait for it.
//
// The cache hit allocates nothing and takes about 0.1 µs, whatever the order of scopes,
// even with cred and the scope slice built at the call site: the lookup hashes and
// compares the strings it is given and never joins, sorts or copies them (so its cost
// grows with their length). At most 32 scopes.
func (c *Client) Token(ctx context.Context, cred Credentials, scopes []string) (string, error) {
	tok, _, err := c.token(ctx, cred, scopes)
	if err != nil {
		return "", err
	}
	return tok.value, nil
}

func (c *Client) token(ctx context.Context, cred Credentials, scopes []string) (*accessToken, *tokenEntry, error) {
	h, n := c.keyHash(&cred, scopes)
	c.mu.RLock()
	e := c.find(h, &cred, scopes, n)
	c.mu.RUnlock()
	if e != nil {
		if tok := e.cur.Load(); tok != nil && c.now().Before(tok.refreshAt) {
			return tok, e, nil
		}
	} else {
		if n == 0 || len(scopes) > maxScopes {
			return nil, nil, fmt.Errorf("advantage: token: between 1 and %d scopes must be requested", maxScopes)
		}
		if err := checkCredentials(&cred); err != nil {
			return nil, nil, err
		}
		e = c.insert(h, &cred, scopes, n)
	}
	tok, err := c.fetch(ctx, cred, e)
	return tok, e, err
}

// keyHash hashes the cache key without allocating: the credential fields in order, then
// the scope set as a sum over its distinct members (order-independent). n is the number
// of distinct scopes.
func (c *Client) keyHash(cred *Credentials, scopes []string) (h uint64, n int) {
	const prime = 0x100000001b3
	h = maphash.String(c.seed, cred.PlatformID)
	h = h*prime ^ maphash.String(c.seed, cred.ClientID)
	h = h*prime ^ maphash.String(c.seed, cred.TokenURL)
	h = h*prime ^ maphash.String(c.seed, cred.DeploymentID)
	var set uint64
	for i, s := range scopes {
		if slices.Contains(scopes[:i], s) {
			continue
		}
		set += maphash.String(c.seed, s)
		n++
	}
	return h*prime ^ set ^ uint64(n), n
}

// find returns the entry for the key; the caller holds c.mu.
func (c *Client) find(h uint64, cred *Credentials, scopes []string, n int) *tokenEntry {
	for e := c.tokens[h]; e != nil; e = e.next {
		if e.platformID == cred.PlatformID && e.clientID == cred.ClientID && e.tokenURL == cred.TokenURL &&
			e.deploymentID == cred.DeploymentID && len(e.scopes) == n && containsAll(e.scopes, scopes) {
			return e
		}
	}
	return nil
}

func containsAll(sorted, scopes []string) bool {
	for _, s := range scopes {
		if _, found := slices.BinarySearch(sorted, s); !found {
			return false
		}
	}
	return true
}

// insert returns the entry for the key, adding it when it is not there yet.
func (c *Client) insert(h uint64, cred *Credentials, scopes []string, n int) *tokenEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(h, cred, scopes, n); e != nil {
		return e
	}
	if c.ntokens >= maxTokenEntries {
		c.sweep()
	}
	set := slices.Compact(slices.Sorted(slices.Values(scopes)))
	e := &tokenEntry{
		platformID: cred.PlatformID, clientID: cred.ClientID, tokenURL: cred.TokenURL,
		deploymentID: cred.DeploymentID, scopes: set, scopeParam: strings.Join(set, " "),
		next: c.tokens[h],
	}
	c.tokens[h] = e
	c.ntokens++
	return e
}

// sweep drops entries without a usable token; if that frees nothing it drops them all
// (bounded memory beats a perfect cache). The caller holds c.mu for writing. Callers still
// holding a dropped entry finish with it harmlessly.
func (c *Client) sweep() {
	now := c.now()
	for h, head := range c.tokens {
		var keep *tokenEntry
		for e := head; e != nil; {
			next := e.next
			if tok := e.cur.Load(); tok != nil && now.Before(tok.refreshAt) {
				e.next = keep
				keep = e
			} else {
				c.ntokens--
			}
			e = next
		}
		if keep == nil {
			delete(c.tokens, h)
		} else {
			c.tokens[h] = keep
		}
	}
	if c.ntokens >= maxTokenEntries {
		clear(c.tokens)
		c.ntokens = 0
	}
}

// fetch returns the entry's token, asking the token endpoint when it has none that is
// fresh. One request per entry at a time: it runs detached from any one caller's
// cancellation, bounded by the client's timeout, and every caller waits for it or for its
// own context.
func (c *Client) fetch(ctx context.Context, cred Credentials, e *tokenEntry) (*accessToken, error) {
	e.mu.Lock()
	if tok := e.cur.Load(); tok != nil && c.now().Before(tok.refreshAt) {
		e.mu.Unlock()
		return tok, nil
	}
	f := e.flight
	if f == nil {
		f = &tokenFlight{done: make(chan struct{})}
		e.flight = f
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		go func() {
			defer cancel()
			tok, err := c.requestToken(fctx, cred, e)
			e.mu.Lock()
			if err == nil {
				e.cur.Store(tok)
			}
			e.flight = nil
			e.mu.Unlock()
			f.tok, f.err = tok, err
			close(f.done)
		}()
	}
	e.mu.Unlock()
	select {
	case <-f.done:
		return f.tok, f.err
	case <-ctx.Done():
		return nil, transportError("token", ctx.Err())
	}
}

func checkCredentials(cred *Credentials) error {
	switch {
	case cred.ClientID == "":
		return errors.New("advantage: token: Credentials.ClientID is empty")
	case cred.Key == nil:
		return errors.New("advantage: token: Credentials.Key is nil")
	case cred.KID == "":
		return errors.New("advantage: token: Credentials.KID is empty (T-CC-06)")
	}
	if _, err := parseHTTPURL(cred.TokenURL); err != nil {
		return fmt.Errorf("advantage: token: token URL: %w", err)
	}
	return nil
}

// tokenResponse is the token endpoint's answer, success or RFC 6749 §5.2 error.
type tokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	Scope            json.RawMessage `json:"scope"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// requestToken asks the token endpoint for the entry's scopes (conformance §2).
func (c *Client) requestToken(ctx context.Context, cred Credentials, e *tokenEntry) (*accessToken, error) {
	const op = "token"
	sent := c.now()
	assertion, err := ClientAssertion(cred, sent)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {assertionTypeJWTBearer},
		"client_assertion":      {assertion},
		"scope":                 {e.scopeParam},
	}
	req, err := http.NewRequestWithContext(outbound.WithTarget(ctx, outbound.TargetToken), http.MethodPost, cred.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("advantage: token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", version.UserAgent())
	res, err := c.hc.For(cred.Source).Do(req)
	if err != nil {
		return nil, transportError(op, err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxTokenBody))
		var tr tokenResponse
		_ = json.Unmarshal(body, &tr)
		// An error body holds no token, but some LMSs echo what they were sent: never the assertion.
		text := outbound.ErrorExcerpt([]byte(strings.ReplaceAll(string(body), assertion, "[client assertion]")))
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Body: text, Code: tr.Error}
	}
	body, err := readBody(op, res, maxTokenBody)
	if err != nil {
		return nil, err
	}
	var tr tokenResponse
	jsonErr := json.Unmarshal(body, &tr)
	// A 2xx body may hold the token: it goes into no error.
	switch {
	case jsonErr != nil:
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Err: errors.New("the token response is not JSON")}
	case tr.AccessToken == "":
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Code: tr.Error, Err: errors.New("the token response has no access_token")}
	case tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer"): // T-CC-07
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Err: fmt.Errorf("unsupported token_type %q", tr.TokenType)}
	}
	return &accessToken{
		value:     tr.AccessToken,
		granted:   grantedScopes(tr.Scope, e.scopes),
		refreshAt: sent.Add(refreshAfter(tr.ExpiresIn)),
	}, nil
}

// refreshAfter is how long a token is used: expires_in (a number, or a numeric string)
// minus TokenMargin; half of it for tokens too short for the margin.
func refreshAfter(raw json.RawMessage) time.Duration {
	life := defaultTokenLifetime
	s := strings.Trim(string(raw), `"`)
	if n, err := strconv.ParseFloat(s, 64); err == nil && n > 0 {
		life = time.Duration(min(n, maxTokenLifetime.Seconds()) * float64(time.Second))
	}
	if life > 2*TokenMargin {
		return life - TokenMargin
	}
	return life / 2
}

// grantedScopes reads the response's scope (space-separated string; an array is
// tolerated), else the requested set (T-CC-08).
func grantedScopes(raw json.RawMessage, requested []string) []string {
	var list []string
	var s string
	if json.Unmarshal(raw, &s) == nil {
		list = strings.Fields(s)
	} else if json.Unmarshal(raw, &list) != nil {
		list = nil
	}
	if len(list) == 0 {
		return requested
	}
	return slices.Compact(slices.Sorted(slices.Values(list)))
}

func grantedAny(granted, need []string) bool {
	for _, s := range need {
		if _, found := slices.BinarySearch(granted, s); found {
			return true
		}
	}
	return false
}

// assertionClaims are the client assertion's claims, timestamps numeric.
type assertionClaims struct {
	Iss          string `json:"iss"`
	Sub          string `json:"sub"`
	Aud          string `json:"aud"`
	Iat          int64  `json:"iat"`
	Exp          int64  `json:"exp"`
	Jti          string `json:"jti"`
	DeploymentID string `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id,omitempty"`
}

// ClientAssertion returns the signed JWT the tool authenticates with at the token
// endpoint (RFC 7523, conformance §2): header typ JWT, alg RS256, kid (T-CC-06); iss = sub
// = client_id (T-CC-02); aud = Audience, else the token URL, as a string (T-CC-01,
// T-QUIRK-06); iat = now-5s and exp = iat+300 (T-CC-03); a fresh random jti (T-CC-04); the
// deployment_id claim when known (T-CC-05).
func ClientAssertion(cred Credentials, now time.Time) (string, error) {
	if err := checkCredentials(&cred); err != nil {
		return "", err
	}
	aud := cred.Audience
	if aud == "" {
		aud = cred.TokenURL
	}
	iat := now.Add(-assertionBackdate).Unix()
	payload, err := json.Marshal(assertionClaims{
		Iss: cred.ClientID, Sub: cred.ClientID, Aud: aud,
		Iat: iat, Exp: iat + int64(AssertionLifetime/time.Second),
		Jti: rand.Text(), DeploymentID: cred.DeploymentID,
	})
	if err != nil {
		return "", fmt.Errorf("advantage: client assertion: %w", err)
	}
	hdr := jws.NewHeaders()
	if err := hdr.Set(jws.KeyIDKey, cred.KID); err != nil {
		return "", fmt.Errorf("advantage: client assertion: %w", err)
	}
	if err := hdr.Set(jws.TypeKey, ltiwire.TypeJWT); err != nil {
		return "", fmt.Errorf("advantage: client assertion: %w", err)
	}
	signed, err := jws.Sign(payload, jws.WithKey(jwa.RS256(), cred.Key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", fmt.Errorf("advantage: client assertion: %w", err)
	}
	return string(signed), nil
}

// GrantedScopes returns the Advantage scopes a launch granted, for
// Credentials.LaunchScopes: those of agsClaimScopes (the AGS endpoint claim's scope array;
// non-standard ones such as Canvas's are dropped) plus ltiwire.ScopeMembershipReadOnly when the
// launch has the NRPS claim, plus the known scopes among implied (those other service
// claims grant, e.g. ltiwire.ScopeGroupReadOnly for the groups service claim), sorted.
func GrantedScopes(agsClaimScopes []string, hasNRPSClaim bool, implied ...string) []string {
	var mask int
	for _, list := range [2][]string{agsClaimScopes, implied} {
		for _, s := range list {
			if i := knownScope(s); i >= 0 {
				mask |= 1 << i
			}
		}
	}
	if hasNRPSClaim {
		mask |= 1 << knownScope(ltiwire.ScopeMembershipReadOnly)
	}
	return slices.Clone(scopeSets[mask])
}

// knownScopes, sorted; scopeSets[mask] is the sorted subset a bit mask selects, built once
// so that choosing a service call's scopes allocates nothing.
var (
	knownScopes = []string{ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly, ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore, ltiwire.ScopeGroupReadOnly, ltiwire.ScopeMembershipReadOnly}
	scopeSets   = func() (sets [1 << 6][]string) {
		if !slices.IsSorted(knownScopes) {
			panic("advantage: knownScopes must be sorted")
		}
		for mask := range sets {
			for i, s := range knownScopes {
				if mask&(1<<i) != 0 {
					sets[mask] = append(sets[mask], s)
				}
			}
		}
		return sets
	}()
)

func knownScope(s string) int {
	switch s {
	case ltiwire.ScopeLineItem:
		return 0
	case ltiwire.ScopeLineItemReadOnly:
		return 1
	case ltiwire.ScopeResultReadOnly:
		return 2
	case ltiwire.ScopeScore:
		return 3
	case ltiwire.ScopeGroupReadOnly:
		return 4
	case ltiwire.ScopeMembershipReadOnly:
		return 5
	}
	return -1
}

// serviceScopes returns the scopes to ask a token for, for a call that needs one of need
// (most preferred first). With LaunchScopes: every Advantage scope the launch granted
// (T-CC-10), or ErrScopeNotGranted when none of need is among them (T-AGS-02). Without:
// need[0] alone.
func serviceScopes(op string, cred *Credentials, need ...string) ([]string, error) {
	var needMask int
	for _, s := range need {
		needMask |= 1 << knownScope(s)
	}
	if len(cred.LaunchScopes) == 0 {
		return scopeSets[1<<knownScope(need[0])], nil
	}
	var mask int
	for _, s := range cred.LaunchScopes {
		if i := knownScope(s); i >= 0 {
			mask |= 1 << i
		}
	}
	if mask&needMask == 0 {
		return nil, fmt.Errorf("advantage: %s: the launch did not grant %s: %w", op, strings.Join(need, " or "), ErrScopeNotGranted)
	}
	return scopeSets[mask], nil
}
