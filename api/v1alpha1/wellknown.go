package v1alpha1

// Labels, Secret layout and condition vocabulary shared by the controller and the web server.
const (
	// LabelManagedBy marks every Secret the operator owns; the manager caches only those.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on ltiop's Secrets.
	ManagedByValue = "ltiop"
	// LabelPlatformRegistration names the PlatformRegistration a key Secret belongs to.
	LabelPlatformRegistration = "lti.ltiop.dev/platform-registration"

	// SecretTypeToolKey is the type of the Secret holding a registration's private key.
	SecretTypeToolKey = "lti.ltiop.dev/tool-key"
	// SecretKeyPrivateKey is the Secret data key of the PKCS#8 PEM private key.
	SecretKeyPrivateKey = "private-key.pem"
	// SecretKeyKID is the Secret data key of the key id.
	SecretKeyKID = "kid"
)

// Condition types, kstatus-compatible: Ready is the summary, Reconciling means work is under
// way, Stalled means the spec must change before the registration can become Ready.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons used on the conditions. They are stable: tools and alerts may match on them.
const (
	ReasonReady                 = "Ready"
	ReasonKeyPending            = "KeyPending"
	ReasonInvalidAuthConfig     = "InvalidAuthConfig"
	ReasonInsecureURL           = "InsecureURL"
	ReasonDuplicateRegistration = "DuplicateRegistration"
	ReasonKeySecretConflict     = "KeySecretConflict"
	ReasonKeyCreated            = "KeyCreated"
	ReasonKeyRegenerated        = "KeyRegenerated"
)
