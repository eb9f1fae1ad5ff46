// Package toolmode serves the endpoints an LMS calls when ltiop acts as its tool
// (/lti/login, /lti/launch, /lti/keys) and the integrator API built on launches
// (/api/idtoken).
package toolmode

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Lifetimes and limits of the launch flow.
const (
	stateTTL = 10 * time.Minute // T-STATE-03: a login must be completed within this
	ltikTTL  = 24 * time.Hour
	// pendingTTL bounds the platform-storage check between id_token validation and the
	// hand-over to the integrator.
	pendingTTL = 2 * time.Minute
)

// Options configure the tool-mode handlers.
type Options struct {
	// PublicURL is ltiop's external base URL; its origin is the only allowed target_link_uri origin.
	PublicURL string
	// LaunchURL and DeepLinkingURL are the integrator pages launches are handed to.
	LaunchURL, DeepLinkingURL string
	// SubmissionReviewURL receives submission reviews (LtiSubmissionReviewRequest); empty:
	// LaunchURL.
	SubmissionReviewURL string
	// DevMode allows plain-http cookies for local work.
	DevMode bool
	// ClockSkew is the leeway on exp and iat.
	ClockSkew time.Duration
	// ServiceKeyLifetime is how long a service key opens after the launch that made it
	// (zero: 90 days).
	ServiceKeyLifetime time.Duration
	// Deployments, when set, is told the deployment of every successful launch, so
	// deployments a registration did not name are recorded.
	Deployments DeploymentRecorder
	// MessageLaunchURLs are integrator pages by message type (LtiAssetProcessorSettingsRequest,
	// LtiReportReviewRequest, LtiEulaRequest, …); a type without one goes to LaunchURL.
	MessageLaunchURLs map[string]string
	// MaxAssetBytes bounds an asset download (zero: DefaultMaxAssetBytes); AssetClient, when
	// set, is the client of asset downloads (a longer timeout than other service calls).
	MaxAssetBytes int64
	AssetClient   *advantage.Client
	// AssetTimeout is the time an asset download may take (the asset client's timeout); the
	// response's write deadline is extended to match.
	AssetTimeout time.Duration
	// Notices configure the Platform Notification Service (notices.go).
	Notices NoticeOptions
	// Health, when set, is told the outcome of every launch of a known registration
	// (launchhealth records it on the registration).
	Health LaunchHealth
	// ServiceHealth, when set, is told of failed calls to an LMS's services.
	ServiceHealth ServiceHealth
}

// NoticeOptions configure the Platform Notification Service (docs/notices.md).
type NoticeOptions struct {
	// WebhookURL receives the notices of registrations that name no spec.noticeWebhookUrl.
	WebhookURL string
	// Webhook signs and sends; nil refuses every notice (NOTICES_NOT_CONFIGURED).
	Webhook *webhook.Sender
	// KeyLifetime is how long a notice key opens (zero: one hour).
	KeyLifetime time.Duration
	// MaxBatch is the most notices one POST may carry (zero: 100).
	MaxBatch int
}

// LaunchHealth learns how each registration's logins and launches go. It must not block:
// it is called on the launch path.
type LaunchHealth interface {
	Launched(p *registry.Platform)
	// Refused: a launch, whose refused value sent (apierr.Error.Sent) a verified id_token said.
	Refused(p *registry.Platform, code, rule, sent string)
	// RefusedLogin: a login, which is not signed: nothing it sent goes with it.
	RefusedLogin(p *registry.Platform, code, rule string)
}

// DeploymentRecorder learns the deployments launches come from (onboarding records them on
// the registration). It must not block: it is called on the launch path.
type DeploymentRecorder interface {
	RecordDeployment(p *registry.Platform, deploymentID string)
}

// Tool serves the tool-mode endpoints.
type Tool struct {
	opts      Options
	publicURL *url.URL
	origin    string // scheme://host of publicURL, as browsers send it in Origin
	registry  *registry.Registry
	keys      *registry.PeerKeys
	keyring   *sessions.Keyring
	replay    replay.Store
	services  *advantage.Client
	auth      *authenticator // the launch services' credentials (credential.go)
	now       func() time.Time
	// formAction is the CSP form-action source list of the pages: ltiop and the
	// integrator pages a form post may end on.
	formAction string
}

// New returns the tool-mode handlers.
func New(opts Options, reg *registry.Registry, keys *registry.PeerKeys, keyring *sessions.Keyring,
	replays replay.Store, apiKey *httpapi.APIKey, services *advantage.Client) (*Tool, error) {
	u, err := url.Parse(opts.PublicURL)
	if err != nil {
		return nil, err
	}
	formAction := []string{"'self'"}
	dests := []string{opts.LaunchURL, opts.DeepLinkingURL, opts.SubmissionReviewURL}
	for _, mt := range slices.Sorted(maps.Keys(opts.MessageLaunchURLs)) {
		dests = append(dests, opts.MessageLaunchURLs[mt])
	}
	for _, dest := range dests {
		if d, err := url.Parse(dest); err == nil && d.Host != "" {
			formAction = append(formAction, d.Scheme+"://"+d.Host)
		}
	}
	t := &Tool{opts: opts, publicURL: u, origin: u.Scheme + "://" + u.Host, registry: reg, keys: keys, keyring: keyring,
		replay: replays, services: services, now: time.Now, formAction: strings.Join(formAction, " ")}
	t.auth = &authenticator{registry: reg, keyring: keyring, apiKey: apiKey, ltiks: newLtikCache(),
		now: func() time.Time { return t.now() }, serviceKeyLifetime: opts.ServiceKeyLifetime,
		noticeKeyLifetime: opts.Notices.KeyLifetime}
	return t, nil
}

// secureCookies says whether browser-binding cookies can be Secure (and so SameSite=None).
func (t *Tool) secureCookies() bool { return t.publicURL.Scheme == "https" || !t.opts.DevMode }
