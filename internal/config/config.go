// Package config reads ltiop's configuration from defaults, an optional YAML file, the
// environment (LTIOP_*) and flags, in that order of increasing precedence, and validates it.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/logging"
	"github.com/ltiop/ltiop/internal/urls"
)

// Config is everything ltiop needs to start. Field names double as YAML keys.
type Config struct {
	// Namespace is where registrations and ltiop's Secrets live; only it is watched.
	Namespace string `json:"namespace"`
	// PublicURL is the external base URL of the web server (what LMSs and browsers reach).
	PublicURL string `json:"publicUrl"`
	// Listen is the address of the web server (LTI endpoints, API, health).
	Listen string `json:"listen"`
	// MetricsListen is the address of the Prometheus metrics endpoint; "0" turns it off.
	MetricsListen string `json:"metricsListen"`
	// Pprof serves net/http/pprof under /debug/pprof/ on the metrics port (never the web
	// port): CPU and heap profiles of a running replica. Off by default.
	Pprof bool `json:"pprof"`
	// MetricsSecure serves the metrics over HTTPS (a self-signed certificate) to clients the
	// API server authenticates (TokenReview) and authorizes for "get /metrics"
	// (SubjectAccessReview).
	MetricsSecure bool `json:"metricsSecure"`
	// APIKeySecret names the Secret holding the integrator's API key, under APIKeySecretKey.
	APIKeySecret    string `json:"apiKeySecret"`
	APIKeySecretKey string `json:"apiKeySecretKey"`
	// LaunchURL and DeepLinkingURL are the integrator's pages launches are sent to.
	LaunchURL      string `json:"launchUrl"`
	DeepLinkingURL string `json:"deepLinkingUrl"`
	// SubmissionReviewURL receives submission review launches (LtiSubmissionReviewRequest);
	// empty sends them to LaunchURL.
	SubmissionReviewURL string `json:"submissionReviewUrl"`
	// MessageLaunchURLs and AssetProcessor: Asset Processor and EULA (assetprocessor.go).
	MessageLaunchURLs map[string]string `json:"messageLaunchUrls"`
	AssetProcessor    AssetProcessor    `json:"assetProcessor"`
	// Platform mode (ltiop launching external tools for the integrator): the issuer of the
	// id_tokens, and the integrator's pages the authorization endpoint sends launches to
	// (?payload=) and that receive the content items of deep-linking responses.
	PlatformIssuer               string `json:"platformIssuer"`
	PlatformLaunchURL            string `json:"platformLaunchUrl"`
	PlatformDeepLinkingURL       string `json:"platformDeepLinkingUrl"`
	PlatformDeepLinkingReturnURL string `json:"platformDeepLinkingReturnUrl"`
	// DevMode accepts plain http and loopback URLs, for local work only.
	DevMode bool `json:"devMode"`
	// LogLevel (debug, info, error) and LogFormat (json, console) shape the logs; dev mode
	// does not change them.
	LogLevel  string `json:"logLevel"`
	LogFormat string `json:"logFormat"`
	// LeaderElection makes replicas elect one to run the controllers; the web server runs on all.
	LeaderElection bool `json:"leaderElection"`
	// MaxBodyBytes bounds every request body.
	MaxBodyBytes int64 `json:"maxBodyBytes"`
	// KeyWait bounds how long POST /api/platforms waits for the new registration's key.
	KeyWait Duration `json:"keyWait"`
	// ReachabilityProbeInterval is how often the elected replica checks that each active
	// registration's key set and endpoints answer (the KeySetReachable and
	// EndpointsReachable conditions); 0 turns the probe off.
	ReachabilityProbeInterval Duration `json:"reachabilityProbeInterval"`
	// KeyWorkers is how many registrations the controller reconciles (and makes keys for)
	// at once; 0 means twice the cores, at most 16.
	KeyWorkers int64 `json:"keyWorkers"`
	// ClockSkew is the leeway on the exp and iat of incoming tokens.
	ClockSkew Duration `json:"clockSkew"`
	// ServiceSecret names the Secret the operator keeps the sealing keyring in.
	ServiceSecret string `json:"serviceSecret"`
	// PlatformKeyRotateEvery rotates the platform-mode signing key this often (0: only on
	// request, with the annotation lti.ltiop.dev/rotate-platform-key).
	PlatformKeyRotateEvery Duration `json:"platformKeyRotateEvery"`
	// ShutdownTimeout bounds the graceful shutdown of the web server.
	ShutdownTimeout Duration `json:"shutdownTimeout"`
	// ServiceKeyLifetime is how long a service key (SERVICE-AUTH-V1) opens after the launch
	// that made it; a newer launch in the course gives a newer key.
	ServiceKeyLifetime Duration `json:"serviceKeyLifetime"`
	// ShutdownDelay is how long, on SIGTERM, /readyz answers 503 while the web server still
	// serves, so load balancers stop sending requests before the listener closes.
	ShutdownDelay Duration `json:"shutdownDelay"`
	// Tool identity sent to platforms in dynamic registration and the Canvas configuration.
	ToolName           string `json:"toolName"`
	ToolDescription    string `json:"toolDescription"`
	ToolLogoURL        string `json:"toolLogoUrl"`
	CanvasPrivacyLevel string `json:"canvasPrivacyLevel"`
	// RegistrationAutoActivate makes dynamically registered platforms active at once.
	RegistrationAutoActivate bool `json:"registrationAutoActivate"`
	// PreApprovalURL, when set, sends dynamic registrations to the integrator for approval.
	PreApprovalURL string `json:"preApprovalUrl"`
	// DynamicRegistration bounds what /lti/register, reachable without a credential, may
	// write, and can require a registration token.
	DynamicRegistration DynamicRegistration `json:"dynamicRegistration"`
	// Notices configures the Platform Notification Service (notices.go).
	Notices Notices `json:"notices"`
	// PlatformData configures the integrator's platform data API (platformdata.go).
	PlatformData PlatformData `json:"platformData"`
	// OutboundAllowLoopback exempts loopback from the SSRF guard of every outbound call;
	// OutboundAllowCIDRs exempts ranges for the URLs of the operator's registrations (key
	// sets, tokens, NRPS, AGS, OAuth2, assets), not for the webhook, dynamic registration or
	// the registrations it wrote. Dev mode implies OutboundAllowLoopback.
	OutboundAllowLoopback bool     `json:"outboundAllowLoopback"`
	OutboundAllowCIDRs    []string `json:"outboundAllowCidrs"`
	// IntegratorAllowCIDRs are the private ranges of the calls to the integrator (the
	// notice webhook), apart from OutboundAllowCIDRs: an integrator in the cluster does not
	// open the cluster to the URLs LMSs hand ltiop.
	IntegratorAllowCIDRs []string `json:"integratorAllowCidrs"`
	// OAuthReturnURL is the integrator page the OAuth2 broker returns users to (?code=);
	// OAuthAllowedReturnURLs are others a start request may name.
	OAuthReturnURL         string   `json:"oauthReturnUrl"`
	OAuthAllowedReturnURLs []string `json:"oauthAllowedReturnUrls"`
	// Kubeconfig is the kubeconfig file to use outside a cluster (else KUBECONFIG or in-cluster).
	Kubeconfig string `json:"kubeconfig"`
	// ReplayStore is where single uses (states, nonces, codes…) are recorded: "memory" for
	// one replica, or redis://host:6379/0 (rediss:// for TLS) shared by all replicas.
	ReplayStore string `json:"replayStore"`
	// ReplayStorePasswordFile names a file holding the Redis password (a mounted Secret).
	ReplayStorePasswordFile string `json:"replayStorePasswordFile"`
	// ReplayStorePassword is the Redis password; only from the environment
	// (LTIOP_REPLAY_STORE_PASSWORD, e.g. from a secretKeyRef): never a flag or the file.
	ReplayStorePassword string `json:"-"`
	// ReplayStoreKeyPrefix starts every Redis key; empty means "ltiop:<namespace>:".
	ReplayStoreKeyPrefix string `json:"replayStoreKeyPrefix"`
	// ReplayStoreTimeout bounds one Redis attempt; a failed attempt is retried once.
	ReplayStoreTimeout Duration `json:"replayStoreTimeout"`
	// ReplayStoreSentinelMaster, when set, finds the Redis master through Redis Sentinel
	// under this name; ReplayStore then gives only the master's auth and database
	// (redis://[user@]/0) and its host is not used.
	ReplayStoreSentinelMaster string `json:"replayStoreSentinelMaster"`
	// ReplayStoreSentinelAddrs are the sentinels' host:port addresses.
	ReplayStoreSentinelAddrs []string `json:"replayStoreSentinelAddrs"`
	// ReplayStoreSentinelUsername authenticates to the sentinels, with the password from
	// LTIOP_REPLAY_STORE_SENTINEL_PASSWORD (environment only, like the Redis password).
	ReplayStoreSentinelUsername string `json:"replayStoreSentinelUsername"`
	ReplayStoreSentinelPassword string `json:"-"`
	// ReplayStoreWaitReplicas confirms each recorded use on that many Redis replicas (WAIT)
	// before it counts, so that a failover cannot forget it: auto (the default; 1 with
	// Sentinel, see ReplayWaitReplicas) or a number, 0 for off.
	ReplayStoreWaitReplicas WaitReplicas `json:"replayStoreWaitReplicas"`
	// RateLimits are the per-client-IP token buckets of the endpoints reachable without a
	// credential, per route group.
	RateLimits RateLimits `json:"rateLimits"`
	// TrustedProxies are the CIDR ranges (or addresses) of reverse proxies whose
	// X-Forwarded-For names the client; from anyone else the header is ignored.
	TrustedProxies []string `json:"trustedProxies"`
}

// DynamicRegistration are the limits of dynamic registration (docs/dynamic-registration.md).
type DynamicRegistration struct {
	// MaxPending is how many registrations written by /lti/register and never activated
	// may exist; past it /lti/register answers 429 and writes nothing.
	MaxPending int `json:"maxPending"`
	// PendingExpiry is how long such a registration is kept when never activated.
	PendingExpiry Duration `json:"pendingExpiry"`
	// RequireToken accepts registrations only at /lti/register/<token>, the token being
	// read from TokenSecret (data key TokenSecretKey).
	RequireToken   bool   `json:"requireToken"`
	TokenSecret    string `json:"tokenSecret"`
	TokenSecretKey string `json:"tokenSecretKey"`
	// AllowCIDRs are the private ranges /lti/register may fetch from (an on-premises LMS),
	// and the URLs of the registrations dynamic registration wrote (LMSs', tools') may
	// reach later: they come from an anonymous request (or a tool registering itself), so
	// outboundAllowCidrs does not apply.
	AllowCIDRs []string `json:"allowCidrs"`
}

// DefaultDynamicRegistration bounds dynamic registration without requiring a token.
func DefaultDynamicRegistration() DynamicRegistration {
	return DynamicRegistration{MaxPending: 50, PendingExpiry: Duration{7 * 24 * time.Hour},
		TokenSecret: "ltiop-registration-token", TokenSecretKey: "token"}
}

// RateLimit is one token bucket per client IP: Rate requests a second sustained, Burst at
// once. Rate 0 turns it off.
type RateLimit struct {
	Rate  float64 `json:"rate"`
	Burst int     `json:"burst"`
}

// RateLimits are the limits of each group of unauthenticated routes; routes of a group
// share a client's bucket.
type RateLimits struct {
	// Launch: /lti/login (GET, POST), /lti/launch, /lti/launch/complete.
	Launch RateLimit `json:"launch"`
	// Register: /lti/register (dynamic registration).
	Register RateLimit `json:"register"`
	// PlatformAuthorize: /lti/platform/authorize (GET, POST).
	PlatformAuthorize RateLimit `json:"platformAuthorize"`
	// PlatformToken: /lti/platform/token.
	PlatformToken RateLimit `json:"platformToken"`
	// OAuth: /oauth/start/{platformId}, /oauth/callback.
	OAuth RateLimit `json:"oauth"`
	// Notices: /lti/notices/{platformId}.
	Notices RateLimit `json:"notices"`
}

// DefaultRateLimits are sized so that a whole school behind one NAT address does not
// reach them in its busiest minute (see docs/configuration.md for the arithmetic), while
// one address can no longer flood an endpoint.
func DefaultRateLimits() RateLimits {
	return RateLimits{
		Launch:            RateLimit{Rate: 100, Burst: 2000},
		Register:          RateLimit{Rate: 1, Burst: 30},
		PlatformAuthorize: RateLimit{Rate: 50, Burst: 1000},
		PlatformToken:     RateLimit{Rate: 20, Burst: 400},
		OAuth:             RateLimit{Rate: 10, Burst: 400},
		Notices:           DefaultNoticeRateLimit,
	}
}

// Duration is a time.Duration written as "10s" in YAML and in the environment.
type Duration struct{ time.Duration }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // an empty YAML value keeps the default
	}
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration must be a string such as \"10s\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(d.String())), nil }

// Default returns the configuration used where nothing else is given.
func Default() Config {
	c := Config{
		Namespace:           inClusterNamespace(),
		Listen:              ":3000",
		MetricsListen:       ":8080",
		APIKeySecret:        "ltiop-api-key",
		APIKeySecretKey:     "apiKey",
		MaxBodyBytes:        1 << 20,
		KeyWait:             Duration{10 * time.Second},
		ClockSkew:           Duration{time.Minute},
		ServiceSecret:       ltiv1.DefaultServiceSecretName,
		ToolName:            "ltiop",
		CanvasPrivacyLevel:  "public",
		ShutdownTimeout:     Duration{15 * time.Second},
		ShutdownDelay:       Duration{5 * time.Second},
		ServiceKeyLifetime:  Duration{90 * 24 * time.Hour},
		ReplayStore:         "memory",
		ReplayStoreTimeout:  Duration{100 * time.Millisecond},
		RateLimits:          DefaultRateLimits(),
		DynamicRegistration: DefaultDynamicRegistration(),
		Notices:             DefaultNotices(),
		PlatformData:        DefaultPlatformData(),
		LogLevel:            logging.LevelInfo,
		LogFormat:           logging.FormatJSON,
	}
	c.ReachabilityProbeInterval = Duration{15 * time.Minute}
	return c
}

// setting is one configuration entry: its flag, its environment variable, and where it goes.
type setting struct {
	flag, env, usage string
	value            func(*Config) flag.Value
}

var settings = []setting{
	{"namespace", "LTIOP_NAMESPACE", "namespace to watch (default: the pod's namespace)", func(c *Config) flag.Value { return (*stringValue)(&c.Namespace) }},
	{"public-url", "LTIOP_PUBLIC_URL", "external base URL of the web server, e.g. https://lti.example.com (required)", func(c *Config) flag.Value { return (*stringValue)(&c.PublicURL) }},
	{"listen", "LTIOP_LISTEN", "listen address of the web server", func(c *Config) flag.Value { return (*stringValue)(&c.Listen) }},
	{"metrics-listen", "LTIOP_METRICS_LISTEN", "listen address of the metrics endpoint (0 disables it)", func(c *Config) flag.Value { return (*stringValue)(&c.MetricsListen) }},
	{"enable-pprof", "LTIOP_ENABLE_PPROF", "serve net/http/pprof at /debug/pprof/ on the metrics port (never the web port)", func(c *Config) flag.Value { return (*boolValue)(&c.Pprof) }},
	{"metrics-secure", "LTIOP_METRICS_SECURE", "serve the metrics over HTTPS to clients Kubernetes authenticates and authorizes", func(c *Config) flag.Value { return (*boolValue)(&c.MetricsSecure) }},
	{"api-key-secret", "LTIOP_API_KEY_SECRET", "name of the Secret holding the integrator's API key", func(c *Config) flag.Value { return (*stringValue)(&c.APIKeySecret) }},
	{"api-key-secret-key", "LTIOP_API_KEY_SECRET_KEY", "data key of the API key inside that Secret", func(c *Config) flag.Value { return (*stringValue)(&c.APIKeySecretKey) }},
	{"launch-url", "LTIOP_LAUNCH_URL", "integrator page that receives launches (?ltik=)", func(c *Config) flag.Value { return (*stringValue)(&c.LaunchURL) }},
	{"deep-linking-url", "LTIOP_DEEP_LINKING_URL", "integrator page that receives deep-linking launches", func(c *Config) flag.Value { return (*stringValue)(&c.DeepLinkingURL) }},
	{"submission-review-url", "LTIOP_SUBMISSION_REVIEW_URL", "integrator page that receives submission review launches (default: the launch URL)", func(c *Config) flag.Value { return (*stringValue)(&c.SubmissionReviewURL) }},
	{"platform-issuer", "LTIOP_PLATFORM_ISSUER", "platform mode: issuer of the id_tokens sent to tools (default: the public URL)", func(c *Config) flag.Value { return (*stringValue)(&c.PlatformIssuer) }},
	{"platform-launch-url", "LTIOP_PLATFORM_LAUNCH_URL", "platform mode: integrator page that answers tool launches (?payload=)", func(c *Config) flag.Value { return (*stringValue)(&c.PlatformLaunchURL) }},
	{"platform-deep-linking-url", "LTIOP_PLATFORM_DEEP_LINKING_URL", "platform mode: integrator page that answers deep-linking launches (default: the platform launch URL)", func(c *Config) flag.Value { return (*stringValue)(&c.PlatformDeepLinkingURL) }},
	{"platform-deep-linking-return-url", "LTIOP_PLATFORM_DEEP_LINKING_RETURN_URL", "platform mode: integrator page that receives the content items tools return (default: the platform deep-linking URL)", func(c *Config) flag.Value { return (*stringValue)(&c.PlatformDeepLinkingReturnURL) }},
	{"dev-mode", "LTIOP_DEV_MODE", "accept http and loopback URLs (local development only)", func(c *Config) flag.Value { return (*boolValue)(&c.DevMode) }},
	{"log-level", "LTIOP_LOG_LEVEL", "log level: debug (adds a line per request), info or error", func(c *Config) flag.Value { return (*stringValue)(&c.LogLevel) }},
	{"log-format", "LTIOP_LOG_FORMAT", "log format: json (one object a line) or console (text)", func(c *Config) flag.Value { return (*stringValue)(&c.LogFormat) }},
	{"leader-elect", "LTIOP_LEADER_ELECT", "elect one replica to run the controllers", func(c *Config) flag.Value { return (*boolValue)(&c.LeaderElection) }},
	{"max-body-bytes", "LTIOP_MAX_BODY_BYTES", "largest request body accepted", func(c *Config) flag.Value { return (*int64Value)(&c.MaxBodyBytes) }},
	{"key-wait", "LTIOP_KEY_WAIT", "how long POST /api/platforms waits for the new key", func(c *Config) flag.Value { return (*durationValue)(&c.KeyWait.Duration) }},
	{"reachability-probe-interval", "LTIOP_REACHABILITY_PROBE_INTERVAL", "how often the elected replica checks every active registration's key set and endpoints (0: never)", func(c *Config) flag.Value { return (*durationValue)(&c.ReachabilityProbeInterval.Duration) }},
	{"key-workers", "LTIOP_KEY_WORKERS", "registrations reconciled (keys generated) at once; 0 means twice the cores, at most 16", func(c *Config) flag.Value { return (*int64Value)(&c.KeyWorkers) }},
	{"clock-skew", "LTIOP_CLOCK_SKEW", "leeway on exp and iat of incoming tokens", func(c *Config) flag.Value { return (*durationValue)(&c.ClockSkew.Duration) }},
	{"platform-key-rotate-every", "LTIOP_PLATFORM_KEY_ROTATE_EVERY", "rotate the platform-mode signing key this often (0: on request only)", func(c *Config) flag.Value { return (*durationValue)(&c.PlatformKeyRotateEvery.Duration) }},
	{"service-secret", "LTIOP_SERVICE_SECRET", "name of the Secret holding the sealing keyring (created when missing)", func(c *Config) flag.Value { return (*stringValue)(&c.ServiceSecret) }},
	{"tool-name", "LTIOP_TOOL_NAME", "tool name shown to platforms (dynamic registration)", func(c *Config) flag.Value { return (*stringValue)(&c.ToolName) }},
	{"tool-description", "LTIOP_TOOL_DESCRIPTION", "tool description shown to platforms", func(c *Config) flag.Value { return (*stringValue)(&c.ToolDescription) }},
	{"tool-logo-url", "LTIOP_TOOL_LOGO_URL", "tool logo URL shown to platforms", func(c *Config) flag.Value { return (*stringValue)(&c.ToolLogoURL) }},
	{"canvas-privacy-level", "LTIOP_CANVAS_PRIVACY_LEVEL", "Canvas privacy level: anonymous, name_only, email_only or public", func(c *Config) flag.Value { return (*stringValue)(&c.CanvasPrivacyLevel) }},
	{"registration-auto-activate", "LTIOP_REGISTRATION_AUTO_ACTIVATE", "make dynamically registered platforms active at once", func(c *Config) flag.Value { return (*boolValue)(&c.RegistrationAutoActivate) }},
	{"pre-approval-url", "LTIOP_PRE_APPROVAL_URL", "integrator page that approves dynamic registrations (?registrationId=)", func(c *Config) flag.Value { return (*stringValue)(&c.PreApprovalURL) }},
	{"dynamic-registration-max-pending", "LTIOP_DYNAMIC_REGISTRATION_MAX_PENDING", "most registrations /lti/register may hold that were never activated (then 429)", func(c *Config) flag.Value { return (*intValue)(&c.DynamicRegistration.MaxPending) }},
	{"dynamic-registration-pending-expiry", "LTIOP_DYNAMIC_REGISTRATION_PENDING_EXPIRY", "age at which a dynamic registration never activated is deleted", func(c *Config) flag.Value { return (*durationValue)(&c.DynamicRegistration.PendingExpiry.Duration) }},
	{"dynamic-registration-require-token", "LTIOP_DYNAMIC_REGISTRATION_REQUIRE_TOKEN", "register platforms only at /lti/register/<token>, the token read from the token Secret", func(c *Config) flag.Value { return (*boolValue)(&c.DynamicRegistration.RequireToken) }},
	{"dynamic-registration-token-secret", "LTIOP_DYNAMIC_REGISTRATION_TOKEN_SECRET", "name of the Secret holding the registration token", func(c *Config) flag.Value { return (*stringValue)(&c.DynamicRegistration.TokenSecret) }},
	{"dynamic-registration-token-secret-key", "LTIOP_DYNAMIC_REGISTRATION_TOKEN_SECRET_KEY", "data key of the registration token inside that Secret", func(c *Config) flag.Value { return (*stringValue)(&c.DynamicRegistration.TokenSecretKey) }},
	{"outbound-allow-loopback", "LTIOP_OUTBOUND_ALLOW_LOOPBACK", "let outbound calls (key sets, tokens, NRPS, AGS, OAuth2, dynamic registration) reach loopback addresses (local simulators; implied by dev mode)", func(c *Config) flag.Value { return (*boolValue)(&c.OutboundAllowLoopback) }},
	{"outbound-allow-cidrs", "LTIOP_OUTBOUND_ALLOW_CIDRS", "comma-separated private ranges (CIDR) or addresses the URLs of registrations may reach (on-premises LMSs and tools; not the webhook, not dynamic registration nor the registrations it wrote)", func(c *Config) flag.Value { return (*stringListValue)(&c.OutboundAllowCIDRs) }},
	{"integrator-allow-cidrs", "LTIOP_INTEGRATOR_ALLOW_CIDRS", "comma-separated private ranges (CIDR) or addresses the calls to the integrator (the notice webhook) may reach", func(c *Config) flag.Value { return (*stringListValue)(&c.IntegratorAllowCIDRs) }},
	{"dynamic-registration-allow-cidrs", "LTIOP_DYNAMIC_REGISTRATION_ALLOW_CIDRS", "comma-separated private ranges (CIDR) or addresses /lti/register may fetch from (an on-premises LMS), and the registrations dynamic registration wrote may reach later", func(c *Config) flag.Value { return (*stringListValue)(&c.DynamicRegistration.AllowCIDRs) }},
	{"oauth-return-url", "LTIOP_OAUTH_RETURN_URL", "integrator page the OAuth2 broker returns to with ?code=", func(c *Config) flag.Value { return (*stringValue)(&c.OAuthReturnURL) }},
	{"oauth-allowed-return-urls", "LTIOP_OAUTH_ALLOWED_RETURN_URLS", "comma-separated other return URLs an OAuth2 start may ask for", func(c *Config) flag.Value { return (*stringListValue)(&c.OAuthAllowedReturnURLs) }},
	{"shutdown-timeout", "LTIOP_SHUTDOWN_TIMEOUT", "graceful shutdown bound of the web server", func(c *Config) flag.Value { return (*durationValue)(&c.ShutdownTimeout.Duration) }},
	{"service-key-lifetime", "LTIOP_SERVICE_KEY_LIFETIME", "how long a service key opens after its launch", func(c *Config) flag.Value { return (*durationValue)(&c.ServiceKeyLifetime.Duration) }},
	{"shutdown-delay", "LTIOP_SHUTDOWN_DELAY", "on SIGTERM, how long /readyz fails before the listener closes", func(c *Config) flag.Value { return (*durationValue)(&c.ShutdownDelay.Duration) }},
	{"replay-store", "LTIOP_REPLAY_STORE", "where single uses are recorded: memory (one replica) or redis://host:6379/0, rediss:// for TLS (several replicas)", func(c *Config) flag.Value { return (*stringValue)(&c.ReplayStore) }},
	{"replay-store-password-file", "LTIOP_REPLAY_STORE_PASSWORD_FILE", "file holding the Redis password (or set LTIOP_REPLAY_STORE_PASSWORD)", func(c *Config) flag.Value { return (*stringValue)(&c.ReplayStorePasswordFile) }},
	{"replay-store-key-prefix", "LTIOP_REPLAY_STORE_KEY_PREFIX", "prefix of the Redis keys (default ltiop:<namespace>:)", func(c *Config) flag.Value { return (*stringValue)(&c.ReplayStoreKeyPrefix) }},
	{"replay-store-sentinel-master", "LTIOP_REPLAY_STORE_SENTINEL_MASTER", "find the Redis master through Sentinel under this name", func(c *Config) flag.Value { return (*stringValue)(&c.ReplayStoreSentinelMaster) }},
	{"replay-store-sentinel-addrs", "LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "comma-separated host:port of the sentinels", func(c *Config) flag.Value { return (*stringListValue)(&c.ReplayStoreSentinelAddrs) }},
	{"replay-store-sentinel-username", "LTIOP_REPLAY_STORE_SENTINEL_USERNAME", "user of the sentinels (password: LTIOP_REPLAY_STORE_SENTINEL_PASSWORD)", func(c *Config) flag.Value { return (*stringValue)(&c.ReplayStoreSentinelUsername) }},
	{"replay-store-wait-replicas", "LTIOP_REPLAY_STORE_WAIT_REPLICAS", "confirm each use on this many Redis replicas (WAIT) before it counts: auto (1 with Sentinel, else 0) or a number; 0: off", func(c *Config) flag.Value { return &c.ReplayStoreWaitReplicas }},
	{"replay-store-timeout", "LTIOP_REPLAY_STORE_TIMEOUT", "bound of one Redis attempt (one retry follows a failure)", func(c *Config) flag.Value { return (*durationValue)(&c.ReplayStoreTimeout.Duration) }},
	{"rate-limit-launch", "LTIOP_RATE_LIMIT_LAUNCH", "per-client-IP limit of /lti/login, /lti/launch, /lti/launch/complete as rate/burst (requests a second / at once); 0 turns it off", func(c *Config) flag.Value { return (*rateLimitValue)(&c.RateLimits.Launch) }},
	{"rate-limit-register", "LTIOP_RATE_LIMIT_REGISTER", "per-client-IP limit of /lti/register as rate/burst; 0 turns it off", func(c *Config) flag.Value { return (*rateLimitValue)(&c.RateLimits.Register) }},
	{"rate-limit-platform-authorize", "LTIOP_RATE_LIMIT_PLATFORM_AUTHORIZE", "per-client-IP limit of /lti/platform/authorize as rate/burst; 0 turns it off", func(c *Config) flag.Value { return (*rateLimitValue)(&c.RateLimits.PlatformAuthorize) }},
	{"rate-limit-platform-token", "LTIOP_RATE_LIMIT_PLATFORM_TOKEN", "per-client-IP limit of /lti/platform/token as rate/burst; 0 turns it off", func(c *Config) flag.Value { return (*rateLimitValue)(&c.RateLimits.PlatformToken) }},
	{"rate-limit-oauth", "LTIOP_RATE_LIMIT_OAUTH", "per-client-IP limit of /oauth/start and /oauth/callback as rate/burst; 0 turns it off", func(c *Config) flag.Value { return (*rateLimitValue)(&c.RateLimits.OAuth) }},
	{"trusted-proxies", "LTIOP_TRUSTED_PROXIES", "comma-separated CIDR ranges of reverse proxies whose X-Forwarded-For names the client (rate limits)", func(c *Config) flag.Value { return (*stringListValue)(&c.TrustedProxies) }},
	{"kubeconfig", "KUBECONFIG", "kubeconfig file (default: in-cluster configuration)", func(c *Config) flag.Value { return (*stringValue)(&c.Kubeconfig) }},
}

// ErrVersion is returned by Load when --version is given: print the version and exit.
var ErrVersion = errors.New("version requested")

// ErrHelp is returned by Load when -h or --help is given: print Usage and exit 0.
var ErrHelp = flag.ErrHelp

// flagSet declares every flag, writing into parsed; it prints nothing itself.
func flagSet(parsed *Config, getenv func(string) string) (fs *flag.FlagSet, configFile *string, showVersion *bool) {
	fs = flag.NewFlagSet("ltiop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configFile = fs.String("config", getenv("LTIOP_CONFIG"), "YAML configuration file (env LTIOP_CONFIG)")
	showVersion = fs.Bool("version", false, "print the version and commit, and exit")
	for _, s := range settings {
		fs.Var(s.value(parsed), s.flag, s.usage+" (env "+s.env+")")
	}
	return fs, configFile, showVersion
}

// Usage writes the flags, with their environment variables and defaults, to w.
func Usage(w io.Writer) {
	parsed := Default()
	fs, _, _ := flagSet(&parsed, func(string) string { return "" })
	fs.SetOutput(w)
	fmt.Fprintln(w, "Usage: ltiop [flags]\n\nEvery flag can also be set by its environment variable or in the --config file (docs/configuration.md).")
	fs.PrintDefaults()
}

// Load builds the configuration from args (without the program name) and getenv.
// The YAML file, if any, is named by --config or LTIOP_CONFIG.
func Load(args []string, getenv func(string) string) (*Config, error) {
	cfg := Default()

	// Flags are parsed first only to find --config; they are applied last.
	parsed := Default()
	fs, configFile, showVersion := flagSet(&parsed, getenv)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *showVersion {
		return nil, ErrVersion
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}

	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			return nil, fmt.Errorf("reading configuration file: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return nil, fmt.Errorf("configuration file %s: %w", *configFile, err)
		}
	}
	for _, s := range settings {
		if v := getenv(s.env); v != "" {
			if err := s.value(&cfg).Set(v); err != nil {
				return nil, fmt.Errorf("environment %s: %w", s.env, err)
			}
		}
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	for _, s := range settings {
		if explicit[s.flag] {
			_ = s.value(&cfg).Set(s.value(&parsed).String())
		}
	}
	// A password is a secret: not a flag (visible in the process list), not the YAML file.
	cfg.ReplayStorePassword = getenv("LTIOP_REPLAY_STORE_PASSWORD")
	cfg.ReplayStoreSentinelPassword = getenv("LTIOP_REPLAY_STORE_SENTINEL_PASSWORD")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if c.Namespace == "" {
		add("namespace: required (flag --namespace or LTIOP_NAMESPACE) when not running in a pod")
	} else if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		add("namespace %q: %s", c.Namespace, strings.Join(msgs, "; "))
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.PublicURL == "" {
		add("publicUrl: required (flag --public-url or LTIOP_PUBLIC_URL), e.g. https://lti.example.com")
	} else if err := c.checkURL(c.PublicURL); err != nil {
		add("publicUrl: %v", err)
	} else if u, _ := url.Parse(c.PublicURL); u.RawQuery != "" || u.Fragment != "" {
		add("publicUrl: must not carry a query or fragment")
	}
	if c.PlatformIssuer != "" {
		if err := c.checkURL(c.PlatformIssuer); err != nil {
			add("platformIssuer: %v", err)
		} else if u, _ := url.Parse(c.PlatformIssuer); u.RawQuery != "" || u.Fragment != "" {
			add("platformIssuer: must not carry a query or fragment")
		}
	}
	for name, v := range map[string]string{"launchUrl": c.LaunchURL, "deepLinkingUrl": c.DeepLinkingURL,
		"platformLaunchUrl": c.PlatformLaunchURL, "platformDeepLinkingUrl": c.PlatformDeepLinkingURL,
		"platformDeepLinkingReturnUrl": c.PlatformDeepLinkingReturnURL, "submissionReviewUrl": c.SubmissionReviewURL} {
		if v != "" {
			if err := c.checkURL(v); err != nil {
				add("%s: %v", name, err)
			}
		}
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		add("listen %q: %v", c.Listen, err)
	}
	if c.MetricsListen != "0" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			add("metricsListen %q: %v", c.MetricsListen, err)
		}
	} else if c.Pprof {
		add("pprof: profiles are served on the metrics port, which metricsListen 0 turns off")
	}
	if msgs := validation.IsDNS1123Subdomain(c.APIKeySecret); len(msgs) > 0 {
		add("apiKeySecret %q: %s", c.APIKeySecret, strings.Join(msgs, "; "))
	}
	if c.APIKeySecretKey == "" {
		add("apiKeySecretKey: required")
	}
	if c.MaxBodyBytes < 1024 {
		add("maxBodyBytes: must be at least 1024, got %d", c.MaxBodyBytes)
	}
	if d := c.ReachabilityProbeInterval.Duration; d != 0 && (d < time.Minute || d > 24*time.Hour) {
		add("reachabilityProbeInterval: must be 0 (off) or between 1m and 24h, got %s", d)
	}
	if c.KeyWait.Duration < 0 || c.KeyWait.Duration > time.Minute {
		add("keyWait: must be between 0 and 1m, got %s", c.KeyWait.Duration)
	}
	if c.KeyWorkers < 0 || c.KeyWorkers > 64 {
		add("keyWorkers: must be between 0 (automatic) and 64, got %d", c.KeyWorkers)
	}
	if c.ClockSkew.Duration < 0 || c.ClockSkew.Duration > 5*time.Minute {
		add("clockSkew: must be between 0 and 5m, got %s", c.ClockSkew.Duration)
	}
	if d := c.PlatformKeyRotateEvery.Duration; d != 0 && d < 24*time.Hour {
		add("platformKeyRotateEvery: must be 0 (on request only) or at least 24h, got %s", d)
	}
	if msgs := validation.IsDNS1123Subdomain(c.ServiceSecret); len(msgs) > 0 {
		add("serviceSecret %q: %s", c.ServiceSecret, strings.Join(msgs, "; "))
	}
	if c.PreApprovalURL != "" {
		if err := c.checkURL(c.PreApprovalURL); err != nil {
			add("preApprovalUrl: %v", err)
		}
	}
	for i, u := range append([]string{c.OAuthReturnURL}, c.OAuthAllowedReturnURLs...) {
		if u == "" {
			continue
		}
		if err := c.checkURL(u); err != nil {
			name := "oauthReturnUrl"
			if i > 0 {
				name = fmt.Sprintf("oauthAllowedReturnUrls[%d]", i-1)
			}
			add("%s: %v", name, err)
		}
	}
	if c.ToolLogoURL != "" {
		if err := c.checkURL(c.ToolLogoURL); err != nil {
			add("toolLogoUrl: %v", err)
		}
	}
	switch c.CanvasPrivacyLevel {
	case "anonymous", "name_only", "email_only", "public":
	default:
		add("canvasPrivacyLevel %q: must be anonymous, name_only, email_only or public", c.CanvasPrivacyLevel)
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"outboundAllowCidrs", c.OutboundAllowCIDRs}, {"integratorAllowCidrs", c.IntegratorAllowCIDRs},
		{"dynamicRegistration.allowCidrs", c.DynamicRegistration.AllowCIDRs}} {
		for _, cidr := range l.list {
			if _, err := netip.ParsePrefix(cidr); err != nil {
				if _, err := netip.ParseAddr(cidr); err != nil {
					add("%s: %q is not a CIDR range or an address", l.name, cidr)
				}
			}
		}
	}
	if c.ShutdownTimeout.Duration <= 0 {
		add("shutdownTimeout: must be positive")
	}
	if c.ShutdownDelay.Duration < 0 {
		add("shutdownDelay: must not be negative")
	}
	if c.ServiceKeyLifetime.Duration < 24*time.Hour {
		add("serviceKeyLifetime: must be at least 24h (an ltik lasts 24h; a service key must outlive it)")
	}
	if err := logging.Check(c.LogLevel, c.LogFormat); err != nil {
		add("%v", err)
	}
	c.validateReplayStore(add)
	c.validateRateLimits(add)
	c.validateDynamicRegistration(add)
	c.validateAssetProcessor(add)
	c.validateNotices(add)
	c.validatePlatformData(add)
	if len(errs) > 0 {
		return fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return nil
}

// validateReplayStore checks the replay-store settings. The URL may hold a password:
// no message repeats it.
func (c *Config) validateReplayStore(add func(string, ...any)) {
	if c.ReplayStoreTimeout.Duration <= 0 || c.ReplayStoreTimeout.Duration > 10*time.Second {
		add("replayStoreTimeout: must be between 1ms and 10s, got %s", c.ReplayStoreTimeout.Duration)
	}
	wait := c.ReplayStoreWaitReplicas
	if wait.Given && (wait.N < 0 || wait.N > 16) {
		add("replayStoreWaitReplicas: must be auto or between 0 and 16, got %d", wait.N)
	}
	sentinel := c.ReplayStoreSentinelMaster != ""
	if sentinel != (len(c.ReplayStoreSentinelAddrs) > 0) {
		add("replayStoreSentinelMaster and replayStoreSentinelAddrs: give both or neither")
	}
	if (c.ReplayStoreSentinelUsername != "" || c.ReplayStoreSentinelPassword != "") && !sentinel {
		add("replayStoreSentinelUsername/LTIOP_REPLAY_STORE_SENTINEL_PASSWORD: set, but no Sentinel is configured")
	}
	for _, a := range c.ReplayStoreSentinelAddrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			add("replayStoreSentinelAddrs: %q is not host:port", a)
		}
	}
	if c.ReplayStore == "" || c.ReplayStore == "memory" {
		if c.ReplayStorePassword != "" || c.ReplayStorePasswordFile != "" {
			add("replayStore: a Redis password is set but the store is memory")
		}
		if sentinel {
			add("replayStore: Sentinel is configured but the store is memory (use redis:///0)")
		}
		if wait.Given && wait.N > 0 {
			add("replayStoreWaitReplicas: set, but the store is memory")
		}
		return
	}
	u, err := url.Parse(c.ReplayStore)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || (u.Host == "" && !sentinel) {
		add("replayStore: must be memory, redis://host:6379/0 or rediss://host:6380/0")
		return
	}
	if u.RawQuery != "" || u.Fragment != "" {
		add("replayStore: the URL takes no query parameters")
	}
	if sentinel && u.Scheme == "rediss" && u.Hostname() == "" {
		// The sentinels name the master's address; the certificates are checked against
		// the URL's host, so a sentinel's answer can only lead to a server holding one.
		add("replayStore: with Sentinel, a rediss:// URL must name the master's host name, the name its certificate holds (rediss://redis-master.example/0)")
	}
	_, inURL := u.User.Password()
	if n := btoi(inURL) + btoi(c.ReplayStorePassword != "") + btoi(c.ReplayStorePasswordFile != ""); n > 1 {
		add("replayStore: give the Redis password once: in LTIOP_REPLAY_STORE_PASSWORD, in replayStorePasswordFile or in the URL")
	}
}

// validateRateLimits checks each group's rate and burst, and the trusted proxy ranges.
func (c *Config) validateRateLimits(add func(string, ...any)) {
	for name, l := range map[string]RateLimit{"launch": c.RateLimits.Launch, "register": c.RateLimits.Register,
		"platformAuthorize": c.RateLimits.PlatformAuthorize, "platformToken": c.RateLimits.PlatformToken, "oauth": c.RateLimits.OAuth, "notices": c.RateLimits.Notices} {
		switch {
		case l.Rate < 0 || l.Rate > 1e6 || l.Rate != l.Rate:
			add("rateLimits.%s.rate: must be between 0 (off) and 1000000 requests a second, got %v", name, l.Rate)
		case l.Rate > 0 && (l.Burst < 1 || l.Burst > 1e6):
			add("rateLimits.%s.burst: must be between 1 and 1000000 when the rate is set, got %d", name, l.Burst)
		}
	}
	for _, cidr := range c.TrustedProxies {
		if _, err := ParseCIDROrAddr(cidr); err != nil {
			add("trustedProxies: %q is not a CIDR range or an address", cidr)
		}
	}
}

// validateDynamicRegistration checks the bound, the expiry and the token Secret.
func (c *Config) validateDynamicRegistration(add func(string, ...any)) {
	d := c.DynamicRegistration
	if d.MaxPending < 1 || d.MaxPending > 10000 {
		add("dynamicRegistration.maxPending: must be between 1 and 10000, got %d", d.MaxPending)
	}
	if d.PendingExpiry.Duration < time.Minute {
		add("dynamicRegistration.pendingExpiry: must be at least 1m, got %s", d.PendingExpiry.Duration)
	}
	if msgs := validation.IsDNS1123Subdomain(d.TokenSecret); len(msgs) > 0 {
		add("dynamicRegistration.tokenSecret %q: %s", d.TokenSecret, strings.Join(msgs, "; "))
	}
	if d.TokenSecretKey == "" {
		add("dynamicRegistration.tokenSecretKey: required")
	}
}

// ParseCIDROrAddr reads a CIDR range, or one address as a range of one.
func ParseCIDROrAddr(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// TrustedProxyPrefixes are TrustedProxies parsed (Validate has checked them).
func (c *Config) TrustedProxyPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range c.TrustedProxies {
		if p, err := ParseCIDROrAddr(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReplayKeyPrefix is the prefix of the replay store's keys: one per installation, so
// several installations can share a Redis.
func (c *Config) ReplayKeyPrefix() string {
	if c.ReplayStoreKeyPrefix != "" {
		return c.ReplayStoreKeyPrefix
	}
	return "ltiop:" + c.Namespace + ":"
}

// checkURL accepts absolute https URLs, and http ones in dev mode.
func (c *Config) checkURL(raw string) error {
	return urls.Check(raw, c.DevMode)
}

// inClusterNamespace is the pod's namespace, from the downward API or the service account.
func inClusterNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	*v = boolValue(b)
	return err
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

type stringListValue []string

func (v *stringListValue) Set(s string) error {
	*v = nil
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*v = append(*v, part)
		}
	}
	return nil
}
func (v *stringListValue) String() string { return strings.Join(*v, ",") }

// rateLimitValue is a RateLimit written rate/burst ("100/2000"), or 0 for off.
type rateLimitValue RateLimit

func (v *rateLimitValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "0" || s == "off" {
		*v = rateLimitValue{}
		return nil
	}
	rate, burst, found := strings.Cut(s, "/")
	r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
	if err != nil || !found {
		return fmt.Errorf("rate limit %q: want rate/burst such as 100/2000, or 0 for off", s)
	}
	b, err := strconv.Atoi(strings.TrimSpace(burst))
	if err != nil {
		return fmt.Errorf("rate limit %q: the burst must be a whole number", s)
	}
	*v = rateLimitValue{Rate: r, Burst: b}
	return nil
}

func (v *rateLimitValue) String() string {
	if v.Rate == 0 {
		return "0"
	}
	return strconv.FormatFloat(v.Rate, 'g', -1, 64) + "/" + strconv.Itoa(v.Burst)
}

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	*v = intValue(n)
	return err
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type int64Value int64

func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	*v = int64Value(n)
	return err
}
func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	*v = durationValue(d)
	return err
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

// PlatformMode is the platform-mode configuration with its defaults applied.
type PlatformMode struct {
	Issuer, LaunchURL, DeepLinkingURL, DeepLinkingReturnURL string
}

// Platform returns the platform-mode settings: the issuer defaults to the public URL, the
// deep-linking page to the launch page, and the return page to the deep-linking page.
func (c *Config) Platform() PlatformMode {
	p := PlatformMode{Issuer: c.PlatformIssuer, LaunchURL: c.PlatformLaunchURL,
		DeepLinkingURL: c.PlatformDeepLinkingURL, DeepLinkingReturnURL: c.PlatformDeepLinkingReturnURL}
	if p.Issuer == "" {
		p.Issuer = c.PublicURL
	}
	if p.DeepLinkingURL == "" {
		p.DeepLinkingURL = p.LaunchURL
	}
	if p.DeepLinkingReturnURL == "" {
		p.DeepLinkingReturnURL = p.DeepLinkingURL
	}
	return p
}
