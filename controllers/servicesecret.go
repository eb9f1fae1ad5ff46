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
	"github.com/ltiop/ltiop/webserver/sessions"
)

// Labels, annotations and event reasons of the service Secret.
const (
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

	ReasonSealingKeyringCreated     = "SealingKeyringCreated"
	ReasonSealingKeyringRegenerated = "SealingKeyringRegenerated"
	ReasonSealingKeyRotated         = "SealingKeyRotated"
	ReasonSealingKeysRetired        = "SealingKeysRetired"
	ReasonServiceSecretConflict     = "ServiceSecretConflict"

	// DefaultActivationDelay is how long a new key only opens before it seals: every
	// replica's informer has it by then.
	DefaultActivationDelay = 60 * time.Second
	// DefaultRetireAfter is how long a key stays after its successor starts sealing: the
	// longest-lived token, the ltik, lives 24 hours.
	DefaultRetireAfter = 25 * time.Hour
)

// serviceSecretRecheck is how often a foreign Secret in the way is looked at again: it is
// not labelled, so not cached, and its removal raises no event.
const serviceSecretRecheck = time.Minute

// ServiceSecretReconciler keeps the service Secret: the sealing keyring of ltiks, service
// keys, states and message hints (sessions.SecretKeyKeyring). It creates the keyring, adds a
// key when asked to rotate, and retires keys once no token they sealed can still be valid.
// A key is never silently replaced: a new key is published ActivationDelay before anyone
// seals with it, and the old one stays RetireAfter after that.
//
// It is safe with several replicas: the Secret is created after a read from the API
// server (AlreadyExists means another replica won), and updated with optimistic locking.
type ServiceSecretReconciler struct {
	client.Client
	// APIReader reads from the API server directly: the cache may be behind, and it holds
	// only labelled Secrets.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Namespace and Name locate the Secret; Name defaults to sessions.DefaultSecretName.
	Namespace string
	Name      string
	// ActivationDelay defaults to DefaultActivationDelay, RetireAfter to DefaultRetireAfter.
	ActivationDelay time.Duration
	RetireAfter     time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups="",namespace=ltiop-system,resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,namespace=ltiop-system,resources=events,verbs=create;patch

// SecretKey is the namespace and name of the service Secret.
func (r *ServiceSecretReconciler) SecretKey() types.NamespacedName {
	name := r.Name
	if name == "" {
		name = sessions.DefaultSecretName
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

func (r *ServiceSecretReconciler) retireAfter() time.Duration {
	if r.RetireAfter > 0 {
		return r.RetireAfter
	}
	return DefaultRetireAfter
}

// Reconcile creates the service Secret, or brings its keyring up to date.
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
	if secret.Type != sessions.SecretType {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonServiceSecretConflict, "Validate",
			"Secret %s has type %q, not %q, so it cannot hold ltiop's sealing keys; delete it or configure another service Secret name.",
			key.Name, secret.Type, sessions.SecretType)
		return ctrl.Result{RequeueAfter: serviceSecretRecheck}, nil
	}
	return r.update(ctx, secret)
}

func (r *ServiceSecretReconciler) labels(secret *corev1.Secret) {
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ltiv1.LabelManagedBy] = ltiv1.ManagedByValue
	secret.Labels[LabelComponent] = ComponentServiceKeys
}

// create makes the Secret with a keyring of one key, sealing from now.
func (r *ServiceSecretReconciler) create(ctx context.Context) (ctrl.Result, error) {
	key, err := sessions.NewKey(r.now(), 0)
	if err != nil {
		return ctrl.Result{}, err
	}
	data, err := sessions.EncodeKeyring([]sessions.Key{key})
	if err != nil {
		return ctrl.Result{}, err
	}
	nn := r.SecretKey()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name},
		Type:       sessions.SecretType,
		Data:       map[string][]byte{sessions.SecretKeyKeyring: data},
	}
	r.labels(secret)
	if err := r.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another replica won: its keyring is the one. Look at it shortly.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeyringCreated, "CreateKeyring",
		"Created the sealing keyring with key %s.", key.ID)
	return ctrl.Result{}, nil
}

// update rotates, retires and repairs the keyring of an existing Secret.
func (r *ServiceSecretReconciler) update(ctx context.Context, secret *corev1.Secret) (ctrl.Result, error) {
	now := r.now()
	orig := secret.DeepCopy()
	keys, decodeErr := sessions.DecodeKeyring(secret.Data[sessions.SecretKeyKeyring])
	changed := false
	var fresh, added *sessions.Key
	if decodeErr != nil {
		// No keyring yet (a Secret made by hand or by a chart), or unreadable data, which
		// opens nothing: a new keyring, sealing at once (there is no older key that replicas
		// could be using instead).
		k, err := sessions.NewKey(now, 0)
		if err != nil {
			return ctrl.Result{}, err
		}
		keys, fresh, changed = []sessions.Key{k}, &k, true
	}

	rotateTo := secret.Annotations[AnnotationRotateSealingKey]
	if rotateTo != "" && rotateTo != secret.Annotations[AnnotationRotatedSealingKey] {
		if fresh == nil { // a fresh keyring is already a new key
			k, err := sessions.NewKey(now, r.activationDelay())
			if err != nil {
				return ctrl.Result{}, err
			}
			keys, added, changed = append(keys, k), &k, true
		}
		secret.Annotations[AnnotationRotatedSealingKey] = rotateTo
	}

	keys, retired, next := retireSealingKeys(keys, now, r.retireAfter())
	if len(retired) > 0 {
		changed = true
	}
	if changed {
		data, err := sessions.EncodeKeyring(keys)
		if err != nil {
			return ctrl.Result{}, err
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[sessions.SecretKeyKeyring] = data
	}
	r.labels(secret)

	result := ctrl.Result{}
	if !next.IsZero() {
		result.RequeueAfter = max(next.Sub(now), time.Second)
	}
	if equality.Semantic.DeepEqual(orig, secret) {
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

	_, hadKeyring := orig.Data[sessions.SecretKeyKeyring]
	if fresh != nil && !hadKeyring {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeyringCreated, "CreateKeyring",
			"Created the sealing keyring with key %s.", fresh.ID)
	} else if fresh != nil {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonSealingKeyringRegenerated, "RegenerateKeyring",
			"Secret %s held no readable sealing keyring (%v); generated a new keyring with key %s. Tokens sealed before "+
				"(ltiks, service keys, login states, message hints) can no longer be opened: users must launch again from "+
				"their LMS and background jobs need a new service key.", secret.Name, decodeErr, fresh.ID)
	}
	if added != nil {
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeyRotated, "RotateKey",
			"Added sealing key %s for %s=%q. It seals from %s, once every replica has it; earlier keys keep opening tokens until they are retired.",
			added.ID, AnnotationRotateSealingKey, rotateTo, added.NotBefore.Format(time.RFC3339))
	}
	if len(retired) > 0 {
		ids := make([]string, len(retired))
		for i, k := range retired {
			ids[i] = k.ID
		}
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonSealingKeysRetired, "RetireKeys",
			"Retired sealing key(s) %s: their successor has sealed for %s, so every token they sealed has expired.",
			strings.Join(ids, ", "), r.retireAfter())
	}
	return result, nil
}

// retireSealingKeys drops the keys whose successor (the next key in sealing order) became
// active at least retireAfter before now; the newest key always stays. It returns the keys
// kept (in sealing order), those retired, and the next instant at which a kept key
// activates or becomes due for retirement (zero if none).
func retireSealingKeys(keys []sessions.Key, now time.Time, retireAfter time.Duration) (kept, retired []sessions.Key, next time.Time) {
	sorted := append([]sessions.Key(nil), keys...)
	sessions.SortKeys(sorted)
	soonest := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for i, k := range sorted {
		if i < len(sorted)-1 {
			due := sorted[i+1].NotBefore.Add(retireAfter)
			if !now.Before(due) {
				retired = append(retired, k)
				continue
			}
			soonest(due)
		}
		soonest(k.NotBefore)
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
