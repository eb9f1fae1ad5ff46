// Package toolsim is a small simulated LTI 1.3 tool for tests and the demo: the other side
// of ltiop's platform mode. It has its own RSA key and JWKS, answers OIDC login initiations
// with an authentication request (lti-conformance.md §1.1–1.2), validates the id_token the
// platform posts back as a careful tool does (§1.3–1.5), and records every launch, good or
// bad. For tests that drive the protocol by hand it also signs client assertions (§2),
// requests access tokens and builds deep-linking responses (§5).
//
// It is written independently of ltiop's platform code (nothing under webserver/), so that
// it checks ltiop rather than agreeing with it by construction.
package toolsim

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/ltiop/ltiop/internal/keys"
)

// Config is what the tool knows of the platform, and of its own registration there.
type Config struct {
	// ClientID is required for logins and launches. DeploymentID, when empty, makes the
	// tool accept any non-empty deployment_id (and any lti_deployment_id at login).
	ClientID, DeploymentID string
	// Issuer is the platform issuer (iss of the id_token, aud of the tool's JWTs).
	Issuer string
	// AuthorizationEndpoint, TokenEndpoint and PlatformJWKSURL are the platform's URLs.
	AuthorizationEndpoint, TokenEndpoint, PlatformJWKSURL string
	// RedirectURI, when set, is the redirect_uri of the authentication requests /login
	// sends; otherwise it is <scheme>://<Host of the login request>/launch.
	RedirectURI string
	// HTTPClient fetches the platform JWKS and posts token requests; nil means a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// RequiredCustom are custom parameters a resource-link launch must carry with a
	// non-empty value that is not a substitution variable left as written, as Moodle's
	// "Publish as LTI tool" requires id=<published resource uuid>.
	RequiredCustom []string
}

// Paths served by Handler.
const (
	JWKSPath           = "/jwks"
	LoginPath          = "/login"
	LaunchPath         = "/launch"
	DeepLinkLaunchPath = "/deeplink-launch"
)

const (
	stateTTL  = 10 * time.Minute // T-STATE-03
	maxStates = 10000
	maxBody   = 1 << 20
)

// Tool is one simulated tool. It is safe for concurrent use.
type Tool struct {
	key     *rsa.PrivateKey
	kid     string
	jwks    []byte
	pubJWK  string
	pubPEM  string
	defHTTP *http.Client

	mu       sync.Mutex
	cfg      Config
	pending  map[string]pendingLogin // state → the login it was issued for
	used     map[string]time.Time    // nonces of id_tokens already accepted → when
	launches []Launch
	changed  chan struct{} // closed and replaced whenever a launch is recorded

	keyMu      sync.Mutex // guards the platform key cache; never held with mu
	platformKS jwk.Set
	platformKU string // the URL platformKS was fetched from
}

// pendingLogin is what the tool remembers of a login initiation until the launch.
type pendingLogin struct {
	nonce         string
	targetLinkURI string
	deploymentID  string // lti_deployment_id of the login, if any
	redirectURI   string
	created       time.Time
}

// New returns a tool with a fresh RSA-2048 key whose kid is its RFC 7638 thumbprint.
func New(cfg Config) (*Tool, error) {
	key, err := keys.Generate()
	if err != nil {
		return nil, err
	}
	kid, err := keys.KID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	pub, err := keys.PublicJWK(&key.PublicKey, kid)
	if err != nil {
		return nil, err
	}
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		return nil, err
	}
	set, err := json.Marshal(map[string]any{"keys": []jwk.Key{pub}})
	if err != nil {
		return nil, err
	}
	pem, err := keys.PublicKeyPEM(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Tool{
		key: key, kid: kid, jwks: set, pubJWK: string(pubJSON), pubPEM: pem,
		defHTTP: &http.Client{Timeout: 10 * time.Second},
		cfg:     cfg,
		pending: map[string]pendingLogin{}, used: map[string]time.Time{},
		changed: make(chan struct{}),
	}, nil
}

// SetConfig replaces the configuration (the client id, for one, is only known once the
// platform registered the tool). Logins already initiated keep working.
func (t *Tool) SetConfig(cfg Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg = cfg
}

// Config returns the current configuration.
func (t *Tool) Config() Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cfg
}

func (t *Tool) httpClient(cfg Config) *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	return t.defHTTP
}

// KID is the key id of the tool's signing key.
func (t *Tool) KID() string { return t.kid }

// JWKS returns the tool's key set: {"keys":[the public JWK with kid, alg RS256, use sig]}.
func (t *Tool) JWKS() []byte { return append([]byte(nil), t.jwks...) }

// PublicKeyPEM returns the tool's public key as a PKIX PEM block.
func (t *Tool) PublicKeyPEM() string { return t.pubPEM }

// PublicJWK returns the tool's public key as one JWK (JSON).
func (t *Tool) PublicJWK() string { return t.pubJWK }

// Handler serves the tool's endpoints: GET JWKSPath, GET|POST LoginPath, and the redirect
// URIs POST LaunchPath and POST DeepLinkLaunchPath (both accept either message type).
func (t *Tool) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+JWKSPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(t.jwks)
	})
	mux.HandleFunc("GET "+LoginPath, t.login)
	mux.HandleFunc("POST "+LoginPath, t.login)
	mux.HandleFunc("POST "+LaunchPath, t.launch)
	mux.HandleFunc("POST "+DeepLinkLaunchPath, t.launch)
	return mux
}

// login is the OIDC login initiation (§1.1): it answers with a 302 to the platform's
// authorization endpoint carrying the authentication request (§1.2).
func (t *Tool) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "unreadable login request", http.StatusBadRequest)
		return
	}
	cfg := t.Config()
	redirectURI := cfg.RedirectURI
	if redirectURI == "" {
		redirectURI = requestBase(r) + LaunchPath
	}
	params, err := t.authorizationParams(cfg, r.Form, redirectURI)
	if err != nil {
		http.Error(w, "login refused: "+err.Error(), http.StatusBadRequest)
		return
	}
	to, err := withQuery(cfg.AuthorizationEndpoint, params)
	if err != nil {
		http.Error(w, "the tool has no usable authorization endpoint: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

// AuthorizationParams returns the parameters the tool would send for a login initiation
// (with fresh state and nonce, remembered as /login does). redirectURI "" means
// Config.RedirectURI.
func (t *Tool) AuthorizationParams(login url.Values, redirectURI string) (url.Values, error) {
	cfg := t.Config()
	if redirectURI == "" {
		redirectURI = cfg.RedirectURI
	}
	if redirectURI == "" {
		return nil, errors.New("no redirect URI: pass one or set Config.RedirectURI")
	}
	return t.authorizationParams(cfg, login, redirectURI)
}

func (t *Tool) authorizationParams(cfg Config, login url.Values, redirectURI string) (url.Values, error) {
	if cfg.ClientID == "" || cfg.Issuer == "" || cfg.AuthorizationEndpoint == "" {
		return nil, errors.New("the tool is not configured yet (client id, issuer, authorization endpoint)")
	}
	for _, name := range []string{"iss", "login_hint", "target_link_uri", "lti_message_hint"} {
		if login.Get(name) == "" {
			return nil, fmt.Errorf("%s is required", name)
		}
	}
	if iss := login.Get("iss"); iss != cfg.Issuer {
		return nil, fmt.Errorf("unknown issuer %q", iss)
	}
	if c := login.Get("client_id"); c != "" && c != cfg.ClientID {
		return nil, fmt.Errorf("unknown client_id %q", c)
	}
	dep := login.Get("lti_deployment_id")
	if dep != "" && cfg.DeploymentID != "" && dep != cfg.DeploymentID {
		return nil, fmt.Errorf("unknown lti_deployment_id %q", dep)
	}
	target := login.Get("target_link_uri")
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target_link_uri %q is not an absolute http(s) URL", target)
	}
	state, nonce := randomToken(), randomToken()
	now := time.Now()
	t.mu.Lock()
	for s, p := range t.pending {
		if now.Sub(p.created) > stateTTL {
			delete(t.pending, s)
		}
	}
	if len(t.pending) >= maxStates {
		t.mu.Unlock()
		return nil, errors.New("too many logins in progress")
	}
	t.pending[state] = pendingLogin{
		nonce: nonce, targetLinkURI: target, deploymentID: dep, redirectURI: redirectURI, created: now,
	}
	t.mu.Unlock()
	return url.Values{
		"scope":            {"openid"},
		"response_type":    {"id_token"},
		"response_mode":    {"form_post"},
		"prompt":           {"none"},
		"client_id":        {cfg.ClientID},
		"redirect_uri":     {redirectURI},
		"login_hint":       {login.Get("login_hint")},
		"lti_message_hint": {login.Get("lti_message_hint")},
		"state":            {state},
		"nonce":            {nonce},
	}, nil
}

// takeState removes state from the logins in progress and returns its login: a state is
// good for one launch attempt only (T-STATE-03).
func (t *Tool) takeState(state string) (pendingLogin, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pending[state]
	if !ok {
		return p, false
	}
	delete(t.pending, state)
	if time.Since(p.created) > stateTTL {
		return p, false
	}
	return p, true
}

// requestBase is the scheme and host the request was addressed to.
func requestBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

// withQuery adds params to the query of base, keeping the query base already has.
func withQuery(base string, params url.Values) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute URL", base)
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// randomToken returns 256 random bits, base64url-encoded (T-AUTHREQ-02).
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// trim shortens s for error messages.
func trim(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
