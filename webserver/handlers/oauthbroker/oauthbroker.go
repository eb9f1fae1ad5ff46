// Package oauthbroker is an OAuth2 authorization-code broker for an LMS's own REST API
// (Canvas API, Brightspace Valence): the integrator sends the user's browser to
// /oauth/start/{platformId}, ltiop runs the authorization-code flow with PKCE against the
// LMS, and the browser comes back to the integrator's return URL with a one-time code that
// the integrator trades, with its API key, for the LMS access token and a refresh token.
//
// ltiop keeps no per-user state: the flow's state, the one-time code and the refresh token
// handed to the integrator are all sealed with the sessions keyring (purposes oauth-state,
// oauth-code and oauth-refresh). The state is bound to the browser that started the flow
// by a cookie, as the LTI login state is; the state and the one-time code are single use.
package oauthbroker

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Paths of the broker's endpoints. The router must name the path wildcard platformId:
//
//	GET  /oauth/start/{platformId}
//	GET  /oauth/callback
//	POST /api/oauth/access-token/{platformId}          (Bearer API key)
//	POST /api/oauth/access-token/{platformId}/refresh  (Bearer API key)
const (
	StartPathPrefix = "/oauth/start/"
	CallbackPath    = "/oauth/callback"
	// CookiePath scopes the browser-binding cookie to the browser-facing endpoints.
	CookiePath = "/oauth/"
	// PathValue is the name of the path wildcard holding the platform ID.
	PathValue = "platformId"
)

// Sealing purposes.
const (
	PurposeState   = "oauth-state"
	PurposeCode    = "oauth-code"
	PurposeRefresh = "oauth-refresh"
)

// Lifetimes.
const (
	stateTTL   = 10 * time.Minute
	codeTTL    = 5 * time.Minute
	refreshTTL = 365 * 24 * time.Hour
)

// Limits.
const (
	maxTokenResponse = 64 << 10 // body of the LMS's token endpoint
	maxScopeLength   = 2048     // requested scope, kept in the sealed state
	maxLMSErrorText  = 512      // error and error_description shown or passed on
	defaultTimeout   = 10 * time.Second
)

// Stable error codes of the broker (details.message).
const (
	CodePlatformInactive        = "PLATFORM_INACTIVE"
	CodeNotConfigured           = "OAUTH2_NOT_CONFIGURED"
	CodeReturnURLNotConfigured  = "OAUTH2_RETURN_URL_NOT_CONFIGURED"
	CodeInvalidReturnURL        = "INVALID_RETURN_URL"
	CodeInvalidScope            = "INVALID_SCOPE"
	CodeInvalidState            = "INVALID_STATE"
	CodeStateExpired            = "STATE_EXPIRED"
	CodeStateReused             = "STATE_ALREADY_USED"
	CodeBrowserBinding          = "BROWSER_BINDING_FAILED"
	CodeMissingCode             = "MISSING_CODE"
	CodeExchangeFailed          = "OAUTH2_EXCHANGE_FAILED"
	CodeInvalidCode             = "INVALID_CODE"
	CodeCodeExpired             = "CODE_EXPIRED"
	CodeCodeReused              = "CODE_ALREADY_USED"
	CodeInvalidRefreshToken     = "INVALID_REFRESH_TOKEN"
	descriptionPlatformNotFound = "No platform is registered with this ID."
)

// ClientConfig is one platform's OAuth2 client (from a Secret the operator resolves).
type ClientConfig struct {
	ClientID     string
	ClientSecret string // empty: a public client (no client_secret is sent)
	AuthorizeURL string
	TokenURL     string
	Scopes       []string // requested when the start request names none
}

// Resolver returns the OAuth2 client of a registration, or an error: ErrNotConfigured
// (possibly wrapped) when the registration has none or it is incomplete.
type Resolver func(ctx context.Context, p *registry.Platform) (*ClientConfig, error)

// ErrNotConfigured means a registration has no usable OAuth2 client.
var ErrNotConfigured = errors.New("oauthbroker: OAuth2 is not configured for this platform")

// Options configure the broker.
type Options struct {
	// PublicURL is ltiop's external base URL; redirect_uri is PublicURL + "/oauth/callback".
	PublicURL string
	// ReturnURL is the integrator's OAuth return URL: where the browser goes with the
	// one-time code (or the LMS's error) unless the start request names another.
	ReturnURL string
	// AllowedReturnURLs are other return URLs a start request may name. A requested URL is
	// accepted when its scheme, host and path equal those of one of these (or ReturnURL);
	// it may carry its own query, which is kept.
	AllowedReturnURLs []string
	// DevMode allows cookies without Secure when PublicURL is plain http.
	DevMode bool
	// HTTPClient calls the LMS token endpoint: one from outbound.NewClient, so that a token
	// URL cannot reach inside the network. nil: the production policy (https, public
	// addresses only), 10 s. The broker never follows redirects of the token endpoint (the
	// client secret would follow).
	HTTPClient *http.Client
}

// Broker serves the OAuth2 broker endpoints. It is safe for concurrent use.
type Broker struct {
	opts        Options
	callbackURL string
	registry    *registry.Registry
	resolve     Resolver
	keyring     *sessions.Keyring
	replay      replay.Store
	hc          *http.Client
	// now is the clock of every check (nil: time.Now); tests replace it.
	now func() time.Time
}

// New returns the broker. replays records the single use of states and one-time codes.
func New(opts Options, reg *registry.Registry, resolve Resolver, keyring *sessions.Keyring, replays replay.Store) *Broker {
	var hc http.Client
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	} else {
		hc = *outbound.NewClient(outbound.Policy{Timeout: defaultTimeout, Target: outbound.TargetOAuth})
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Broker{
		opts:        opts,
		callbackURL: strings.TrimRight(opts.PublicURL, "/") + CallbackPath,
		registry:    reg,
		resolve:     resolve,
		keyring:     keyring,
		replay:      replays,
		hc:          &hc,
	}
}

func (b *Broker) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// platform returns the active registration named by the request path.
func (b *Broker) platform(r *http.Request) (*registry.Platform, *httpapi.Error) {
	p := b.registry.Get(r.PathValue(PathValue))
	if p == nil {
		return nil, httpapi.Errorf(http.StatusNotFound, httpapi.CodePlatformNotFound, descriptionPlatformNotFound)
	}
	if !p.Spec.IsActive() {
		return nil, httpapi.Errorf(http.StatusForbidden, CodePlatformInactive, "The platform registration is inactive.")
	}
	return p, nil
}

// client resolves and checks the platform's OAuth2 client.
func (b *Broker) client(ctx context.Context, p *registry.Platform) (*ClientConfig, *httpapi.Error) {
	notConfigured := httpapi.Errorf(http.StatusConflict, CodeNotConfigured,
		"The platform registration has no OAuth2 client configured: reference a Secret with the LMS's "+
			"OAuth2 client ID and secret (Canvas developer key, Brightspace OAuth2 app) in spec.oauth2.")
	if b.resolve == nil {
		return nil, notConfigured
	}
	cc, err := b.resolve(ctx, p)
	switch {
	case errors.Is(err, ErrNotConfigured):
		return nil, notConfigured
	case err != nil:
		log.FromContext(ctx).Error(err, "resolving the OAuth2 client", "platform", p.ID)
		return nil, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady,
			"The platform's OAuth2 client could not be read; try again.")
	case cc == nil || cc.ClientID == "" || !absoluteHTTP(cc.AuthorizeURL) || !absoluteHTTP(cc.TokenURL):
		return nil, notConfigured
	}
	return cc, nil
}

// secureCookies says whether the binding cookie can be Secure.
func (b *Broker) secureCookies() bool {
	return strings.HasPrefix(b.opts.PublicURL, "https://") || !b.opts.DevMode
}

func bindingCookie(stateID string) string { return "ltiop_oauth_" + stateID }

// fail answers a failed browser request: the error envelope when the client asks for
// JSON, else a small error page. Never a redirect.
func (b *Broker) fail(w http.ResponseWriter, r *http.Request, e *httpapi.Error) {
	log.FromContext(r.Context()).Info("oauth2 flow refused", "path", r.URL.Path, "status", e.Status, "code", e.Code)
	httpapi.WriteErrorPage(w, r, e, "The authorization could not be completed")
}

// noStore marks a redirect carrying a state or a code as neither cacheable nor to be
// sent on as a Referer.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

var randomToken = httpapi.RandomToken

// clip keeps at most n bytes of s, as valid UTF-8 without control characters.
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	s = strings.ToValidUTF8(s, "")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func userAgent() string { return version.UserAgent() }
