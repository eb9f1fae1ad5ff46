package v1alpha1

import (
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AuthMethod says how the platform's signing key is given in AuthConfig.Key.
// +kubebuilder:validation:Enum=JWK_SET;JWK_KEY;RSA_KEY
type AuthMethod string

const (
	// AuthMethodJWKSet means Key is the URL of the platform's JSON Web Key Set.
	AuthMethodJWKSet AuthMethod = "JWK_SET"
	// AuthMethodJWKKey means Key is one RSA public key as a JSON Web Key.
	AuthMethodJWKKey AuthMethod = "JWK_KEY"
	// AuthMethodRSAKey means Key is one PEM-encoded RSA public key.
	AuthMethodRSAKey AuthMethod = "RSA_KEY"
)

// EndpointURL is an absolute http or https URL. Plain http is further refused by the
// controller unless the registration or the operator runs in dev mode.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=2048
// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname().size() > 0",message="must be an absolute http(s) URL"
type EndpointURL string

// AuthConfig is the platform's public key material used to verify the id_tokens it signs.
// +kubebuilder:validation:XValidation:rule="self.method != 'JWK_SET' || (isURL(self.key) && url(self.key).getScheme() in ['http', 'https'])",message="a JWK_SET key must be the absolute http(s) URL of the platform's key set"
// +kubebuilder:validation:XValidation:rule="self.method != 'RSA_KEY' || self.key.contains('-----BEGIN')",message="an RSA_KEY key must be a PEM-encoded RSA public key"
// +kubebuilder:validation:XValidation:rule="self.method != 'JWK_KEY' || self.key.matches('^\\\\s*\\\\{')",message="a JWK_KEY key must be a JSON Web Key object"
type AuthConfig struct {
	// Method says how Key is to be read.
	// +required
	Method AuthMethod `json:"method"`

	// Key is the JWKS URL, the JWK (JSON) or the PEM public key, as Method says.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16384
	Key string `json:"key"`
}

// PlatformRegistrationSpec describes one learning platform (LMS) that may launch this tool.
// The pair (url, clientId) identifies it: several customers of one hosted LMS share an issuer.
type PlatformRegistrationSpec struct {
	// URL is the platform's issuer (the iss claim of its id_tokens), byte for byte.
	// +required
	URL EndpointURL `json:"url"`

	// ClientID is the client_id the platform issued to this tool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	ClientID string `json:"clientId"`

	// Name is a human-readable name for the platform.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// AuthenticationEndpoint is the platform's OIDC authorization endpoint.
	// +required
	AuthenticationEndpoint EndpointURL `json:"authenticationEndpoint"`

	// AccesstokenEndpoint is the platform's OAuth2 token endpoint.
	// +required
	AccesstokenEndpoint EndpointURL `json:"accesstokenEndpoint"`

	// AuthorizationServer is the audience of the client assertions sent to the token endpoint.
	// Defaults to AccesstokenEndpoint (Brightspace, for one, needs another value).
	// +optional
	AuthorizationServer string `json:"authorizationServer,omitempty"`

	// AuthConfig holds the platform's public key.
	// +required
	AuthConfig AuthConfig `json:"authConfig"`

	// DeploymentIDs, when set, is the list of deployment_id values accepted in launches.
	// Empty accepts any deployment of this platform.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	DeploymentIDs []string `json:"deploymentIds,omitempty"`

	// NoticeWebhookURL, when set, is where this platform's notices (LTI Platform
	// Notification Service) are delivered, instead of the operator's noticeWebhookUrl.
	// +optional
	NoticeWebhookURL EndpointURL `json:"noticeWebhookUrl,omitempty"`

	// Active says whether launches from this platform are accepted.
	// +optional
	// +kubebuilder:default=true
	Active *bool `json:"active,omitempty"`

	// DevMode allows plain http URLs for this registration (local LMS simulators).
	// +optional
	DevMode bool `json:"devMode,omitempty"`

	// OAuth2 configures the access-token broker for the LMS's own REST API (Canvas API,
	// Brightspace Valence) on behalf of users.
	// +optional
	OAuth2 *OAuth2Client `json:"oauth2,omitempty"`

	// LTI11 holds the platform's LTI 1.1 credentials: its 1.1 launches (POST /lti/launch
	// with OAuth 1.0a) and Basic Outcomes are signed with them, and the lti1p1 migration
	// claim of its 1.3 launches is verified with them.
	// +optional
	LTI11 *LTI11Credentials `json:"lti11,omitempty"`

	// KeyRotation is the rotation policy of the tool key (status.kid). Unset: the key is
	// rotated only on request (annotation lti.ltiop.dev/rotate-key).
	// +optional
	KeyRotation *KeyRotation `json:"keyRotation,omitempty"`
}

// LTI11Credentials are an LTI 1.1 consumer key and a reference to its shared secret.
type LTI11Credentials struct {
	// ConsumerKey is the oauth_consumer_key the LMS signs with. Unique among registrations:
	// while two hold one, LTI 1.1 launches with it are refused (condition LTI11ConsumerKeyUnique).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	ConsumerKey string `json:"consumerKey"`

	// SharedSecret names the Secret (in this namespace) and its data key holding the shared
	// secret. The Secret must carry the label app.kubernetes.io/managed-by=ltiop: the
	// web server reads Secrets from its label-selected cache only, never from the API server
	// on a launch.
	// +required
	SharedSecret SecretKeyRef `json:"sharedSecret"`
}

// SecretKeyRef names one data key of a Secret in the registration's namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key is the data key; defaults to "secret".
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:default=secret
	Key string `json:"key,omitempty"`
}

// SecretKey is Key, or "secret" when unset.
func (r SecretKeyRef) SecretKey() string {
	if r.Key == "" {
		return LTI11SecretKey
	}
	return r.Key
}

// OAuth2Client is the LMS's OAuth2 client for its REST API: a Canvas API developer key or a
// Brightspace OAuth2 app.
type OAuth2Client struct {
	// SecretName names a Secret in this namespace holding the client under the data keys
	// client_id and client_secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// AuthorizeURL is the LMS's authorization endpoint. Derived when omitted: for a
	// self-hosted Canvas <issuer>/login/oauth2/auth, for Brightspace
	// https://auth.brightspace.com/oauth2/auth. Canvas Cloud shares one issuer across
	// schools, so there it must be given (https://<school>.instructure.com/login/oauth2/auth).
	// +optional
	AuthorizeURL EndpointURL `json:"authorizeUrl,omitempty"`

	// TokenURL is the LMS's token endpoint, derived like AuthorizeURL.
	// +optional
	TokenURL EndpointURL `json:"tokenUrl,omitempty"`

	// Scopes are asked for when the integrator names none.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Scopes []string `json:"scopes,omitempty"`
}

// Endpoints returns the authorize and token URLs, derived from the issuer when not given;
// ok is false when they cannot be derived.
func (c *OAuth2Client) Endpoints(issuer string) (authorize, token string, ok bool) {
	authorize, token = string(c.AuthorizeURL), string(c.TokenURL)
	if authorize != "" && token != "" {
		return authorize, token, true
	}
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return authorize, token, false
	}
	host := strings.ToLower(u.Hostname())
	var dAuth, dToken string
	switch {
	case host == "canvas.instructure.com" || host == "canvas.beta.instructure.com" || host == "canvas.test.instructure.com":
		return authorize, token, false // Canvas Cloud: the school's own domain is not in the issuer
	case strings.HasSuffix(host, ".brightspace.com") || strings.Contains(host, "d2l"):
		dAuth, dToken = "https://auth.brightspace.com/oauth2/auth", "https://auth.brightspace.com/core/connect/token"
	case strings.Contains(host, "instructure") || strings.Contains(host, "canvas"):
		base := strings.TrimRight(issuer, "/")
		dAuth, dToken = base+"/login/oauth2/auth", base+"/login/oauth2/token"
	default:
		return authorize, token, false
	}
	if authorize == "" {
		authorize = dAuth
	}
	if token == "" {
		token = dToken
	}
	return authorize, token, true
}

// IsActive reports whether launches from the platform are accepted (true when unset).
func (s *PlatformRegistrationSpec) IsActive() bool {
	return s.Active == nil || *s.Active
}

// TokenAudience is the audience of client assertions: authorizationServer, else the token endpoint.
func (s *PlatformRegistrationSpec) TokenAudience() string {
	if s.AuthorizationServer != "" {
		return s.AuthorizationServer
	}
	return string(s.AccesstokenEndpoint)
}

// PlatformRegistrationStatus is what the operator observed and what an LMS administrator needs.
type PlatformRegistrationStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, plus Reconciling and Stalled as kstatus reads them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KeySecretName is the Secret holding this tool's private key for the platform.
	// +optional
	KeySecretName string `json:"keySecretName,omitempty"`

	// KID is the key id of that key, as published in the JWKS.
	// +optional
	KID string `json:"kid,omitempty"`

	// PublicKey is the PEM public key to give the platform when it does not read the JWKS.
	// +optional
	PublicKey string `json:"publicKey,omitempty"`

	// KeySecretResourceVersion is the key Secret's resourceVersion when ltiop last read its
	// key and found it valid: while the Secret is unchanged its key is not parsed again, so
	// a restart does not re-check every key at once.
	// +optional
	KeySecretResourceVersion string `json:"keySecretResourceVersion,omitempty"`

	// LoginURL is the OIDC login initiation URL to configure in the LMS.
	// +optional
	LoginURL string `json:"loginUrl,omitempty"`

	// LaunchURL is the target link and redirect URL to configure in the LMS.
	// +optional
	LaunchURL string `json:"launchUrl,omitempty"`

	// JWKSURL is the public key set URL to configure in the LMS: this registration's own key
	// set (<publicUrl>/lti/keys/<name>), holding its keys only.
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`

	// DeploymentIDs are the deployments the platform named at dynamic registration or that
	// launches came from: learnt, not an allow-list (that is spec.deploymentIds).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	DeploymentIDs []string `json:"deploymentIds,omitempty"`

	// FirstActivated is when the operator first saw this dynamic registration (label
	// lti.ltiop.dev/origin) active. Set once and kept: it gets its key only from then on,
	// and one never activated expires (deactivating it later deletes nothing).
	// +optional
	FirstActivated *metav1.Time `json:"firstActivated,omitempty"`

	// LaunchHealth is how this platform's launches went lately, as the web server replicas
	// saw them: written in the background at most once a minute per replica, only on
	// change, and only ever moving forward in time.
	// +optional
	LaunchHealth *LaunchHealth `json:"launchHealth,omitempty"`

	// KeyRotation tells where the rotation of the tool key stands: the key that signs, the
	// next one (published, not signing yet), the one retiring (published, no longer signing).
	// +optional
	KeyRotation *KeyRotationStatus `json:"keyRotation,omitempty"`
}

// LaunchHealth is the time of the last successful launch and the last refusal of a
// registration. It names no user.
type LaunchHealth struct {
	// LastLaunchTime is when a launch of this registration last succeeded.
	// +optional
	LastLaunchTime *metav1.Time `json:"lastLaunchTime,omitempty"`

	// LastRefusal is the last launch of this registration that ltiop refused (for a
	// ToolRegistration also its token requests, deep-linking responses and service calls).
	// +optional
	LastRefusal *LaunchRefusal `json:"lastRefusal,omitempty"`
}

// LaunchRefusal is one refused launch or request: when, the stable error code answered,
// and the conformance rule (docs: lti-conformance.md) the failed check enforces.
type LaunchRefusal struct {
	// Time is when the launch was refused.
	// +required
	Time metav1.Time `json:"time"`

	// Code is the stable error code shown on the error page (docs/troubleshooting.md).
	// +required
	// +kubebuilder:validation:MaxLength=128
	Code string `json:"code"`

	// Rule is the conformance rule ID of the failed check (T-TOK-12), when there is one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Rule string `json:"rule,omitempty"`
}

// ---- Tool-key rotation (spec.keyRotation, status.keyRotation) ----

// LMSKeySource says how the LMS holds the tool's public key.
// +kubebuilder:validation:Enum=KeySetURL;PastedKey
type LMSKeySource string

const (
	// LMSKeySourceKeySetURL means the LMS reads status.jwksUrl, so it learns a new key there.
	LMSKeySourceKeySetURL LMSKeySource = "KeySetURL"
	// LMSKeySourcePastedKey means the LMS was given status.publicKey; it cannot follow a rotation
	// by itself, so none is made automatically.
	LMSKeySourcePastedKey LMSKeySource = "PastedKey"
)

// KeyRotation is the rotation policy of a registration's tool key. A rotation publishes the
// next key in the registration's key set PublishAhead before it signs, then signs with it,
// and keeps the old key published GracePeriod after that.
//
// The durations are Go durations ("90d" is not one: "2160h"), checked by the schema: a value
// that did not decode would make every replica's informer fail to list the registrations.
type KeyRotation struct {
	// Every is how long a key signs before the next one takes over. Unset or 0: never
	// automatically (the annotation lti.ltiop.dev/rotate-key still rotates).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a Go duration such as 24h, 90m or 0s"
	Every *metav1.Duration `json:"every,omitempty"`

	// PublishAhead is how long the next key is in the key set before it signs: at least as
	// long as the LMS caches the key set. Default 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a Go duration such as 24h, 90m or 0s"
	PublishAhead *metav1.Duration `json:"publishAhead,omitempty"`

	// GracePeriod is how long the old key stays in the key set after the next one signs,
	// so what it signed just before (client assertions, deep-linking responses) still
	// verifies. Default 1h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a Go duration such as 24h, 90m or 0s"
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`

	// LMSKeySource says how the LMS holds the tool key. Automatic rotation needs KeySetURL
	// (dynamic registrations always do: they gave the LMS the key-set URL); with PastedKey
	// or unset, keys are rotated only on request.
	// +optional
	LMSKeySource LMSKeySource `json:"lmsKeySource,omitempty"`
}

// Default rotation timings.
const (
	DefaultKeyPublishAhead = 24 * time.Hour
	DefaultKeyGracePeriod  = time.Hour
)

// Timings returns every (0: never automatically), publishAhead and gracePeriod, with
// defaults; p may be nil.
func (p *KeyRotation) Timings() (every, publishAhead, gracePeriod time.Duration) {
	publishAhead, gracePeriod = DefaultKeyPublishAhead, DefaultKeyGracePeriod
	if p == nil {
		return 0, publishAhead, gracePeriod
	}
	if p.Every != nil && p.Every.Duration > 0 {
		every = p.Every.Duration
	}
	if p.PublishAhead != nil && p.PublishAhead.Duration >= 0 {
		publishAhead = p.PublishAhead.Duration
	}
	if p.GracePeriod != nil && p.GracePeriod.Duration >= 0 {
		gracePeriod = p.GracePeriod.Duration
	}
	return every, publishAhead, gracePeriod
}

// KeyRotationStatus is where the rotation of the tool key stands.
type KeyRotationStatus struct {
	// Current is the key that signs.
	// +optional
	Current *ToolKeyStatus `json:"current,omitempty"`
	// Next is published in the key set and signs from its signsFrom.
	// +optional
	Next *ToolKeyStatus `json:"next,omitempty"`
	// Retiring signed before Current; it stays published until its retiresAt.
	// +optional
	Retiring *ToolKeyStatus `json:"retiring,omitempty"`
	// NextRotation is when the next automatic rotation starts (absent: none is scheduled).
	// +optional
	NextRotation *metav1.Time `json:"nextRotation,omitempty"`
	// LastRequest is the value of the annotation lti.ltiop.dev/rotate-key last served.
	// +optional
	LastRequest string `json:"lastRequest,omitempty"`
}

// ToolKeyStatus is one tool key of a rotation.
type ToolKeyStatus struct {
	// KID is the key id, as published in the key set.
	KID string `json:"kid"`
	// Created is when the key was generated.
	// +optional
	Created *metav1.Time `json:"created,omitempty"`
	// SignsFrom is when the key started (or starts) signing.
	// +optional
	SignsFrom *metav1.Time `json:"signsFrom,omitempty"`
	// RetiresAt is when a retiring key leaves the key set.
	// +optional
	RetiresAt *metav1.Time `json:"retiresAt,omitempty"`
	// PublicKey is the next key's PEM public key, for an LMS that holds a pasted key.
	// +optional
	PublicKey string `json:"publicKey,omitempty"`
}

// ---- end of tool-key rotation ----

// IsDynamic reports whether dynamic registration (an unauthenticated request) wrote the
// registration, as opposed to kubectl or the platforms API.
func (r *PlatformRegistration) IsDynamic() bool {
	return r.Labels[LabelOrigin] == OriginDynamicRegistration
}

// AwaitingActivation reports whether the registration came from dynamic registration and
// has never been active: it has no key yet, counts against the pending bound and expires.
func (r *PlatformRegistration) AwaitingActivation() bool {
	return r.IsDynamic() && !r.Spec.IsActive() && r.Status.FirstActivated == nil
}

// PlatformRegistration is one LMS registration this tool trusts.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=platreg,categories=lti
// +kubebuilder:selectablefield:JSONPath=`.spec.clientId`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Client ID",type=string,JSONPath=`.spec.clientId`
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.spec.active`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Last Launch",type=date,JSONPath=`.status.launchHealth.lastLaunchTime`
// +kubebuilder:printcolumn:name="Last Error",type=string,JSONPath=`.status.launchHealth.lastRefusal.code`
// +kubebuilder:printcolumn:name="Key Age",type=date,JSONPath=`.status.keyRotation.current.created`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PlatformRegistration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   PlatformRegistrationSpec   `json:"spec"`
	Status PlatformRegistrationStatus `json:"status,omitempty"`
}

// PlatformRegistrationList is a list of PlatformRegistration.
// +kubebuilder:object:root=true
type PlatformRegistrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlatformRegistration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PlatformRegistration{}, &PlatformRegistrationList{})
}
