package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// Scope is an LTI Advantage service scope a tool may be granted at the platform-mode token
// endpoint.
// +kubebuilder:validation:Enum="https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly";"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem";"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly";"https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly";"https://purl.imsglobal.org/spec/lti-ags/scope/score"
type Scope string

// The scopes of NRPS and AGS (the Enum above spells them again: markers take no constants).
const (
	ScopeNRPSMembership   Scope = ltiwire.ScopeMembershipReadOnly
	ScopeAGSLineItem      Scope = ltiwire.ScopeLineItem
	ScopeAGSLineItemRead  Scope = ltiwire.ScopeLineItemReadOnly
	ScopeAGSResultRead    Scope = ltiwire.ScopeResultReadOnly
	ScopeAGSScore         Scope = ltiwire.ScopeScore
	DefaultToolDeployment       = "1"
)

// ToolRegistrationSpec describes one external LTI 1.3 tool that the integrator, acting as a
// learning platform, launches (platform mode).
type ToolRegistrationSpec struct {
	// Name is a human-readable name for the tool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// ClientID is the OAuth2 client_id of the tool at this platform. When omitted, the
	// registration's UID is used; status.clientId shows the value in force either way.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	ClientID string `json:"clientId,omitempty"`

	// LoginURL is the tool's OIDC login initiation URL (third-party initiated login).
	// +required
	LoginURL EndpointURL `json:"loginUrl"`

	// RedirectionURIs are the tool's launch URLs: the redirect_uri of an authorization request
	// must be one of them, byte for byte.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	RedirectionURIs []EndpointURL `json:"redirectionUris"`

	// TargetLinkURI is the default target_link_uri of resource-link launches.
	// +required
	TargetLinkURI EndpointURL `json:"targetLinkUri"`

	// DeepLinkingURL is the target_link_uri of deep-linking launches; empty means the tool
	// takes no deep-linking requests.
	// +optional
	DeepLinkingURL EndpointURL `json:"deepLinkingUrl,omitempty"`

	// AuthConfig is the tool's public key, which verifies its client assertions and
	// deep-linking responses.
	// +required
	AuthConfig AuthConfig `json:"authConfig"`

	// DeploymentID is the deployment_id of the tool's launches.
	// +optional
	// +kubebuilder:default="1"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	DeploymentID string `json:"deploymentId,omitempty"`

	// Scopes are the LTI Advantage scopes the tool may be granted at the token endpoint.
	// Empty grants none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	Scopes []Scope `json:"scopes,omitempty"`

	// Custom are custom parameters sent in every launch of the tool (the LTI custom claim),
	// as an LMS administrator sets them per tool. The launch's own custom parameters win
	// over these. A value that is exactly a substitution variable ("$User.id",
	// "$Context.id", "$ResourceLink.id", "$Person.name.full"...) is replaced by the launch's
	// value; unknown variables, and variables the launch has no value for, are sent as
	// written. Keys are 1 to 128 letters, digits, '_', '.' or '-'; values at most 1024
	// characters.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9_.-]{1,128}$'))",message="custom keys must be 1 to 128 letters, digits, '_', '.' or '-'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 1024)",message="custom values must be at most 1024 characters"
	Custom map[string]string `json:"custom,omitempty"`

	// Active says whether the tool may be launched and may obtain access tokens.
	// +optional
	// +kubebuilder:default=true
	Active *bool `json:"active,omitempty"`

	// DevMode allows plain http URLs for this registration (local tools).
	// +optional
	DevMode bool `json:"devMode,omitempty"`

	// PlatformDataURL, when set, is the base URL of the integrator's platform data API for
	// this tool's Names and Roles and Assignment and Grades calls served by ltiop, instead of
	// the operator's platformDataUrl.
	// +optional
	PlatformDataURL EndpointURL `json:"platformDataUrl,omitempty"`
}

// IsActive reports whether the tool may be launched (true when unset).
func (s *ToolRegistrationSpec) IsActive() bool {
	return s.Active == nil || *s.Active
}

// Deployment is the deployment_id in force.
func (s *ToolRegistrationSpec) Deployment() string {
	if s.DeploymentID == "" {
		return DefaultToolDeployment
	}
	return s.DeploymentID
}

// EffectiveClientID is spec.clientId, or the registration's UID when that is empty.
func (t *ToolRegistration) EffectiveClientID() string {
	if t.Spec.ClientID != "" {
		return t.Spec.ClientID
	}
	return string(t.UID)
}

// ToolRegistrationStatus is what the operator observed and what the tool vendor must
// configure on the tool's side.
type ToolRegistrationStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, plus Reconciling and Stalled as kstatus reads them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Issuer is the platform's issuer (the iss of the id_tokens the tool receives).
	// +optional
	Issuer string `json:"issuer,omitempty"`

	// ClientID is the tool's client_id (spec.clientId, or generated).
	// +optional
	ClientID string `json:"clientId,omitempty"`

	// DeploymentID is the deployment_id of the tool's launches.
	// +optional
	DeploymentID string `json:"deploymentId,omitempty"`

	// AuthorizationEndpoint is the platform's OIDC authorization endpoint.
	// +optional
	AuthorizationEndpoint string `json:"authorizationEndpoint,omitempty"`

	// TokenEndpoint is the platform's OAuth2 token endpoint (also the client assertion audience).
	// +optional
	TokenEndpoint string `json:"tokenEndpoint,omitempty"`

	// JWKSURL is the platform's public key set.
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`

	// LaunchHealth is the time of the tool's last successful launch (an authorization
	// request ltiop answered) and the last request of the tool ltiop refused: an
	// authorization request, a token request, a deep-linking response or a service call.
	// Written by the web server's replicas at most once a minute each, only forward in time.
	// +optional
	LaunchHealth *LaunchHealth `json:"launchHealth,omitempty"`
}

// ToolRegistration is one external LTI tool the integrator launches as a platform.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=toolreg,categories=lti
// +kubebuilder:selectablefield:JSONPath=`.spec.clientId`
// +kubebuilder:selectablefield:JSONPath=`.status.clientId`
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Client ID",type=string,JSONPath=`.status.clientId`
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.spec.active`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Last Launch",type=date,JSONPath=`.status.launchHealth.lastLaunchTime`
// +kubebuilder:printcolumn:name="Last Error",type=string,JSONPath=`.status.launchHealth.lastRefusal.code`
// +kubebuilder:printcolumn:name="Login URL",type=string,JSONPath=`.spec.loginUrl`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ToolRegistration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ToolRegistrationSpec   `json:"spec"`
	Status ToolRegistrationStatus `json:"status,omitempty"`
}

// ToolRegistrationList is a list of ToolRegistration.
// +kubebuilder:object:root=true
type ToolRegistrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolRegistration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ToolRegistration{}, &ToolRegistrationList{})
}
