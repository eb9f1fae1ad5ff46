// Package platformmode serves platform mode: the integrator is a learning platform and
// ltiop does its LTI 1.3 platform work towards external tools — launch parameters with a
// sealed lti_message_hint, the OIDC authorization endpoint, id_token minting, the
// deep-linking return, and the token endpoint for the tools' service calls.
//
// The protocol checks are package ltiplatform's; this package adds HTTP, the tool
// registry, the keys and the replay store.
package platformmode

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Lifetimes and windows (service-interface §8 where it says).
const (
	MessageHintTTL = time.Hour        // lti_message_hint
	NonceWindow    = 30 * time.Second // DUPLICATE_NONCE
	PayloadTTL     = 5 * time.Minute  // ?payload= of the authorization endpoint
	IDTokenTTL     = 5 * time.Minute  // the id_token is posted by the browser at once
	DeepLinkTTL    = 2 * time.Hour    // a deep-linking session (the user picks content)
	ResultTTL      = 10 * time.Minute // ?payload= of the deep-linking return
	AccessTokenTTL = time.Hour        // SEC §4.1: expires_in 3600 recommended
)

// Stable error codes of the platform-mode API (details.message).
const (
	CodeToolNotFound       = "TOOL_NOT_FOUND"
	CodeToolInactive       = "TOOL_INACTIVE"
	CodeNotConfigured      = "PLATFORM_MODE_NOT_CONFIGURED"
	CodeInvalidPayload     = "INVALID_PAYLOAD"
	CodePayloadExpired     = "PAYLOAD_EXPIRED"
	CodePayloadUsed        = "PAYLOAD_ALREADY_USED"
	CodeInvalidReturnState = "INVALID_DEEP_LINKING_RETURN"
	CodeDuplicateDLNonce   = "DUPLICATE_NONCE"
)

// Signer signs with the platform key and verifies what it signed (signing.Keyring).
type Signer interface {
	SignAt(now time.Time, typ string, claims []byte) (string, error)
	// Verify checks a token it signed with typ and returns its payload (iss, aud and exp
	// are the caller's to check).
	Verify(token, typ string) ([]byte, error)
	// PublicKey is the public key of kid while the signer holds it, else nil: a token
	// verified before counts only while the key that signed it is held.
	PublicKey(kid string) *rsa.PublicKey
	JWKS() []byte
	Ready() bool
}

// Options configure platform mode.
type Options struct {
	// PublicURL is ltiop's external base URL; Issuer the platform issuer (iss of id_tokens).
	PublicURL, Issuer string
	// LaunchURL, DeepLinkingURL and DeepLinkingReturnURL are the integrator's pages.
	LaunchURL, DeepLinkingURL, DeepLinkingReturnURL string
	DevMode                                         bool
	ClockSkew                                       time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// DataURL is the base URL of the integrator's platform data API (a ToolRegistration's
	// spec.platformDataUrl overrides it); empty: ltiop serves no NRPS or AGS data.
	DataURL string
	// ServiceGrantTTL is how long service URLs open (DefaultServiceGrantTTL when 0).
	ServiceGrantTTL time.Duration
}

// Platform serves the platform-mode endpoints.
type Platform struct {
	opts    Options
	tools   *registry.Tools
	keys    *registry.PeerKeys
	signer  Signer
	sealer  *sessions.Keyring
	replays replay.Store
	// data calls the integrator's platform data API (SetData).
	data *platformdata.Client
	// tokenAudiences are the aud values a client assertion may carry (P-TOK-05).
	tokenAudiences []string
	// verified are the access tokens this replica verified (tokencache.go).
	verified verifiedTokens
	// health learns how each tool's requests go (SetHealth); nil: nobody.
	health LaunchHealth
}

// LaunchHealth learns how each tool's launches, token requests and deep-linking responses
// go (launchhealth.ToolRecorder). It must not block: it is called on the request path.
type LaunchHealth interface {
	Launched(t *registry.Tool)
	Refused(t *registry.Tool, step launchhealth.Step, code, rule string)
}

// New builds platform mode.
func New(opts Options, tools *registry.Tools, keys *registry.PeerKeys, signer Signer, sealer *sessions.Keyring, replays replay.Store) *Platform {
	if opts.Issuer == "" {
		opts.Issuer = opts.PublicURL
	}
	return &Platform{
		opts: opts, tools: tools, keys: keys, signer: signer, sealer: sealer, replays: replays,
		tokenAudiences: []string{opts.PublicURL + paths.PlatformToken, opts.Issuer},
	}
}

// SetData sets the client of the integrator's platform data API; without one the NRPS
// and AGS endpoints answer 503 PLATFORM_DATA_NOT_CONFIGURED.
func (p *Platform) SetData(c *platformdata.Client) *Platform {
	p.data = c
	return p
}

// SetHealth sets what learns how each tool's requests go: the ToolRegistration's status
// and Events then tell its administrator.
func (p *Platform) SetHealth(h LaunchHealth) *Platform {
	p.health = h
	return p
}

// refused tells launch health that a request of t (nil: of no known tool) was refused.
func (p *Platform) refused(t *registry.Tool, step launchhealth.Step, e *httpapi.Error) {
	if p.health != nil && t != nil {
		p.health.Refused(t, step, e.Code, e.Rule)
	}
}

func (p *Platform) now() time.Time {
	if p.opts.Now != nil {
		return p.opts.Now()
	}
	return time.Now()
}

var requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ltiop_platform_requests_total",
	Help: "Platform-mode requests by endpoint and outcome (ok or the error code).",
}, []string{"endpoint", "outcome"})

func init() { metrics.Registry.MustRegister(requestsTotal) }

func count(endpoint, outcome string) { requestsTotal.WithLabelValues(endpoint, outcome).Inc() }

// JWKS serves the platform's public keys (the tools' PlatformJWKSURL).
func (p *Platform) JWKS(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("X-Content-Type-Options", "nosniff")
	// Tools cache key sets; a rotated key signs only after this has expired everywhere.
	h.Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(p.signer.JWKS())
}

// sign marshals claims and signs them with the current platform key.
func (p *Platform) sign(now time.Time, typ string, claims any) (string, *httpapi.Error) {
	b, err := json.Marshal(claims)
	if err != nil {
		return "", httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "A token could not be encoded.")
	}
	tok, err := p.signer.SignAt(now, typ, b)
	if err != nil {
		return "", httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The platform signing key is not loaded yet.")
	}
	return tok, nil
}

// usableTool finds an active, ready tool by ID for the integrator's API.
func (p *Platform) usableTool(id string) (*registry.Tool, *httpapi.Error) {
	t := p.tools.Get(id)
	if t == nil {
		return nil, httpapi.Errorf(http.StatusNotFound, CodeToolNotFound, "No tool registration is named "+strconv.Quote(id)+".")
	}
	if !t.Usable() {
		return nil, httpapi.Errorf(http.StatusForbidden, CodeToolInactive,
			"Tool "+strconv.Quote(id)+" is inactive or not ready (see its Ready condition).")
	}
	return t, nil
}

// keyFunc resolves the tool's public keys for the protocol checks.
func (p *Platform) keyFunc(t *registry.Tool) lti.KeyFunc {
	return func(ctx context.Context, kid string) (*rsa.PublicKey, error) { return p.keys.ToolKey(ctx, t, kid) }
}

// withQuery appends name=value to the query of base.
func withQuery(base, name, value string) string {
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + url.QueryEscape(name) + "=" + url.QueryEscape(value)
}
