// Package controllers holds one reconciler per kind. Controllers keep keys and status;
// they never serve HTTP.
package controllers

import (
	"cmp"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	goruntime "runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/registration"
	"github.com/ltiop/ltiop/internal/urls"
)

// IndexIssuerClient indexes PlatformRegistrations by their (url, clientId).
const IndexIssuerClient = "spec.issuerClient"

// platformElection keeps the older of two PlatformRegistrations with the same (url,
// clientId): one issuer serves many customers, so the issuer alone is no identity.
var platformElection = newElection[ltiv1.PlatformRegistrationList](IndexIssuerClient,
	func(reg *ltiv1.PlatformRegistration) string { return string(reg.Spec.URL) + "\x00" + reg.Spec.ClientID },
	func(older, reg *ltiv1.PlatformRegistration) string {
		return fmt.Sprintf("PlatformRegistration %s already registers url %s with clientId %s; this newer one is not used.",
			older.Name, reg.Spec.URL, reg.Spec.ClientID)
	})

// PlatformRegistrationReconciler keeps, for every PlatformRegistration, the tool key the
// LMS trusts (in an owned Secret) and a status that says whether the registration is usable.
type PlatformRegistrationReconciler struct {
	client.Client
	// APIReader reads from the API server directly, so a stale cache never makes two keys.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// PublicURL is the external base URL of the web server, used for the status URLs.
	PublicURL string
	// DevMode accepts http URLs in every registration.
	DevMode bool
	// PendingExpiry is how long a dynamic registration that was never activated is kept;
	// 0 keeps it forever.
	PendingExpiry time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Workers is how many registrations are reconciled at once (DefaultKeyWorkers when 0).
	// Making a key is ~80 ms of one core, so one worker caps new registrations at ~13/s;
	// the work queue never hands one registration to two workers, and createKey re-reads
	// through APIReader, so parallel workers still make one key per registration.
	Workers int
	// ParseKey reads a key Secret's private key (keys.ParsePrivateKey when nil); tests
	// count its calls.
	ParseKey func(pemBytes []byte) (*rsa.PrivateKey, error)
}

// DefaultKeyWorkers is twice the cores, at least 2 and at most 16: enough to keep every core
// generating keys while other workers wait on the API server, and no more, so key
// generation cannot starve the web server of the same process.
func DefaultKeyWorkers() int { return min(max(2*goruntime.NumCPU(), 2), 16) }

// +kubebuilder:rbac:groups=lti.ltiop.dev,namespace=ltiop-system,resources=platformregistrations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=lti.ltiop.dev,namespace=ltiop-system,resources=platformregistrations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=lti.ltiop.dev,namespace=ltiop-system,resources=platformregistrations/finalizers,verbs=update
// +kubebuilder:rbac:groups="",namespace=ltiop-system,resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,namespace=ltiop-system,resources=events,verbs=create;patch

// Reconcile makes sure the registration's key exists and its status is current.
func (r *PlatformRegistrationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	reg := &ltiv1.PlatformRegistration{}
	if err := r.Get(ctx, req.NamespacedName, reg); err != nil {
		if apierrors.IsNotFound(err) {
			keyAges.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !reg.DeletionTimestamp.IsZero() {
		keyAges.forget(req.NamespacedName)
		return ctrl.Result{}, nil // the key Secret goes with it through its owner reference
	}

	next := reg.DeepCopy()
	status := &next.Status
	status.LoginURL = r.PublicURL + paths.Login
	status.LaunchURL = r.PublicURL + paths.Launch
	status.JWKSURL = r.PublicURL + paths.KeySet(reg.Name) // its own key set, not every tenant's
	recordFirstActivation(reg, status, r.now())
	if reg.AwaitingActivation() {
		return r.awaitActivation(ctx, reg, next)
	}

	problem, err := r.ensureKey(ctx, reg, status)
	if err != nil {
		return ctrl.Result{}, err
	}
	var rotateAfter time.Duration
	if problem == nil {
		if rotateAfter, err = r.rotateKey(ctx, reg, status); err != nil {
			return ctrl.Result{}, err
		}
		problem = r.checkSpec(reg)
	}
	if problem == nil {
		if problem, err = platformElection.check(ctx, r.Client, reg); err != nil {
			return ctrl.Result{}, err
		}
	}
	readyMessage := "The registration is ready and launches from it are accepted."
	if !reg.Spec.IsActive() {
		readyMessage = "The registration is ready but inactive: launches are refused until it is activated."
	}
	news := setReadiness(&status.ObservedGeneration, &status.Conditions, reg.Generation, problem, readyMessage)
	if err := r.setOAuth2Condition(ctx, reg, status); err != nil {
		return ctrl.Result{}, err
	}
	ambiguous, err := r.setConsumerKeyCondition(ctx, reg, status)
	if err != nil {
		return ctrl.Result{}, err
	}
	after := recheck(reg, problem)
	if rotateAfter > 0 && (after == 0 || rotateAfter < after) {
		after = rotateAfter
	}
	return statusWritten(writeStatus(ctx, r.Client, r.Recorder, reg, next, news, ambiguous), after)
}

// conflictRecheck is how often a registration blocked by a foreign Secret looks again: that
// Secret is not cached (it is not ours), so its removal raises no event.
const conflictRecheck = 30 * time.Second

// oauth2Recheck is how often the OAuth2 client Secret is looked at again: it is the
// integrator's, not cached, so its changes raise no event.
const oauth2Recheck = 5 * time.Minute

func recheck(reg *ltiv1.PlatformRegistration, p *problem) time.Duration {
	switch {
	case p != nil && p.reason == ltiv1.ReasonKeySecretConflict:
		return conflictRecheck
	case reg.Spec.OAuth2 != nil:
		return oauth2Recheck
	}
	return 0
}

// setOAuth2Condition reports whether the OAuth2 broker can serve the registration.
func (r *PlatformRegistrationReconciler) setOAuth2Condition(ctx context.Context, reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus) error {
	oc := reg.Spec.OAuth2
	if oc == nil {
		meta.RemoveStatusCondition(&status.Conditions, ltiv1.ConditionOAuth2Ready)
		return nil
	}
	cond := metav1.Condition{Type: ltiv1.ConditionOAuth2Ready, Status: metav1.ConditionTrue,
		ObservedGeneration: reg.Generation, Reason: ltiv1.ReasonOAuth2Configured,
		Message: "The OAuth2 client is configured; /oauth/start/" + reg.Name + " starts the flow."}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: reg.Namespace, Name: oc.SecretName}, secret)
	_, _, urlsOK := oc.Endpoints(string(reg.Spec.URL))
	switch {
	case apierrors.IsNotFound(err):
		cond.Status, cond.Reason = metav1.ConditionFalse, ltiv1.ReasonOAuth2SecretMissing
		cond.Message = fmt.Sprintf("Secret %s does not exist.", oc.SecretName)
	case err != nil:
		return err
	case len(secret.Data[ltiv1.OAuth2SecretClientID]) == 0 || len(secret.Data[ltiv1.OAuth2SecretClientSecret]) == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, ltiv1.ReasonOAuth2SecretIncomplete
		cond.Message = fmt.Sprintf("Secret %s needs the data keys %s and %s.", oc.SecretName,
			ltiv1.OAuth2SecretClientID, ltiv1.OAuth2SecretClientSecret)
	case !urlsOK:
		cond.Status, cond.Reason = metav1.ConditionFalse, ltiv1.ReasonOAuth2URLsRequired
		cond.Message = "The LMS's authorize and token URLs cannot be derived from the issuer; set spec.oauth2.authorizeUrl and tokenUrl."
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return nil
}

// KeySecretName is the name of the Secret holding a registration's key.
func KeySecretName(registration string) string {
	const suffix = "-tool-key"
	if len(registration)+len(suffix) <= 253 {
		return registration + suffix
	}
	sum := sha256.Sum256([]byte(registration))
	return registration[:253-len(suffix)-11] + "-" + hex.EncodeToString(sum[:5]) + suffix
}

// ensureKey finds or creates the registration's key Secret and records the key in status.
// A valid key is never replaced.
func (r *PlatformRegistrationReconciler) ensureKey(ctx context.Context, reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus) (*problem, error) {
	name := KeySecretName(reg.Name)
	secret := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: reg.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return r.createKey(ctx, reg, status, name)
	case err != nil:
		return nil, err
	}

	if !metav1.IsControlledBy(secret, reg) {
		if secret.Labels[ltiv1.LabelPlatformRegistration] == reg.Name && isOwnedByAPlatformRegistration(secret) {
			// Left by an earlier registration of the same name, awaiting garbage collection.
			if err := r.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
			return r.createKey(ctx, reg, status, name)
		}
		return &problem{ltiv1.ReasonKeySecretConflict, fmt.Sprintf(
			"Secret %s exists and does not belong to this registration; delete or rename it.", name)}, nil
	}

	// Read and checked before, and not changed since (any change to a Secret changes its
	// resourceVersion): parsing 10,000 keys again after every restart cost the elected
	// replica seconds of CPU, and the logins it served meanwhile their p99.
	if secret.ResourceVersion != "" && secret.ResourceVersion == status.KeySecretResourceVersion &&
		status.KeySecretName == name && status.KID != "" && status.PublicKey != "" {
		return nil, nil
	}
	parse := r.ParseKey
	if parse == nil {
		parse = keys.ParsePrivateKey
	}
	private, err := parse(secret.Data[ltiv1.SecretKeyPrivateKey])
	if err != nil {
		// The data was damaged out of band: an unreadable key signs nothing, so replace it.
		r.Recorder.Eventf(reg, secret, corev1.EventTypeWarning, ltiv1.ReasonKeyRegenerated, "RegenerateKey",
			"Key Secret %s holds no readable key (%v); a new key was generated. The LMS must be given the new public key unless it reads the JWKS URL.", name, err)
		return nil, r.writeKey(ctx, reg, status, secret, false)
	}
	prev := *status
	if err := recordKey(status, secret, private); err != nil {
		return nil, err
	}
	if prev.KeySecretResourceVersion != "" && prev.KeySecretName == status.KeySecretName &&
		prev.KID == status.KID && prev.PublicKey == status.PublicKey {
		// The same key, in a Secret changed otherwise (a label, an annotation): not worth a
		// status write; this registration's key is parsed at each reconcile until it changes.
		status.KeySecretResourceVersion = prev.KeySecretResourceVersion
	}
	return nil, nil
}

func isOwnedByAPlatformRegistration(secret *corev1.Secret) bool {
	owner := metav1.GetControllerOf(secret)
	return owner != nil && owner.Kind == "PlatformRegistration" && owner.APIVersion == ltiv1.GroupVersion.String()
}

// createKey creates the key Secret. The owner is re-read from the API server first: if the
// cache were stale, the registration could be gone, or its key could already exist.
func (r *PlatformRegistrationReconciler) createKey(ctx context.Context, reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus, name string) (*problem, error) {
	fresh := &ltiv1.PlatformRegistration{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(reg), fresh); err != nil {
		return nil, err
	}
	if fresh.UID != reg.UID {
		return nil, fmt.Errorf("registration %s was replaced while reconciling", reg.Name)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: reg.Namespace, Name: name}}
	hadKey := fresh.Status.KID != ""
	if err := r.writeKey(ctx, reg, status, secret, true); err != nil {
		if apierrors.IsAlreadyExists(err) {
			existing := &corev1.Secret{}
			if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(secret), existing); gerr == nil &&
				existing.Labels[ltiv1.LabelManagedBy] != ltiv1.ManagedByValue {
				return &problem{ltiv1.ReasonKeySecretConflict, fmt.Sprintf(
					"Secret %s exists and does not belong to this registration; delete or rename it.", name)}, nil
			}
		}
		return nil, err // the cache is behind; the retry finds the Secret
	}
	if hadKey {
		r.Recorder.Eventf(reg, secret, corev1.EventTypeWarning, ltiv1.ReasonKeyRegenerated, "RegenerateKey",
			"Key Secret %s was deleted; a new key (kid %s) was generated. The LMS must be given the new public key unless it reads the JWKS URL.", name, status.KID)
	} else {
		r.Recorder.Eventf(reg, secret, corev1.EventTypeNormal, ltiv1.ReasonKeyCreated, "CreateKey",
			"Generated RSA-%d key %s in Secret %s.", keys.Bits, status.KID, name)
	}
	return nil, nil
}

// writeKey generates a key into secret and creates or updates it.
func (r *PlatformRegistrationReconciler) writeKey(ctx context.Context, reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus, secret *corev1.Secret, create bool) error {
	private, err := keys.Generate()
	if err != nil {
		return err
	}
	pemBytes, err := keys.EncodePrivateKey(private)
	if err != nil {
		return err
	}
	kid, err := keys.KID(&private.PublicKey)
	if err != nil {
		return err
	}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ltiv1.LabelManagedBy] = ltiv1.ManagedByValue
	secret.Labels[ltiv1.LabelPlatformRegistration] = reg.Name
	secret.Data = map[string][]byte{ltiv1.SecretKeyPrivateKey: pemBytes, ltiv1.SecretKeyKID: []byte(kid)}
	stampNewKey(secret, r.now())
	if err := controllerutil.SetControllerReference(reg, secret, r.Scheme); err != nil {
		return err
	}
	if create {
		secret.Type = ltiv1.SecretTypeToolKey
		err = r.Create(ctx, secret)
	} else {
		err = r.Update(ctx, secret)
	}
	if err != nil {
		return err
	}
	return recordKey(status, secret, private)
}

// recordKey writes the key's Secret (name and the resourceVersion found valid), kid and
// public half into status.
func recordKey(status *ltiv1.PlatformRegistrationStatus, secret *corev1.Secret, private *rsa.PrivateKey) error {
	kid, err := keys.KID(&private.PublicKey)
	if err != nil {
		return err
	}
	publicPEM, err := keys.PublicKeyPEM(&private.PublicKey)
	if err != nil {
		return err
	}
	status.KeySecretName, status.KID, status.PublicKey = secret.Name, kid, publicPEM
	status.KeySecretResourceVersion = secret.ResourceVersion
	return nil
}

// checkSpec validates what the schema cannot: https outside dev mode, and the platform key.
func (r *PlatformRegistrationReconciler) checkSpec(reg *ltiv1.PlatformRegistration) *problem {
	allowHTTP := r.DevMode || reg.Spec.DevMode
	for _, f := range []struct{ field, value string }{
		{"url", string(reg.Spec.URL)},
		{"authenticationEndpoint", string(reg.Spec.AuthenticationEndpoint)},
		{"accesstokenEndpoint", string(reg.Spec.AccesstokenEndpoint)},
	} {
		if err := urls.Check(f.value, allowHTTP); err != nil {
			return &problem{ltiv1.ReasonInsecureURL, fmt.Sprintf("spec.%s: %v.", f.field, err)}
		}
	}
	if u := string(reg.Spec.NoticeWebhookURL); u != "" {
		if err := urls.Check(u, allowHTTP); err != nil {
			return &problem{ltiv1.ReasonInsecureURL, fmt.Sprintf("spec.noticeWebhookUrl: %v.", err)}
		}
	}
	if err := registration.ValidateKey(reg.Spec.AuthConfig, allowHTTP, registration.OwnerPlatform); err != nil {
		return &problem{ltiv1.ReasonInvalidAuthConfig, fmt.Sprintf("spec.authConfig: %v.", err)}
	}
	return nil
}

// SetupWithManager registers the controller; the field index must be added by the caller
// (see SetupIndexes) before the manager starts.
func (r *PlatformRegistrationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Labels count too: removing the dynamic-registration origin label makes a pending
		// registration trusted (it gets its key and no longer expires).
		// So does the rotation annotation (lti.ltiop.dev/rotate-key).
		For(&ltiv1.PlatformRegistration{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, rotateKeyAnnotationChanged))).
		Owns(&corev1.Secret{}).
		// A registration's peers with the same (url, clientId) may change state when it
		// appears, changes or goes away.
		Watches(&ltiv1.PlatformRegistration{}, handler.EnqueueRequestsFromMapFunc(platformElection.enqueuePeers(r.Client)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// So may the other holders of its LTI 1.1 consumer key (lti11.go).
		Watches(&ltiv1.PlatformRegistration{}, handler.EnqueueRequestsFromMapFunc(consumerKeyHolders.enqueuePeers(r.Client)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{RateLimiter: rateLimiter(), MaxConcurrentReconciles: cmp.Or(r.Workers, DefaultKeyWorkers())}).
		Named("platformregistration").
		Complete(r)
}

// rotateKeyAnnotationChanged passes updates that change the annotation asking for a rotation.
var rotateKeyAnnotationChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetAnnotations()[ltiv1.AnnotationRotateKey] != e.ObjectNew.GetAnnotations()[ltiv1.AnnotationRotateKey]
}}

// SetupIndexes adds the field indexes the controller and the web server read.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &ltiv1.PlatformRegistration{}, IndexIssuerClient, platformElection.indexValue); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &ltiv1.PlatformRegistration{}, IndexLTI11ConsumerKey, consumerKeyHolders.indexValue); err != nil {
		return err
	}
	return mgr.GetFieldIndexer().IndexField(ctx, &ltiv1.ToolRegistration{}, IndexToolClientID, toolElection.indexValue)
}
