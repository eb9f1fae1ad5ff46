package toolmode

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Codes of the service endpoints.
const (
	CodeInvalidServiceAuth  = "INVALID_SERVICE_AUTH_AUTHORIZATION_HEADER"
	CodeServiceNotAvailable = "SERVICE_NOT_AVAILABLE_FOR_CONTEXT"
)

// defaultServiceKeyLifetime bounds a service key: a captured key must not open the LMS's
// rosters and grades for years. Each launch in a course gives a fresh one.
const defaultServiceKeyLifetime = 90 * 24 * time.Hour

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
	launch *Launch
	claims *lti.Claims
	// notice: opened from a notice key (its 401s carry the notice key's code).
	notice bool
}

func grantFromClaims(platformUID string, l *Launch, c *lti.Claims) *grant {
	g := &grant{PlatformID: l.PlatformID, PlatformUID: platformUID, DeploymentID: l.DeploymentID, launch: l, claims: c}
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

type grantKey struct{}

func grantFrom(ctx context.Context) *grant {
	g, _ := ctx.Value(grantKey{}).(*grant)
	return g
}

// RequireService admits LTIK-AUTH-V2 (and V1) or SERVICE-AUTH-V1 <API_KEY>:<serviceKey>,
// and refuses everything else, Bearer included. The registration must still exist, be the
// one the launch came from, and be active.
func (t *Tool) RequireService(next http.Handler) http.Handler {
	return t.requireGrant(next, true)
}

func (t *Tool) requireGrant(next http.Handler, allowServiceKey bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
		var g *grant
		var herr *httpapi.Error
		switch {
		case strings.EqualFold(scheme, "SERVICE-AUTH-V1") && allowServiceKey:
			g, herr = t.openServiceKey(strings.TrimSpace(rest))
		case strings.EqualFold(scheme, "NOTICE-AUTH-V1") && allowServiceKey:
			g, herr = t.openNoticeKey(strings.TrimSpace(rest))
		case strings.EqualFold(scheme, "LTIK-AUTH-V2"), strings.EqualFold(scheme, "LTIK-AUTH-V1"):
			g, herr = t.openLtik(h)
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
		if _, herr := t.platformOf(g); herr != nil {
			httpapi.WriteError(w, schemeFailure(herr, g))
			return
		}
		ctx := context.WithValue(r.Context(), grantKey{}, g)
		if g.launch != nil {
			ctx = context.WithValue(ctx, launchKey{}, g.launch)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// openLtik authenticates an LTIK header and derives the launch's grant.
func (t *Tool) openLtik(header string) (*grant, *httpapi.Error) {
	apiKey, ltik, ok := parseLtikAuth(header)
	if !ok {
		return nil, invalidLtikAuth("The Authorization header must be LTIK-AUTH-V2 <API_KEY>:<ltik>.")
	}
	if err := t.apiKey.Check(apiKey); err != nil {
		if err.Status == http.StatusUnauthorized {
			err = invalidLtikAuth("The API key or the ltik is invalid, or the ltik has expired.")
		}
		return nil, err
	}
	now := t.now()
	if launch, claims, ok := t.ltiks.get(ltik, now, t.keyring.Holds); ok {
		return grantFromClaims(launch.PlatformUID, launch, claims), nil
	}
	opened, err := t.keyring.OpenToken(sessions.PurposeLTIK, ltik, now)
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
	launch.issued = opened.IssuedAt
	t.ltiks.put(ltik, launch, claims, opened.Expires, opened.KeyID)
	return grantFromClaims(launch.PlatformUID, launch, claims), nil
}

func (t *Tool) openServiceKey(credential string) (*grant, *httpapi.Error) {
	return t.openSealedGrant(credential, sessions.PurposeServiceKey,
		httpapi.Errorf(http.StatusUnauthorized, CodeInvalidServiceAuth, "The API key or the service key is invalid."))
}

// openSealedGrant authenticates <API_KEY>:<sealed grant> for the purpose (a service key or a
// notice key); fail is the answer to a wrong API key or token.
func (t *Tool) openSealedGrant(credential, purpose string, fail *httpapi.Error) (*grant, *httpapi.Error) {
	i := strings.LastIndexByte(credential, ':')
	if i <= 0 || i == len(credential)-1 {
		return nil, fail
	}
	if err := t.apiKey.Check(credential[:i]); err != nil {
		if err.Status == http.StatusUnauthorized {
			return nil, fail
		}
		return nil, err
	}
	payload, _, err := t.keyring.Open(purpose, credential[i+1:], t.now())
	var g grant
	if err == nil {
		err = json.Unmarshal(payload, &g)
	}
	if err != nil || g.PlatformID == "" {
		return nil, fail
	}
	return &g, nil
}

// mintedKey is the service key one replica made for one launch, made at most once.
type mintedKey struct {
	once sync.Once
	key  string
	err  error
}

// serviceKeyFor is the service key of the launch g came from: made on the first
// /api/idtoken this replica answers for the ltik, then the same while the opened ltik stays
// in this replica's cache (another replica, or this one after eviction, makes its own,
// as valid). It expires ServiceKeyLifetime after the
// launch, not after the call. "" when the launch grants no service (for LTI 1.1, Basic
// Outcomes count) or the lifetime is already over.
func (t *Tool) serviceKeyFor(l *Launch, g *grant) (string, error) {
	if l.ServiceKey != "" {
		return l.ServiceKey, nil
	}
	if !g.hasServices() && (l.LTIVersion == "" || g.OutcomeURL == "") {
		return "", nil
	}
	if l.minted == nil { // a Launch that decodeLaunch did not make: nowhere to keep the key
		return "", errors.New("toolmode: the launch cannot hold a service key")
	}
	l.minted.once.Do(func() {
		lifetime := t.opts.ServiceKeyLifetime
		if lifetime <= 0 {
			lifetime = defaultServiceKeyLifetime
		}
		exp := l.issued.Add(lifetime)
		if exp.Sub(t.now()) < time.Second {
			return
		}
		sealed := *g
		sealed.PNSURL = g.pnsURL()
		b, err := json.Marshal(&sealed)
		if err != nil {
			l.minted.err = err
			return
		}
		l.minted.key, l.minted.err = t.keyring.SealUntil(sessions.PurposeServiceKey, b, exp)
	})
	return l.minted.key, l.minted.err
}

// credentials are the tool's client credentials toward the grant's platform. The
// registration is read again: one deleted, replaced or deactivated since the request was
// admitted answers 401, as it would have at admission.
func (t *Tool) credentials(g *grant) (advantage.Credentials, *registry.Platform, *httpapi.Error) {
	p, herr := t.platformOf(g)
	if herr != nil {
		return advantage.Credentials{}, nil, schemeFailure(herr, g)
	}
	var urls []string
	for _, u := range []string{g.LineItemsURL, g.LineItemURL, g.MembershipsURL} {
		if u != "" {
			urls = append(urls, u)
		}
	}
	return advantage.Credentials{
		PlatformID:   p.ID,
		ClientID:     p.Spec.ClientID,
		TokenURL:     string(p.Spec.AccesstokenEndpoint),
		Audience:     p.Spec.TokenAudience(),
		DeploymentID: g.DeploymentID,
		KID:          p.Key.KID,
		Key:          p.Key,
		// The client refuses scopes the launch did not grant (T-AGS-02) and item ids off
		// the launch's service hosts: the token goes nowhere else.
		LaunchScopes: advantage.GrantedScopes(g.AGSScopes, g.MembershipsURL != "", g.impliedScopes()...),
		ServiceURLs:  urls,
	}, p, nil
}

// platformOf is the grant's registration, while it is the one the launch came from, active
// and keyed; otherwise the launch is refused with 401.
func (t *Tool) platformOf(g *grant) (*registry.Platform, *httpapi.Error) {
	p := t.registry.Get(g.PlatformID)
	if p == nil || string(p.UID) != g.PlatformUID || !p.Spec.IsActive() || p.Key == nil {
		return nil, httpapi.Errorf(http.StatusUnauthorized, lti.CodeUnregistered,
			"The platform of this launch is no longer registered or is inactive.")
	}
	return p, nil
}

func notAvailable(description string) *httpapi.Error {
	return httpapi.Errorf(http.StatusForbidden, CodeServiceNotAvailable, description)
}

// upstreamError turns a failed LMS call into the envelope (issue: details.externalError).
func upstreamError(err error) *httpapi.Error {
	var up *advantage.UpstreamError
	switch {
	case errors.Is(err, advantage.ErrURLRefused):
		// The platform's URL (or its redirect) points inside the network: its cause is
		// logged, never echoed (it names addresses).
		return &httpapi.Error{Status: http.StatusBadGateway, Code: httpapi.CodeURLNotAllowed,
			Description: "The platform's service or token URL, or a redirect it answered with, leads where ltiop does not connect (a loopback, private or cloud metadata address, plain http, or another host for a call carrying the token). Nothing was sent there.",
			Upstream:    &httpapi.Upstream{}, Cause: err}
	case errors.Is(err, advantage.ErrForeignURL):
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
			"The URL is not on the platform's service host; only URLs the platform gave can be used.")
	case errors.Is(err, advantage.ErrScopeNotGranted):
		return notAvailable("The platform did not grant the scope this needs.")
	case errors.As(err, &up) && up.Timeout:
		return &httpapi.Error{Status: http.StatusGatewayTimeout, Code: httpapi.CodeUpstreamTimeout,
			Description: "The platform did not answer in time.", Upstream: &httpapi.Upstream{}}
	case errors.As(err, &up):
		status := up.Status
		if status < 400 || status >= 500 || status == http.StatusUnauthorized || status == http.StatusForbidden {
			status = http.StatusBadGateway // the integrator's own credentials were fine
		}
		return &httpapi.Error{Status: status, Code: httpapi.CodeUpstream,
			Description: "The platform refused the request.", Upstream: &httpapi.Upstream{Status: up.Status, Body: up.Body}}
	default:
		return &httpapi.Error{Status: http.StatusBadGateway, Code: httpapi.CodeUpstream,
			Description: "The platform could not be reached.", Upstream: &httpapi.Upstream{}}
	}
}
