package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
)

// Event reasons and timings of the service Secret. Its layout (type, data keys, labels,
// rotation annotations) is in api/v1alpha1/wellknown.go.
const (
	ReasonSealingKeyringCreated     = "SealingKeyringCreated"
	ReasonSealingKeyringRegenerated = "SealingKeyringRegenerated"
	ReasonSealingKeyRotated         = "SealingKeyRotated"
	ReasonSealingKeysRetired        = "SealingKeysRetired"
	ReasonServiceSecretConflict     = "ServiceSecretConflict"
	ReasonPlatformKeyCreated        = "PlatformKeyCreated"
	ReasonPlatformKeyRegenerated    = "PlatformKeyRegenerated"
	ReasonPlatformKeyRotated        = "PlatformKeyRotated"
	ReasonPlatformKeysRetired       = "PlatformKeysRetired"

	// DefaultActivationDelay is how long a new key only opens before it seals: every
	// replica's informer has it by then.
	DefaultActivationDelay = 60 * time.Second
	// DefaultPlatformKeyActivationDelay is how long a new platform signing key is only
	// published before it signs: tools may cache ltiop's platform JWKS for the 5 minutes its
	// response allows, and every replica's informer has the key well before then.
	DefaultPlatformKeyActivationDelay = 10 * time.Minute
	// DefaultRetireAfter is how long a key stays after its successor starts sealing (or
	// signing): the longest-lived token, the ltik, lives 24 hours.
	DefaultRetireAfter = 25 * time.Hour
)

// serviceSecretRecheck is how often a foreign Secret in the way is looked at again: it is
// not labelled, so not cached, and its removal raises no event.
const serviceSecretRecheck = time.Minute

// ServiceSecretReconciler keeps the service Secret, which holds two key sets:
//
//   - the sealing keyring of ltiks, service keys, states and message hints
//     (ltiv1.SecretKeySealingKeyring), rotated with ltiv1.AnnotationRotateSealingKey;
//   - the platform-mode signing keys (ltiv1.SecretKeyPlatformKeys), RSA keys ltiop signs
//     id_tokens and access tokens with as a platform and publishes in its platform JWKS,
//     rotated with ltiv1.AnnotationRotatePlatformKey.
//
// For each it creates a first key, adds a key when asked to rotate, and retires keys once no
// token they made can still be in use. A key is never silently replaced: a new sealing key
// is held by every replica ActivationDelay before anyone seals with it, a new signing key is
// in the JWKS PlatformKeyActivationDelay before anyone signs with it, and the old key stays
// RetireAfter after that.
//
// It is safe with several replicas: the Secret is created after a read from the API
// server (AlreadyExists means another replica won), and updated with optimistic locking.
type ServiceSecretReconciler struct {
	client.Client
	// APIReader reads from the API server directly: the cache may be behind, and it holds
	// only labelled Secrets.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Namespace and Name locate the Secret; Name defaults to ltiv1.DefaultServiceSecretName.
	Namespace string
	Name      string
	// ActivationDelay defaults to DefaultActivationDelay, PlatformKeyActivationDelay to
	// DefaultPlatformKeyActivationDelay, RetireAfter (for both key sets) to DefaultRetireAfter.
	ActivationDelay            time.Duration
	PlatformKeyActivationDelay time.Duration
	RetireAfter                time.Duration
	// PlatformKeyRotateEvery, when set, adds a platform signing key on its own so that each
	// key signs about this long (the annotation still rotates at any time).
	PlatformKeyRotateEvery time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups="",namespace=ltiop-system,resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,namespace=ltiop-system,resources=events,verbs=create;patch

// SecretKey is the namespace and name of the service Secret.
func (r *ServiceSecretReconciler) SecretKey() types.NamespacedName {
	name := r.Name
	if name == "" {
		name = ltiv1.DefaultServiceSecretName
	}
	return types.NamespacedName{Namespace: r.Namespace, Name: name}
}

func (r *ServiceSecretReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *ServiceSecretReconciler) activationDelay() time.Duration {
	if r.ActivationDelay > 0 {
		return r.ActivationDelay
	}
	return DefaultActivationDelay
}

func (r *ServiceSecretReconciler) platformKeyActivationDelay() time.Duration {
	if r.PlatformKeyActivationDelay > 0 {
		return r.PlatformKeyActivationDelay
	}
	return DefaultPlatformKeyActivationDelay
}

func (r *ServiceSecretReconciler) retireAfter() time.Duration {
	if r.RetireAfter > 0 {
		return r.RetireAfter
	}
	return DefaultRetireAfter
}

// Reconcile creates the service Secret, or brings its key sets up to date.
func (r *ServiceSecretReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := r.SecretKey()
	if req.NamespacedName != key {
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{}
	err := r.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		// The cache may be behind, or the Secret may have lost its label: ask the API server.
		err = r.APIReader.Get(ctx, key, secret)
		if apierrors.IsNotFound(err) {
			return r.create(ctx)
		}
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !secret.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // recreated once it is gone
	}
	if secret.Type != ltiv1.SecretTypeService {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonServiceSecretConflict, "Validate",
			"Secret %s has type %q, not %q, so it cannot hold ltiop's sealing and signing keys; delete it or configure another service Secret name.",
			key.Name, secret.Type, ltiv1.SecretTypeService)
		return ctrl.Result{RequeueAfter: serviceSecretRecheck}, nil
	}
	return r.update(ctx, secret)
}

func (r *ServiceSecretReconciler) labels(secret *corev1.Secret) {
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ltiv1.LabelManagedBy] = ltiv1.ManagedByValue
	secret.Labels[ltiv1.LabelComponent] = ltiv1.ComponentServiceKeys
}

// keySet is one key set of the service Secret — the sealing keyring or the platform signing
// keys — as the controller keeps it: created, repaired, rotated on request, retired.
type keySet[K keyring.Key] struct {
	kind            keyring.Kind[K]
	rotate, rotated string // annotations: the rotation asked for, the one last served
	activationDelay time.Duration
	every           time.Duration // automatic rotation (0: on request only)
}

func (r *ServiceSecretReconciler) sealingKeys() keySet[keyring.SealingKey] {
	return keySet[keyring.SealingKey]{
		kind:   keyring.Sealing,
		rotate: ltiv1.AnnotationRotateSealingKey, rotated: ltiv1.AnnotationRotatedSealingKey,
		activationDelay: r.activationDelay(),
	}
}

func (r *ServiceSecretReconciler) platformKeys() keySet[keyring.SigningKey] {
	return keySet[keyring.SigningKey]{
		kind:   keyring.Signing,
		rotate: ltiv1.AnnotationRotatePlatformKey, rotated: ltiv1.AnnotationRotatedPlatformKey,
		activationDelay: r.platformKeyActivationDelay(),
		every:           r.PlatformKeyRotateEvery,
	}
}

// keySetChange is what was done to one key set, for the events once the Secret is written.
type keySetChange struct {
	created     string    // the id of the first key, when the set was missing
	regenerated string    // the id of the new key, when the set was unreadable
	unreadable  error     // why it was
	added       string    // the id of the key added on request
	addedFrom   time.Time // when that key starts sealing or signing
	rotateTo    string    // the rotation request served
	retired     []string  // the ids of the keys retired
	next        time.Time // when a key next activates or becomes due for retirement (zero: never)
	keys        []keyring.Info
}

func infos[K keyring.Key](keys []K) []keyring.Info {
	out := make([]keyring.Info, len(keys))
	for i, k := range keys {
		out[i] = k.Info()
	}
	return out
}

// initial returns a new key set of one key, active from now.
func (ks keySet[K]) initial(now time.Time) ([]byte, keySetChange, error) {
	k, err := ks.kind.NewKey(now, 0)
	if err != nil {
		return nil, keySetChange{}, err
	}
	data, err := ks.kind.Encode([]K{k})
	if err != nil {
		return nil, keySetChange{}, err
	}
	return data, keySetChange{created: k.Info().ID}, nil
}

// keep brings the key set of secret up to date at now: it creates or repairs it, serves a
// rotation request, and retires keys whose successor has been active retireAfter. It
// changes secret (its data and the served-rotation annotation) only where needed.
func (ks keySet[K]) keep(secret *corev1.Secret, now time.Time, retireAfter time.Duration) (keySetChange, error) {
	var c keySetChange
	dataKey := ks.kind.DataKey()
	keys, decodeErr := ks.kind.Decode(secret.Data[dataKey])
	changed := false
	if decodeErr != nil {
		// No key set yet (a Secret made by hand, by a chart or by an older ltiop), or
		// unreadable data, which is of no use: a new set, active at once (there is no older
		// key that anyone could be using instead).
		k, err := ks.kind.NewKey(now, 0)
		if err != nil {
			return c, err
		}
		keys, changed = []K{k}, true
		if _, had := secret.Data[dataKey]; had {
			c.regenerated, c.unreadable = k.Info().ID, decodeErr
		} else {
			c.created = k.Info().ID
		}
	}

	rotateTo := secret.Annotations[ks.rotate]
	if rotateTo != "" && rotateTo != secret.Annotations[ks.rotated] {
		if decodeErr == nil { // a fresh set is already a new key
			k, err := ks.kind.NewKey(now, ks.activationDelay)
			if err != nil {
				return c, err
			}
			keys, changed = append(keys, k), true
			c.added, c.addedFrom = k.Info().ID, k.Info().NotBefore
		}
		secret.Annotations[ks.rotated] = rotateTo
		c.rotateTo = rotateTo
	}

	// Automatic rotation: the newest key is published activationDelay before it would have
	// signed `every`, unless a key is already waiting to sign.
	var due time.Time
	if ks.every > 0 && c.added == "" && decodeErr == nil {
		newest := keys[len(keys)-1].Info()
		if !newest.NotBefore.After(now) {
			due = newest.NotBefore.Add(ks.every - ks.activationDelay)
			if !now.Before(due) {
				k, err := ks.kind.NewKey(now, ks.activationDelay)
				if err != nil {
					return c, err
				}
				keys, changed = append(keys, k), true
				c.added, c.addedFrom = k.Info().ID, k.Info().NotBefore
				due = time.Time{}
			}
		}
	}

	keys, retired, next := retireKeys(keys, now, retireAfter)
	next = earliest(next, due)
	c.keys = infos(keys)
	for _, k := range retired {
		c.retired = append(c.retired, k.Info().ID)
	}
	c.next = next
	if changed || len(retired) > 0 {
		data, err := ks.kind.Encode(keys)
		if err != nil {
			return c, err
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[dataKey] = data
	}
	return c, nil
}

// create makes the Secret with a sealing keyring of one key and one platform signing key,
// both active from now.
func (r *ServiceSecretReconciler) create(ctx context.Context) (ctrl.Result, error) {
	now := r.now()
	sealing, sealingChange, err := r.sealingKeys().initial(now)
	if err != nil {
		return ctrl.Result{}, err
	}
	platform, platformChange, err := r.platformKeys().initial(now)
	if err != nil {
		return ctrl.Result{}, err
	}
	nn := r.SecretKey()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name},
		Type:       ltiv1.SecretTypeService,
		Data: map[string][]byte{
			ltiv1.SecretKeySealingKeyring: sealing,
			ltiv1.SecretKeyPlatformKeys:   platform,
		},
	}
	r.labels(secret)
	if err := r.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another replica won: its keys are the ones. Look at them shortly.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	r.sealingKeyEvents(secret, sealingChange)
	r.platformKeyEvents(secret, platformChange)
	return ctrl.Result{}, nil
}

// update creates, repairs, rotates and retires the keys of an existing Secret, in one
// optimistically locked patch.
func (r *ServiceSecretReconciler) update(ctx context.Context, secret *corev1.Secret) (ctrl.Result, error) {
	now := r.now()
	orig := secret.DeepCopy()
	sealing, err := r.sealingKeys().keep(secret, now, r.retireAfter())
	if err != nil {
		return ctrl.Result{}, err
	}
	platform, err := r.platformKeys().keep(secret, now, r.retireAfter())
	if err != nil {
		return ctrl.Result{}, err
	}
	r.labels(secret)

	result := ctrl.Result{}
	if next := earliest(sealing.next, platform.next); !next.IsZero() {
		result.RequeueAfter = max(next.Sub(now), time.Second)
	}
	if equality.Semantic.DeepEqual(orig, secret) {
		platformKeyAges.set(platform.keys, now)
		return result, nil
	}
	// The optimistic lock makes a concurrent change (another replica's rotation, a user's
	// annotation) fail this patch instead of being overwritten; the retry sees it.
	patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	if err := r.Patch(ctx, secret, patch); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("service Secret changed while reconciling; retrying", "reason", err.Error())
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	r.sealingKeyEvents(secret, sealing)
	r.platformKeyEvents(secret, platform)
	platformKeyAges.set(platform.keys, now)
	return result, nil
}

// earliest returns the earlier of two instants, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// sealingKeyEvents records what was done to the sealing keyring.
func (r *ServiceSecretReconciler) sealingKeyEvents(secret *corev1.Secret, c keySetChange) {
	if c.created != "" {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeyringCreated, "CreateKeyring",
			"Created the sealing keyring with key %s.", c.created)
	}
	if c.regenerated != "" {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonSealingKeyringRegenerated, "RegenerateKeyring",
			"Secret %s held no readable sealing keyring (%v); generated a new keyring with key %s. Tokens sealed before "+
				"(ltiks, service keys, login states, message hints) can no longer be opened: users must launch again from "+
				"their LMS and background jobs need a new service key.", secret.Name, c.unreadable, c.regenerated)
	}
	if c.added != "" {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeyRotated, "RotateKey",
			"Added sealing key %s for %s=%q. It seals from %s, once every replica has it; earlier keys keep opening tokens until they are retired.",
			c.added, ltiv1.AnnotationRotateSealingKey, c.rotateTo, c.addedFrom.Format(time.RFC3339))
	}
	if len(c.retired) > 0 {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeysRetired, "RetireKeys",
			"Retired sealing key(s) %s: their successor has sealed for %s, so every token they sealed has expired.",
			strings.Join(c.retired, ", "), r.retireAfter())
	}
}

// platformKeyEvents records what was done to the platform signing keys.
func (r *ServiceSecretReconciler) platformKeyEvents(secret *corev1.Secret, c keySetChange) {
	if c.created != "" {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonPlatformKeyCreated, "CreatePlatformKey",
			"Created the platform signing key %s; it signs at once and is published in the platform JWKS.", c.created)
	}
	if c.regenerated != "" {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonPlatformKeyRegenerated, "RegeneratePlatformKey",
			"Secret %s held no readable platform signing keys (%v); generated a new key %s, which signs at once. Tools "+
				"must fetch the platform JWKS again to accept the id_tokens ltiop sends them (most do when they meet an "+
				"unknown kid; one that pinned the old key must be given the new one), and access tokens ltiop issued "+
				"before are no longer accepted.", secret.Name, c.unreadable, c.regenerated)
	}
	if c.added != "" {
		why := fmt.Sprintf("for %s=%q", ltiv1.AnnotationRotatePlatformKey, c.rotateTo)
		if c.rotateTo == "" {
			why = fmt.Sprintf("on schedule (every %s)", r.PlatformKeyRotateEvery)
		}
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonPlatformKeyRotated, "RotatePlatformKey",
			"Added platform signing key %s %s. It is in the platform JWKS now and signs from %s, once tools "+
				"that cache the JWKS have fetched it; earlier keys stay published until they are retired.",
			c.added, why, c.addedFrom.Format(time.RFC3339))
	}
	if len(c.retired) > 0 {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonPlatformKeysRetired, "RetirePlatformKeys",
			"Retired platform signing key(s) %s: their successor has signed for %s, so no token they signed is still in use.",
			strings.Join(c.retired, ", "), r.retireAfter())
	}
}

// retireKeys drops the keys whose successor (the next key in rotation order, the order in
// which keys become active) became active at least retireAfter before now; the newest key
// always stays. It returns the keys kept (in that order), those retired, and the next instant
// at which a kept key activates or becomes due for retirement (zero if none).
func retireKeys[K keyring.Key](keys []K, now time.Time, retireAfter time.Duration) (kept, retired []K, next time.Time) {
	sorted := append([]K(nil), keys...)
	keyring.Sort(sorted)
	soonest := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for i, k := range sorted {
		if i < len(sorted)-1 {
			due := sorted[i+1].Info().NotBefore.Add(retireAfter)
			if !now.Before(due) {
				retired = append(retired, k)
				continue
			}
			soonest(due)
		}
		soonest(k.Info().NotBefore)
		kept = append(kept, k)
	}
	return kept, retired, next
}

// SetupWithManager registers the controller. It watches the service Secret (the manager
// cache holds it: it is labelled) and reconciles it once when the controller starts, so a
// missing Secret is created. Client, APIReader and Recorder default to the manager's.
func (r *ServiceSecretReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Namespace == "" {
		return fmt.Errorf("the service Secret controller needs a namespace")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("ltiop")
	}
	key := r.SecretKey()
	isServiceSecret := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetNamespace() == key.Namespace && obj.GetName() == key.Name
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Secret{}, builder.WithPredicates(isServiceSecret)).
		// No event announces a Secret that does not exist: ask for one reconcile at start.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(reconcile.Request{NamespacedName: key})
			return nil
		})).
		WithOptions(controller.Options{RateLimiter: rateLimiter()}).
		Named("servicesecret").
		Complete(r)
}
