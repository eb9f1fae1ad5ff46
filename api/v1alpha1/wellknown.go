package v1alpha1

// Labels, Secret layout and condition vocabulary shared by the controller and the web server.
const (
	// LabelManagedBy marks every Secret the operator owns; the manager caches only those.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on ltiop's Secrets.
	ManagedByValue = "ltiop"
	// LabelPlatformRegistration names the PlatformRegistration a key Secret belongs to.
	LabelPlatformRegistration = "lti.ltiop.dev/platform-registration"

	// LabelOrigin on a PlatformRegistration or ToolRegistration says who wrote it. Only
	// dynamic registration sets it (to OriginDynamicRegistration): its URLs were handed over
	// by the LMS or the tool itself, so ltiop fetches them under dynamic registration's
	// outbound allowance (dynamicRegistration.allowCidrs), never outboundAllowCidrs. A
	// PlatformRegistration was moreover asked for without a credential, so it gets no key
	// until activated, is bounded in number, and expires when never activated. Without the
	// label, a registration is trusted (kubectl, the platforms and tools APIs): removing it
	// vouches for its URLs. A label rather than a status field: it is a fact of the object's
	// creation that no controller can observe again, kubectl selects by it (-l), and it
	// survives a backup and restore that drops status.
	LabelOrigin = "lti.ltiop.dev/origin"
	// OriginDynamicRegistration is LabelOrigin on registrations written by /lti/register
	// and /lti/platform/register.
	OriginDynamicRegistration = "dynamic-registration"

	// SecretTypeToolKey is the type of the Secret holding a registration's private key.
	SecretTypeToolKey = "lti.ltiop.dev/tool-key"
	// SecretKeyPrivateKey is the Secret data key of the PKCS#8 PEM private key.
	SecretKeyPrivateKey = "private-key.pem"
	// SecretKeyKID is the Secret data key of the key id.
	SecretKeyKID = "kid"
)

// The service Secret: ltiop's own keys, which the controller creates and rotates and the web
// server follows through its cache.
const (
	// DefaultServiceSecretName is the name of the service Secret unless configured otherwise.
	DefaultServiceSecretName = "ltiop-service"
	// SecretTypeService is the type of the service Secret.
	SecretTypeService = "lti.ltiop.dev/service"
	// SecretKeySealingKeyring is the data key of the sealing keyring (JSON: an array of
	// {"id","secret","notBefore","created"}).
	SecretKeySealingKeyring = "keyring.json"
	// SecretKeyPlatformKeys is the data key of the platform signing keys (JSON: an array of
	// {"kid","privateKey","notBefore","created"}).
	SecretKeyPlatformKeys = "platform-keys.json"

	// LabelComponent names the part of ltiop a resource belongs to.
	LabelComponent = "app.kubernetes.io/component"
	// ComponentServiceKeys is LabelComponent on the service Secret.
	ComponentServiceKeys = "service-keys"

	// AnnotationRotateSealingKey asks for a new sealing key: set it to a new value (a date,
	// a ticket number) and the controller adds a key, then copies the value to
	// AnnotationRotatedSealingKey.
	AnnotationRotateSealingKey = "lti.ltiop.dev/rotate-sealing-key"
	// AnnotationRotatedSealingKey is the value of AnnotationRotateSealingKey last served.
	AnnotationRotatedSealingKey = "lti.ltiop.dev/rotated-sealing-key"
	// AnnotationRotatePlatformKey asks for a new platform signing key, like
	// AnnotationRotateSealingKey; the value served is copied to AnnotationRotatedPlatformKey.
	AnnotationRotatePlatformKey = "lti.ltiop.dev/rotate-platform-key"
	// AnnotationRotatedPlatformKey is the value of AnnotationRotatePlatformKey last served.
	AnnotationRotatedPlatformKey = "lti.ltiop.dev/rotated-platform-key"

	// AnnotationRotateKey on a PlatformRegistration asks for a new tool key, like
	// AnnotationRotateSealingKey: set it to a new value and the controller starts a rotation
	// (even for an LMS that holds a pasted key); status.keyRotation.lastRequest records the
	// value served.
	AnnotationRotateKey = "lti.ltiop.dev/rotate-key"

	// Tool-key Secret: the rotation state, besides SecretKeyPrivateKey (the key that signs).
	// SecretKeyNextPrivateKey is the next key (published, not signing yet) and
	// SecretKeyRetiringPrivateKey the one before (published, no longer signing). The
	// annotations hold their times (RFC 3339).
	SecretKeyNextPrivateKey      = "next-private-key.pem"
	SecretKeyRetiringPrivateKey  = "retiring-private-key.pem"
	SecretKeyNextKID             = "next-kid"
	SecretKeyRetiringKID         = "retiring-kid"
	AnnotationKeySignsFrom       = "lti.ltiop.dev/key-signs-from"
	AnnotationKeyCreated         = "lti.ltiop.dev/key-created"
	AnnotationNextKeySignsFrom   = "lti.ltiop.dev/next-key-signs-from"
	AnnotationNextKeyCreated     = "lti.ltiop.dev/next-key-created"
	AnnotationRetiringKeyUntil   = "lti.ltiop.dev/retiring-key-until"
	AnnotationRetiringKeyCreated = "lti.ltiop.dev/retiring-key-created"
	// AnnotationRotateKeyServed on the tool-key Secret is the value of AnnotationRotateKey
	// last served, written by the Secret write that served it.
	AnnotationRotateKeyServed = "lti.ltiop.dev/rotate-key-served"

	// AnnotationRefreshKeySet on a PlatformRegistration or a ToolRegistration asks every
	// replica to drop its cached copy of the peer's key set (spec.authConfig, JWK_SET) at
	// once: set it to a new value (a date, a ticket number) when the LMS or the tool withdrew
	// a key, compromised perhaps, that ltiop would otherwise accept from its cache until the
	// set's max-age (up to 24 h, or an hour more while refetches fail). Each replica's
	// informer sees the change, so each drops its own copy; the next verification fetches
	// the set again.
	AnnotationRefreshKeySet = "lti.ltiop.dev/refresh-key-set"

	// AnnotationKeySetAlias on a PlatformRegistration is a second name of its key set
	// (/lti/keys/<alias>): dynamic registration tells the LMS the key-set URL before the
	// LMS answers with its client_id, so when the answer names an existing registration, the
	// name sent is kept here and served too. The registration's own name always works.
	AnnotationKeySetAlias = "lti.ltiop.dev/key-set-alias"
)

// Condition types, kstatus-compatible: Ready is the summary, Reconciling means work is under
// way, Stalled means the spec must change before the registration can become Ready.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
	// ConditionOAuth2Ready says whether the OAuth2 broker can serve the registration; it is
	// present only when spec.oauth2 is set, and does not affect Ready (launches work either way).
	ConditionOAuth2Ready = "OAuth2Ready"
	// ConditionKeyRotating is True while a rotation of the tool key is under way (a next or
	// a retiring key is published); False says whether and when the next one comes. It does
	// not affect Ready.
	ConditionKeyRotating = "KeyRotating"
	// ConditionLTI11ConsumerKeyUnique says whether the registration is the only one holding
	// its LTI 1.1 consumer key (spec.lti11.consumerKey); present only when spec.lti11 is set.
	// False (reason AmbiguousConsumerKey) names the other holders: a 1.1 launch carries
	// nothing else to choose a registration by, so launches with that key are refused until
	// one registration holds it. It does not affect Ready: LTI 1.3 launches are not concerned.
	ConditionLTI11ConsumerKeyUnique = "LTI11ConsumerKeyUnique"
)

// The reachability probe's conditions on a PlatformRegistration (issue #27): whether the
// LMS's key set and its authentication and token endpoints answered when last checked.
// They do not affect Ready: an LMS that is down for a moment does not make its
// registration less valid. Reasons are platformcheck's (NotFound, TLSError, Timeout,
// DNSError, Unreachable, NotAllowed, InvalidKeySet, NoRSAKey, HTTPError, InvalidURL,
// Failed), Reachable when the check passed, StaticKey when there is no key set to fetch.
const (
	ConditionKeySetReachable    = "KeySetReachable"
	ConditionEndpointsReachable = "EndpointsReachable"
	ReasonReachable             = "Reachable"
	ReasonStaticKey             = "StaticKey"
	// AnnotationReachabilityProbe set to "off" on a PlatformRegistration stops the periodic
	// probe of its LMS (its conditions are removed); POST /api/platforms/{id}/check still works.
	AnnotationReachabilityProbe = "lti.ltiop.dev/reachability-probe"
)

// Data keys of the OAuth2 client Secret.
const (
	OAuth2SecretClientID     = "client_id"
	OAuth2SecretClientSecret = "client_secret"
)

// Reasons used on the conditions. They are stable: tools and alerts may match on them.
const (
	ReasonReady                 = "Ready"
	ReasonInvalidAuthConfig     = "InvalidAuthConfig"
	ReasonInsecureURL           = "InsecureURL"
	ReasonDuplicateRegistration = "DuplicateRegistration"
	ReasonKeySecretConflict     = "KeySecretConflict"
	ReasonKeyCreated            = "KeyCreated"
	ReasonKeyRegenerated        = "KeyRegenerated"
	// ReasonAwaitingActivation: a dynamic registration that was never active has no key yet
	// (not an error; activating it makes the key).
	ReasonAwaitingActivation = "AwaitingActivation"
	// ReasonExpired: a dynamic registration never activated within its time was deleted.
	ReasonExpired                = "Expired"
	ReasonOAuth2Configured       = "Configured"
	ReasonOAuth2SecretMissing    = "SecretMissing"
	ReasonOAuth2SecretIncomplete = "SecretIncomplete"
	ReasonOAuth2URLsRequired     = "URLsRequired"
	// ReasonInvalidRedirectionURI: a tool's redirection URI cannot be used in an OAuth2
	// authorization response (RFC 6749 §3.1.2 forbids a fragment).
	ReasonInvalidRedirectionURI = "InvalidRedirectionURI"
	// ReasonConsumerKeyUnique and ReasonAmbiguousConsumerKey are the reasons of
	// ConditionLTI11ConsumerKeyUnique.
	ReasonConsumerKeyUnique    = "Unique"
	ReasonAmbiguousConsumerKey = "AmbiguousConsumerKey"
)

// Reasons of the KeyRotating condition and the rotation events.
const (
	ReasonNextKeyPublished  = "NextKeyPublished"  // True: the next key is published, not signing yet
	ReasonSwitchDeferred    = "SwitchDeferred"    // True: the next key waits for the retiring key to go
	ReasonOldKeyRetiring    = "OldKeyRetiring"    // True: the new key signs, the old one is still published
	ReasonRotationScheduled = "RotationScheduled" // False: the next automatic rotation is at status.keyRotation.nextRotation
	ReasonRotationDisabled  = "RotationDisabled"  // False: no spec.keyRotation.every
	ReasonPastedKey         = "PastedKeyNotRotated"
	ReasonKeyRotationStart  = "KeyRotationStarted" // event: a next key was published
	ReasonKeyRotated        = "KeyRotated"         // event: the next key signs
	ReasonKeyRetired        = "KeyRetired"         // event: the old key left the key set
)

// LTI11SecretKey is the default data key of an LTI 1.1 shared-secret Secret.
const LTI11SecretKey = "secret"
