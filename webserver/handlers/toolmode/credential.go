package toolmode

// The credential model of tool mode, in one place: what a launch leaves behind (the sealed
// launch record an ltik carries), what its services may reach (the grant, which a service
// key or a notice key seals), how a request presents them again (the Authorization
// schemes), the cache of opened ltiks, and the service keys minted from them. The
// authenticator owns all of it; the handlers read the one grant it puts in the request
// context. Nothing here depends on the rest of the package.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"github.com/ltiop/ltiop/api/ltiwire"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Codes of the credential failures: one per credential, whatever part was wrong (service
// interface §7).
const (
	CodeInvalidLtikAuth      = "INVALID_LTIK_AUTH_AUTHORIZATION_HEADER"
	CodeInvalidServiceAuth   = "INVALID_SERVICE_AUTH_AUTHORIZATION_HEADER"
	CodeInvalidNoticeKeyAuth = "INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"
)

// defaultServiceKeyLifetime bounds a service key: a captured key must not open the LMS's
// rosters and grades for years. Each launch in a course gives a fresh one.
const defaultServiceKeyLifetime = 90 * 24 * time.Hour

// defaultNoticeKeyLifetime is a notice key's when NoticeOptions.KeyLifetime is zero.
const defaultNoticeKeyLifetime = time.Hour

// Launch is what an ltik carries: the validated launch, with the platform's claims as
// received, so the integrator API needs no server-side session.
//
// Sealed form: the JSON of the small fields, a newline, then the claims verbatim, so
// opening an ltik never scans the ~4 KB of claims twice.
type Launch struct {
	PlatformID   string `json:"p"`
	PlatformUID  string `json:"u"` // a re-created registration does not inherit launches
	Issuer       string `json:"i"`
	ClientID     string `json:"c"`
	DeploymentID string `json:"d"`
	MessageType  string `json:"m"`
	// TargetLinkURI is the login's, for deep-linking launches whose token has none (§12.3).
	TargetLinkURI string `json:"l,omitempty"`
	// ServiceKey is only in ltiks sealed by an earlier ltiop, which made it at launch; it
	// is still answered. Now the key is minted on demand (serviceKey): sealing a second
	// token into every ltik cost a launch a sixth of its work and made the ltik a third longer.
	ServiceKey string          `json:"k,omitempty"`
	Claims     json.RawMessage `json:"-"`
	// LTIVersion is set for LTI 1.1 launches (lti11.Version); empty means 1.3.
	LTIVersion string `json:"v,omitempty"`
}

func encodeLaunch(l Launch) []byte {
	head, _ := json.Marshal(l) // json.Marshal escapes newlines: the first one ends the head
	out := make([]byte, 0, len(head)+1+len(l.Claims))
	return append(append(append(out, head...), '\n'), l.Claims...)
}

func decodeLaunch(b []byte) (*Launch, error) {
	head, claims, ok := bytes.Cut(b, []byte{'\n'})
	if !ok {
		return nil, errors.New("not a sealed launch")
	}
	var l Launch
	if err := json.Unmarshal(head, &l); err != nil {
		return nil, err
	}
	l.Claims = claims
	return &l, nil
}

// openedLaunch is an ltik as this replica opened it: the sealed record, its claims parsed,
// when it was sealed (its service key lives from then), and the service key this replica
// made for it, at most once. The ltik cache keeps it, so the key is the same while it
// stays there (another replica, or this one after eviction, makes its own, as valid).
type openedLaunch struct {
	Launch
	claims *lti.Claims
	issued time.Time

	mint       sync.Once
	serviceKey string
	mintErr    error
}

// grant is what the services of one launch may reach: sealed as the serviceKey, or
// derived from an ltik's claims. It binds the registration, deployment and context.
type grant struct {
	PlatformID     string   `json:"p"`
	PlatformUID    string   `json:"u"`
	DeploymentID   string   `json:"d"`
	ContextID      string   `json:"c,omitempty"`
	MembershipsURL string   `json:"m,omitempty"`
	LineItemsURL   string   `json:"i,omitempty"`
	LineItemURL    string   `json:"l,omitempty"`
	AGSScopes      []string `json:"s,omitempty"`
	// Asset Processor and EULA services (assetprocessor.go): the launch's or notice's asset
	// URLs by asset id, the report and EULA URLs, and each scope as the platform spelled it.
	AssetURLs   map[string]string `json:"au,omitempty"`
	AssetScope  string            `json:"as,omitempty"`
	ReportURL   string            `json:"ru,omitempty"`
	ReportScope string            `json:"rs,omitempty"`
	EulaURL     string            `json:"eu,omitempty"`
	EulaScopes  []string          `json:"es,omitempty"`
	// The Course Groups Service URLs (the sets URL only with the groups URL).
	GroupsURL    string `json:"gr,omitempty"`
	GroupSetsURL string `json:"gs,omitempty"`
	// PNSURL is the launch's platform_notification_service_url (set when a service key is sealed).
	PNSURL string `json:"n,omitempty"`
	// Basic Outcomes (LTI 1.1, or the basicoutcome claim of a 1.3 launch).
	OutcomeURL string `json:"o,omitempty"`
	SourcedID  string `json:"r,omitempty"`
	// From an ltik only (never sealed in a service key): the launch itself.
	launch *openedLaunch
	claims *lti.Claims
	// notice: opened from a notice key (its 401s carry the notice key's code).
	notice bool
}

// grantFromClaims is the grant of launch l (or of a notice, described as a launch) with
// claims c.
func grantFromClaims(platformUID string, l *Launch, c *lti.Claims) *grant {
	g := &grant{PlatformID: l.PlatformID, PlatformUID: platformUID, DeploymentID: l.DeploymentID, claims: c}
	if c.Context != nil {
		g.ContextID = c.Context.ID
	}
	if c.NRPS != nil {
		g.MembershipsURL = c.NRPS.ContextMembershipsURL
	}
	if c.AGS != nil {
		g.LineItemsURL, g.LineItemURL, g.AGSScopes = c.AGS.LineItems, c.AGS.LineItem, c.AGS.Scope
	}
	if c.Groups != nil && c.Groups.ContextGroupsURL != "" {
		g.GroupsURL, g.GroupSetsURL = c.Groups.ContextGroupsURL, c.Groups.ContextGroupSetsURL
	}
	g.addAssetProcessor(&c.AssetProcessor)
	if c.BasicOutcome != nil {
		g.OutcomeURL, g.SourcedID = c.BasicOutcome.ServiceURL, c.BasicOutcome.SourcedID
	}
	return g
}

// grant is the grant of the opened launch, which it carries.
func (o *openedLaunch) grant() *grant {
	g := grantFromClaims(o.PlatformUID, &o.Launch, o.claims)
	g.launch = o
	return g
}

// addAssetProcessor fills the grant's Asset Processor and EULA members from the claims of
// a launch or notice. A scope the platform did not grant leaves the service unavailable.
func (g *grant) addAssetProcessor(ap *lti.AssetProcessor) {
	if s := ap.AssetService; s != nil {
		for _, a := range s.Assets {
			if a.ID == "" || a.URL == "" {
				continue
			}
			if g.AssetURLs == nil {
				g.AssetURLs = make(map[string]string, len(s.Assets))
			}
			g.AssetURLs[a.ID] = a.URL
		}
		g.AssetScope, _ = lti.HasScope(s.Scope, ltiwire.ScopeAssetReadOnly)
	}
	if r := ap.AssetReport; r != nil && r.ReportURL != "" {
		g.ReportURL = r.ReportURL
		g.ReportScope, _ = lti.HasScope(r.Scope, ltiwire.ScopeReport)
	}
	if e := ap.EulaService; e != nil && e.URL != "" {
		g.EulaURL, g.EulaScopes = e.URL, slices.Clone(e.Scope)
	}
}

func (g *grant) hasAssetProcessor() bool {
	return len(g.AssetURLs) > 0 || g.ReportURL != "" || g.EulaURL != ""
}

// hasServices: a service key is issued only when NRPS, AGS, groups, or an Asset Processor
// or EULA service is available.
func (g *grant) hasServices() bool {
	return g.MembershipsURL != "" || g.LineItemsURL != "" || g.LineItemURL != "" || g.GroupsURL != "" ||
		g.hasAssetProcessor()
}

// groupsScope is what the groups service claim grants: its URL implies the scope, as the
// NRPS claim's does (Sakai's claim may carry no scope array).
var groupsScope = []string{ltiwire.ScopeGroupReadOnly}

// impliedScopes are the scopes the launch's other service claims grant.
func (g *grant) impliedScopes() []string {
	if g.GroupsURL != "" {
		return groupsScope
	}
	return nil
}

// pnsURL is the launch's platform_notification_service_url: from the sealed service key,
// or read from the launch's claims.
func (g *grant) pnsURL() string {
	if g.PNSURL != "" {
		return g.PNSURL
	}
	if g.claims != nil {
		if p := lti.DecodePNS(g.claims.Raw); p != nil {
			return p.URL
		}
	}
	return ""
}

// grantKey is the one context key of tool mode: the request's grant, and through it the
// launch when the credential was an ltik.
type grantKey struct{}

// grantFrom is the grant the authenticator admitted the request with.
func grantFrom(ctx context.Context) *grant {
	g, _ := ctx.Value(grantKey{}).(*grant)
	return g
}

// authenticator opens the credentials of the launch services and mints service keys.
type authenticator struct {
	registry *registry.Registry
	keyring  *sessions.Keyring
	apiKey   *httpapi.APIKey
	ltiks    *ltikCache
	now      func() time.Time
	// serviceKeyLifetime is Options.ServiceKeyLifetime (zero: defaultServiceKeyLifetime).
	serviceKeyLifetime time.Duration
	// noticeKeyLifetime is NoticeOptions.KeyLifetime (zero: defaultNoticeKeyLifetime).
	noticeKeyLifetime time.Duration
}

// require admits LTIK-AUTH-V2 (and V1) and, when allowServiceKey, SERVICE-AUTH-V1 and
// NOTICE-AUTH-V1 <API_KEY>:<key>; it refuses everything else, Bearer included. The
// registration must still exist, be the one the launch came from, and be active.
func (a *authenticator) require(next http.Handler, allowServiceKey bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
		var g *grant
		var herr *httpapi.Error
		switch {
		case strings.EqualFold(scheme, "SERVICE-AUTH-V1") && allowServiceKey:
			g, herr = a.openServiceKey(strings.TrimSpace(rest))
		case strings.EqualFold(scheme, "NOTICE-AUTH-V1") && allowServiceKey:
			g, herr = a.openNoticeKey(strings.TrimSpace(rest))
		case strings.EqualFold(scheme, "LTIK-AUTH-V2"), strings.EqualFold(scheme, "LTIK-AUTH-V1"):
			g, herr = a.openLtik(h)
		case allowServiceKey:
			herr = schemeFailure(httpapi.Errorf(http.StatusUnauthorized, httpapi.CodeInvalidAuthScheme,
				"This endpoint accepts LTIK-AUTH-V2 <API_KEY>:<ltik>, SERVICE-AUTH-V1 <API_KEY>:<serviceKey> or NOTICE-AUTH-V1 <API_KEY>:<noticeKey>."), nil)
		default:
			herr = invalidLtikAuth("The Authorization header must be LTIK-AUTH-V2 <API_KEY>:<ltik>.")
		}
		if herr != nil {
			httpapi.WriteError(w, herr)
			return
		}
		httpapi.NotePlatform(r.Context(), g.PlatformID)
		if _, herr := a.platformOf(g); herr != nil {
			httpapi.WriteError(w, schemeFailure(herr, g))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
	})
}

func invalidLtikAuth(description string) *httpapi.Error {
	return httpapi.Errorf(http.StatusUnauthorized, CodeInvalidLtikAuth, description)
}

// parseLtikAuth reads both LTIK schemes. The ltik never contains ':' (base64url and dots),
// so the last ':' separates it from the API key.
func parseLtikAuth(h string) (apiKey, ltik string, ok bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "LTIK-AUTH-V2"):
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 || i == len(rest)-1 {
			return "", "", false
		}
		return rest[:i], rest[i+1:], true
	case strings.EqualFold(scheme, "LTIK-AUTH-V1"):
		// Token=<ltik>, Additional=Bearer <API_KEY>
		for _, part := range strings.Split(rest, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch strings.ToLower(name) {
			case "token":
				ltik = strings.TrimSpace(value)
			case "additional":
				if s, key, found := strings.Cut(strings.TrimSpace(value), " "); found && strings.EqualFold(s, "Bearer") {
					apiKey = strings.TrimSpace(key)
				}
			}
		}
		return apiKey, ltik, apiKey != "" && ltik != ""
	}
	return "", "", false
}

// openLtik authenticates an LTIK header and derives the launch's grant.
func (a *authenticator) openLtik(header string) (*grant, *httpapi.Error) {
	apiKey, ltik, ok := parseLtikAuth(header)
	if !ok {
		return nil, invalidLtikAuth("The Authorization header must be LTIK-AUTH-V2 <API_KEY>:<ltik>.")
	}
	if err := a.apiKey.Check(apiKey); err != nil {
		if err.Status == http.StatusUnauthorized {
			err = invalidLtikAuth("The API key or the ltik is invalid, or the ltik has expired.")
		}
		return nil, err
	}
	now := a.now()
	if o, ok := a.ltiks.get(ltik, now, a.keyring.Holds); ok {
		return o.grant(), nil
	}
	opened, err := a.keyring.OpenToken(sessions.PurposeLTIK, ltik, now)
	var launch *Launch
	if err == nil {
		launch, err = decodeLaunch(opened.Payload)
	}
	var claims *lti.Claims
	if err == nil {
		claims, err = lti.ParseValidatedClaims(launch.Claims)
	}
	if err != nil {
		return nil, invalidLtikAuth("The API key or the ltik is invalid, or the ltik has expired.")
	}
	o := &openedLaunch{Launch: *launch, claims: claims, issued: opened.IssuedAt}
	a.ltiks.put(ltik, o, opened.Expires, opened.KeyID)
	return o.grant(), nil
}

func (a *authenticator) openServiceKey(credential string) (*grant, *httpapi.Error) {
	return a.openSealedGrant(credential, sessions.PurposeServiceKey,
		httpapi.Errorf(http.StatusUnauthorized, CodeInvalidServiceAuth, "The API key or the service key is invalid."))
}

// openNoticeKey authenticates NOTICE-AUTH-V1 <API_KEY>:<noticeKey>.
func (a *authenticator) openNoticeKey(credential string) (*grant, *httpapi.Error) {
	g, herr := a.openSealedGrant(credential, sessions.PurposeNoticeKey,
		httpapi.Errorf(http.StatusUnauthorized, CodeInvalidNoticeKeyAuth, "The API key or the notice key is invalid, or the notice key has expired."))
	if g != nil {
		g.notice = true
	}
	return g, herr
}

// openSealedGrant authenticates <API_KEY>:<sealed grant> for the purpose (a service key or a
// notice key); fail is the answer to a wrong API key or token.
func (a *authenticator) openSealedGrant(credential, purpose string, fail *httpapi.Error) (*grant, *httpapi.Error) {
	i := strings.LastIndexByte(credential, ':')
	if i <= 0 || i == len(credential)-1 {
		return nil, fail
	}
	if err := a.apiKey.Check(credential[:i]); err != nil {
		if err.Status == http.StatusUnauthorized {
			return nil, fail
		}
		return nil, err
	}
	payload, _, err := a.keyring.Open(purpose, credential[i+1:], a.now())
	var g grant
	if err == nil {
		err = json.Unmarshal(payload, &g)
	}
	if err != nil || g.PlatformID == "" {
		return nil, fail
	}
	return &g, nil
}

// serviceKey is the service key of the launch g came from: made on the first
// /api/idtoken this replica answers for the ltik, then the same while the opened ltik stays
// in this replica's cache (another replica, or this one after eviction, makes its own,
// as valid). It expires serviceKeyLifetime after the launch, not after the call. "" when
// the launch grants no service (for LTI 1.1, Basic Outcomes count) or the lifetime is
// already over.
func (a *authenticator) serviceKey(g *grant) (string, error) {
	l := g.launch
	if l == nil { // not opened from an ltik: no launch to mint for
		return "", errors.New("toolmode: the grant holds no launch to make a service key for")
	}
	if l.ServiceKey != "" {
		return l.ServiceKey, nil
	}
	if !g.hasServices() && (l.LTIVersion == "" || g.OutcomeURL == "") {
		return "", nil
	}
	l.mint.Do(func() {
		lifetime := a.serviceKeyLifetime
		if lifetime <= 0 {
			lifetime = defaultServiceKeyLifetime
		}
		exp := l.issued.Add(lifetime)
		if exp.Sub(a.now()) < time.Second {
			return
		}
		sealed := *g
		sealed.PNSURL = g.pnsURL()
		b, err := json.Marshal(&sealed)
		if err != nil {
			l.mintErr = err
			return
		}
		l.serviceKey, l.mintErr = a.keyring.SealUntil(sessions.PurposeServiceKey, b, exp)
	})
	return l.serviceKey, l.mintErr
}

// noticeKey seals the grant of a notice: the registration, the deployment, and the service
// URLs the notice's claims name (grantFromClaims, as for a launch), for noticeKeyLifetime.
func (a *authenticator) noticeKey(p *registry.Platform, c *lti.Claims) (string, time.Time, error) {
	g := grantFromClaims(string(p.UID), &Launch{PlatformID: p.ID, PlatformUID: string(p.UID), DeploymentID: c.DeploymentID}, c)
	b, err := json.Marshal(g)
	if err != nil {
		return "", time.Time{}, err
	}
	lifetime := a.noticeKeyLifetime
	if lifetime <= 0 {
		lifetime = defaultNoticeKeyLifetime
	}
	expires := a.now().Add(lifetime)
	key, err := a.keyring.Seal(sessions.PurposeNoticeKey, b, lifetime)
	return key, expires, err
}

// platformOf is the grant's registration, while it is the one the launch came from, active
// and keyed; otherwise the launch is refused with 401.
func (a *authenticator) platformOf(g *grant) (*registry.Platform, *httpapi.Error) {
	p := a.registry.Get(g.PlatformID)
	if p == nil || string(p.UID) != g.PlatformUID || !p.Spec.IsActive() || p.Key == nil {
		return nil, httpapi.Errorf(http.StatusUnauthorized, lti.CodeUnregistered,
			"The platform of this launch is no longer registered or is inactive.")
	}
	return p, nil
}

// schemeFailure gives a 401 of the launch services the one code of the credential the
// caller used, as service interface §7 does for the ltik: INVALID_LTIK_AUTH_AUTHORIZATION_HEADER
// for an ltik or no usable scheme at all (g nil), INVALID_SERVICE_AUTH_AUTHORIZATION_HEADER
// for a service key, INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER for a notice key. The precise code (INVALID_AUTHORIZATION_SCHEME,
// UNREGISTERED_OR_INACTIVE_PLATFORM) moves to details.reason; other statuses pass unchanged.
func schemeFailure(e *httpapi.Error, g *grant) *httpapi.Error {
	if e == nil || e.Status != http.StatusUnauthorized {
		return e
	}
	code := CodeInvalidLtikAuth
	switch {
	case g != nil && g.notice:
		code = CodeInvalidNoticeKeyAuth
	case g != nil && g.launch == nil:
		code = CodeInvalidServiceAuth
	}
	if e.Code == code {
		return e
	}
	out := *e
	out.Code, out.Reason = code, e.Code
	return &out
}

// ltikCacheSize bounds the opened ltiks a replica keeps (each holds a launch's claims).
const ltikCacheSize = 1024

// ltikCache remembers recently opened ltiks: an integrator calls several endpoints per
// launch, and opening (decrypt, inflate, parse) costs more than the rest of a request.
// Keyed by the SHA-256 of the whole token, so only the exact same ltik hits; entries
// expire with the ltik. Eviction is first-in first-out.
type ltikCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]cachedLaunch
	order   [][sha256.Size]byte // ring of keys, oldest at next
	next    int
}

type cachedLaunch struct {
	launch  *openedLaunch
	expires time.Time
	keyID   string // the sealing key that opened the ltik
}

func newLtikCache() *ltikCache {
	return &ltikCache{entries: make(map[[sha256.Size]byte]cachedLaunch, ltikCacheSize),
		order: make([][sha256.Size]byte, 0, ltikCacheSize)}
}

// get returns the launch of ltik if it was opened before, has not expired at now, and the
// key that opened it is still held (holds): retiring or removing a sealing key revokes its
// ltiks at once, cached or not.
func (c *ltikCache) get(ltik string, now time.Time, holds func(kid string) bool) (*openedLaunch, bool) {
	k := sha256.Sum256([]byte(ltik))
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) || !holds(e.keyID) {
		return nil, false
	}
	return e.launch, true
}

func (c *ltikCache) put(ltik string, l *openedLaunch, expires time.Time, keyID string) {
	k := sha256.Sum256([]byte(ltik))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	if len(c.order) < ltikCacheSize {
		c.order = append(c.order, k)
	} else {
		delete(c.entries, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % ltikCacheSize
	}
	c.entries[k] = cachedLaunch{launch: l, expires: expires, keyID: keyID}
}

// authenticator is t's, or nil for a nil Tool (a router built without tool mode, as its
// tests do): the guards are built when the routes are, and check only when called.
func (t *Tool) authenticator() *authenticator {
	if t == nil {
		return nil
	}
	return t.auth
}
