package controllers

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/keys"
)

// Tool-key rotation. The key Secret holds the whole state (the controller is its only
// writer, and a restarted or newly elected controller carries on from it):
//
//	private-key.pem, kid                    the key that signs   (annotations key-created, key-signs-from)
//	next-private-key.pem, next-kid          published, signs from annotation next-key-signs-from
//	retiring-private-key.pem, retiring-kid  published until annotation retiring-key-until
//	annotation rotate-key-served            the last rotate-key request served
//
// Every replica's web server publishes all three in the registration's key set and signs
// with private-key.pem, so the switch reaches each replica with its informer, and both keys
// are published around it: nothing signed by either fails to verify.

// rotationPlan is one registration's rotation policy as the controller applies it.
type rotationPlan struct {
	every, publishAhead, grace time.Duration
	automatic                  bool   // every is set and the LMS reads the key set
	request                    string // a rotation asked for by annotation, not served yet
}

// planRotation reads the policy of reg and a request not served yet: neither status nor the
// key Secret s records it. The Secret's record is written by the Secret write that serves
// the request, so a reconcile that reads a status older than that write (the Secret's own
// event comes at once) does not serve it twice: with publishAhead 0 it would find the next
// key already signing, none pending, and publish another.
func planRotation(reg *ltiv1.PlatformRegistration, s *corev1.Secret) rotationPlan {
	var p rotationPlan
	p.every, p.publishAhead, p.grace = reg.Spec.KeyRotation.Timings()
	p.automatic = p.every > 0 && readsKeySet(reg)
	served := ""
	if reg.Status.KeyRotation != nil {
		served = reg.Status.KeyRotation.LastRequest
	}
	if v := reg.Annotations[ltiv1.AnnotationRotateKey]; v != "" && v != served && v != s.Annotations[ltiv1.AnnotationRotateKeyServed] {
		p.request = v
	}
	return p
}

// readsKeySet says whether the LMS learns new keys from the key set: declared so, or a
// dynamic registration (which gave the LMS the key-set URL itself).
func readsKeySet(reg *ltiv1.PlatformRegistration) bool {
	if kr := reg.Spec.KeyRotation; kr != nil && kr.LMSKeySource != "" {
		return kr.LMSKeySource == ltiv1.LMSKeySourceKeySetURL
	}
	return reg.IsDynamic()
}

// rotationChange is what one reconcile did, for its events.
type rotationChange struct {
	started, switched, retired string // kids
	deferred                   bool
}

// rotateKey advances the rotation of reg's tool key at now and writes the Secret when it
// changed; it fills status.keyRotation and the KeyRotating condition, and returns when to
// look again (0: no timed step ahead).
func (r *PlatformRegistrationReconciler) rotateKey(ctx context.Context, reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus) (time.Duration, error) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: reg.Namespace, Name: KeySecretName(reg.Name)}
	err := r.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		// Just created by this reconcile and not cached yet: read it from the API server, so
		// that this status write is complete and the Secret's own event writes nothing more.
		err = r.APIReader.Get(ctx, key, secret)
	}
	if apierrors.IsNotFound(err) || err == nil && !metav1.IsControlledBy(secret, reg) {
		return 0, nil // not there, or not ours (ensureKey reported it)
	}
	if err != nil {
		return 0, err
	}
	now := r.now().UTC().Truncate(time.Second)
	plan := planRotation(reg, secret)
	orig := secret.DeepCopy()
	change, err := advanceRotation(secret, plan, now)
	if err != nil {
		return 0, err
	}
	if !equality.Semantic.DeepEqual(orig, secret) {
		// Optimistic locking: a concurrent change makes this fail and the retry sees it.
		if err := r.Patch(ctx, secret, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				log.FromContext(ctx).V(1).Info("key Secret changed while rotating; retrying")
				return time.Second, nil
			}
			return 0, err
		}
		r.rotationEvents(reg, secret, change)
		if change.switched != "" {
			// status.kid and status.publicKey follow the key that signs now.
			if private, err := keys.ParsePrivateKey(secret.Data[ltiv1.SecretKeyPrivateKey]); err == nil {
				if err := recordKey(status, secret, private); err != nil {
					return 0, err
				}
			}
		}
	}
	if v := secret.Annotations[ltiv1.AnnotationRotateKeyServed]; v != "" || plan.request != "" {
		if status.KeyRotation == nil {
			status.KeyRotation = &ltiv1.KeyRotationStatus{}
		}
		status.KeyRotation.LastRequest = cmp.Or(plan.request, v)
	}
	due := describeRotation(reg, status, secret, plan, change.deferred)
	keyAges.set(client.ObjectKeyFromObject(reg), secret)
	if due.IsZero() {
		return 0, nil
	}
	return max(due.Sub(now), time.Second), nil
}

// advanceRotation makes the steps due at now, in order: drop a retiring key whose grace
// is over; switch to the next key once it may sign (not while an older key still retires);
// publish a next key when asked or due.
func advanceRotation(s *corev1.Secret, plan rotationPlan, now time.Time) (rotationChange, error) {
	var c rotationChange
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if _, ok := s.Data[ltiv1.SecretKeyRetiringPrivateKey]; ok && !now.Before(annotationTime(s, ltiv1.AnnotationRetiringKeyUntil)) {
		c.retired = string(s.Data[ltiv1.SecretKeyRetiringKID])
		delete(s.Data, ltiv1.SecretKeyRetiringPrivateKey)
		delete(s.Data, ltiv1.SecretKeyRetiringKID)
		delete(s.Annotations, ltiv1.AnnotationRetiringKeyUntil)
		delete(s.Annotations, ltiv1.AnnotationRetiringKeyCreated)
	}
	if _, ok := s.Data[ltiv1.SecretKeyNextPrivateKey]; ok && !now.Before(annotationTime(s, ltiv1.AnnotationNextKeySignsFrom)) {
		if _, retiring := s.Data[ltiv1.SecretKeyRetiringPrivateKey]; retiring {
			c.deferred = true
		} else {
			c.switched = string(s.Data[ltiv1.SecretKeyNextKID])
			s.Data[ltiv1.SecretKeyRetiringPrivateKey], s.Data[ltiv1.SecretKeyRetiringKID] = s.Data[ltiv1.SecretKeyPrivateKey], s.Data[ltiv1.SecretKeyKID]
			s.Annotations[ltiv1.AnnotationRetiringKeyCreated] = formatTime(keyCreated(s))
			s.Annotations[ltiv1.AnnotationRetiringKeyUntil] = formatTime(now.Add(plan.grace))
			s.Data[ltiv1.SecretKeyPrivateKey], s.Data[ltiv1.SecretKeyKID] = s.Data[ltiv1.SecretKeyNextPrivateKey], s.Data[ltiv1.SecretKeyNextKID]
			s.Annotations[ltiv1.AnnotationKeyCreated] = s.Annotations[ltiv1.AnnotationNextKeyCreated]
			s.Annotations[ltiv1.AnnotationKeySignsFrom] = formatTime(now)
			delete(s.Data, ltiv1.SecretKeyNextPrivateKey)
			delete(s.Data, ltiv1.SecretKeyNextKID)
			delete(s.Annotations, ltiv1.AnnotationNextKeySignsFrom)
			delete(s.Annotations, ltiv1.AnnotationNextKeyCreated)
		}
	}
	_, pending := s.Data[ltiv1.SecretKeyNextPrivateKey]
	due := plan.automatic && !now.Before(automaticStart(s, plan))
	if !pending && (plan.request != "" || due) {
		private, err := keys.Generate()
		if err != nil {
			return c, err
		}
		pemBytes, err := keys.EncodePrivateKey(private)
		if err != nil {
			return c, err
		}
		kid, err := keys.KID(&private.PublicKey)
		if err != nil {
			return c, err
		}
		s.Data[ltiv1.SecretKeyNextPrivateKey], s.Data[ltiv1.SecretKeyNextKID] = pemBytes, []byte(kid)
		s.Annotations[ltiv1.AnnotationNextKeyCreated] = formatTime(now)
		s.Annotations[ltiv1.AnnotationNextKeySignsFrom] = formatTime(now.Add(plan.publishAhead))
		c.started = kid
	}
	if plan.request != "" { // served: by the key just published, or by the one pending
		s.Annotations[ltiv1.AnnotationRotateKeyServed] = plan.request
	}
	return c, nil
}

// automaticStart is when an automatic rotation publishes the next key: so that it signs
// `every` after the current key started.
func automaticStart(s *corev1.Secret, plan rotationPlan) time.Time {
	return keySignsFrom(s).Add(plan.every - plan.publishAhead)
}

// describeRotation writes status.keyRotation and the KeyRotating condition from the Secret,
// and returns the next instant a step is due (zero: none).
func describeRotation(reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus, s *corev1.Secret, plan rotationPlan, deferred bool) time.Time {
	prev := status.KeyRotation
	ks := &ltiv1.KeyRotationStatus{}
	if prev != nil {
		ks.LastRequest = prev.LastRequest
	}
	ks.Current = &ltiv1.ToolKeyStatus{KID: string(s.Data[ltiv1.SecretKeyKID]),
		Created: metaTime(keyCreated(s)), SignsFrom: metaTime(keySignsFrom(s))}
	var due time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	if kid := string(s.Data[ltiv1.SecretKeyNextKID]); kid != "" {
		signsFrom := annotationTime(s, ltiv1.AnnotationNextKeySignsFrom)
		ks.Next = &ltiv1.ToolKeyStatus{KID: kid, Created: metaTime(annotationTime(s, ltiv1.AnnotationNextKeyCreated)),
			SignsFrom: metaTime(signsFrom)}
		if prev != nil && prev.Next != nil && prev.Next.KID == kid {
			ks.Next.PublicKey = prev.Next.PublicKey // parsed once, when it was published
		} else if private, err := keys.ParsePrivateKey(s.Data[ltiv1.SecretKeyNextPrivateKey]); err == nil {
			ks.Next.PublicKey, _ = keys.PublicKeyPEM(&private.PublicKey)
		}
		soonest(signsFrom)
	}
	if kid := string(s.Data[ltiv1.SecretKeyRetiringKID]); kid != "" {
		until := annotationTime(s, ltiv1.AnnotationRetiringKeyUntil)
		ks.Retiring = &ltiv1.ToolKeyStatus{KID: kid, Created: metaTime(annotationTime(s, ltiv1.AnnotationRetiringKeyCreated)),
			RetiresAt: metaTime(until)}
		soonest(until)
	}
	if plan.automatic && ks.Next == nil {
		start := automaticStart(s, plan)
		ks.NextRotation = metaTime(start)
		soonest(start)
	}
	status.KeyRotation = ks

	cond := metav1.Condition{Type: ltiv1.ConditionKeyRotating, Status: metav1.ConditionFalse, ObservedGeneration: reg.Generation}
	switch {
	case ks.Next != nil && deferred:
		cond.Status, cond.Reason = metav1.ConditionTrue, ltiv1.ReasonSwitchDeferred
		cond.Message = fmt.Sprintf("Key %s is due to sign but waits until key %s leaves the key set at %s.",
			ks.Next.KID, ks.Retiring.KID, ks.Retiring.RetiresAt.UTC().Format(time.RFC3339))
	case ks.Next != nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, ltiv1.ReasonNextKeyPublished
		cond.Message = fmt.Sprintf("Key %s is published in the key set and signs from %s; key %s signs until then.",
			ks.Next.KID, ks.Next.SignsFrom.UTC().Format(time.RFC3339), ks.Current.KID)
	case ks.Retiring != nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, ltiv1.ReasonOldKeyRetiring
		cond.Message = fmt.Sprintf("Key %s signs; the old key %s stays published until %s.",
			ks.Current.KID, ks.Retiring.KID, ks.Retiring.RetiresAt.UTC().Format(time.RFC3339))
	case plan.automatic:
		cond.Reason = ltiv1.ReasonRotationScheduled
		cond.Message = fmt.Sprintf("The next key is published at %s and signs %s later.",
			ks.NextRotation.UTC().Format(time.RFC3339), plan.publishAhead)
	case plan.every > 0:
		cond.Reason = ltiv1.ReasonPastedKey
		cond.Message = "spec.keyRotation.every is set, but the LMS is not known to read the key set (spec.keyRotation.lmsKeySource is not KeySetURL): " +
			"an LMS holding a pasted public key cannot follow a rotation, so keys rotate only on request (annotation " + ltiv1.AnnotationRotateKey + ")."
	default:
		cond.Reason = ltiv1.ReasonRotationDisabled
		cond.Message = "No automatic rotation (spec.keyRotation.every is unset); the annotation " + ltiv1.AnnotationRotateKey + " rotates on request."
	}
	if c := meta.FindStatusCondition(status.Conditions, cond.Type); c != nil && c.Status == cond.Status && c.Reason == cond.Reason {
		cond.LastTransitionTime = c.LastTransitionTime
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return due
}

func (r *PlatformRegistrationReconciler) rotationEvents(reg *ltiv1.PlatformRegistration, s *corev1.Secret, c rotationChange) {
	if c.retired != "" {
		r.Recorder.Eventf(reg, s, corev1.EventTypeNormal, ltiv1.ReasonKeyRetired, "RetireKey",
			"Key %s left the key set: its successor has signed for the grace period.", c.retired)
	}
	if c.switched != "" {
		r.Recorder.Eventf(reg, s, corev1.EventTypeNormal, ltiv1.ReasonKeyRotated, "RotateKey",
			"Key %s signs from now; the old key stays published until %s.", c.switched, s.Annotations[ltiv1.AnnotationRetiringKeyUntil])
	}
	if c.started != "" {
		r.Recorder.Eventf(reg, s, corev1.EventTypeNormal, ltiv1.ReasonKeyRotationStart, "PublishKey",
			"Key %s is published in the key set and signs from %s.", c.started, s.Annotations[ltiv1.AnnotationNextKeySignsFrom])
	}
}

// stampNewKey records a freshly generated key's times on its Secret and drops any rotation
// state (a regenerated key starts afresh).
func stampNewKey(s *corev1.Secret, now time.Time) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	for _, a := range []string{ltiv1.AnnotationNextKeySignsFrom, ltiv1.AnnotationNextKeyCreated,
		ltiv1.AnnotationRetiringKeyUntil, ltiv1.AnnotationRetiringKeyCreated} {
		delete(s.Annotations, a)
	}
	t := formatTime(now.UTC().Truncate(time.Second))
	s.Annotations[ltiv1.AnnotationKeyCreated], s.Annotations[ltiv1.AnnotationKeySignsFrom] = t, t
}

// keyCreated and keySignsFrom are the current key's times; a Secret from before rotation
// existed has neither annotation and counts from its creation.
func keyCreated(s *corev1.Secret) time.Time {
	if t := annotationTime(s, ltiv1.AnnotationKeyCreated); !t.IsZero() {
		return t
	}
	return s.CreationTimestamp.UTC()
}

func keySignsFrom(s *corev1.Secret) time.Time {
	if t := annotationTime(s, ltiv1.AnnotationKeySignsFrom); !t.IsZero() {
		return t
	}
	return s.CreationTimestamp.UTC()
}

// annotationTime reads an RFC 3339 annotation; zero when absent or unreadable (a step whose
// time is unreadable is due now: the state can only move forward).
func annotationTime(s *corev1.Secret, name string) time.Time {
	t, err := time.Parse(time.RFC3339, s.Annotations[name])
	if err != nil {
		return time.Time{}
	}
	return t
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// keyAgeMetric is ltiop_tool_key_age_seconds{namespace,registration,key}: the age of each
// published tool key (key = current, next or retiring), computed at scrape time from what the
// elected controller last saw. Another replica reports nothing: it reconciles nothing.
type keyAgeMetric struct {
	mu   sync.Mutex
	desc *prometheus.Desc
	// Unix seconds each key was created, 0 for a key not held: a fixed array rather than a
	// map per registration (a map of one entry costs ~400 bytes, 4 MB at 10,000).
	keys map[types.NamespacedName][len(keyRoles)]int64
}

// keyRoles are the key label's values, in the order of keyAgeMetric's arrays.
var keyRoles = [...]string{"current", "next", "retiring"}

var keyAges = &keyAgeMetric{
	desc: prometheus.NewDesc("ltiop_tool_key_age_seconds",
		"Age of each published tool key of a PlatformRegistration (key: current, next, retiring).",
		[]string{"namespace", "registration", "key"}, nil),
	keys: map[types.NamespacedName][len(keyRoles)]int64{},
}

func init() { metrics.Registry.MustRegister(keyAges) }

func (m *keyAgeMetric) set(reg types.NamespacedName, s *corev1.Secret) {
	var created [len(keyRoles)]int64
	created[0] = unixOrZero(keyCreated(s))
	if _, ok := s.Data[ltiv1.SecretKeyNextPrivateKey]; ok {
		created[1] = unixOrZero(annotationTime(s, ltiv1.AnnotationNextKeyCreated))
	}
	if _, ok := s.Data[ltiv1.SecretKeyRetiringPrivateKey]; ok {
		created[2] = unixOrZero(annotationTime(s, ltiv1.AnnotationRetiringKeyCreated))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[reg] = created
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func (m *keyAgeMetric) forget(reg types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, reg)
}

// Describe implements prometheus.Collector.
func (m *keyAgeMetric) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect implements prometheus.Collector.
func (m *keyAgeMetric) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for reg, created := range m.keys {
		for i, unix := range created {
			if unix == 0 {
				continue
			}
			age := now.Sub(time.Unix(unix, 0)).Seconds()
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, age, reg.Namespace, reg.Name, keyRoles[i])
		}
	}
}

// platformKeyAgeMetric is ltiop_platform_key_age_seconds{kid,key}: the age of each platform
// signing key held (key = current: the one that signs; next: published, not signing yet;
// retiring: signed before), as the elected controller last saw the service Secret.
type platformKeyAgeMetric struct {
	mu   sync.Mutex
	desc *prometheus.Desc
	keys map[string]platformKeyAge // kid → age
}

type platformKeyAge struct {
	role    string
	created time.Time
}

var platformKeyAges = &platformKeyAgeMetric{
	desc: prometheus.NewDesc("ltiop_platform_key_age_seconds",
		"Age of each platform-mode signing key held (key: current, next, retiring).", []string{"kid", "key"}, nil),
	keys: map[string]platformKeyAge{},
}

func init() { metrics.Registry.MustRegister(platformKeyAges) }

// set records the keys (in rotation order) at now.
func (m *platformKeyAgeMetric) set(keys []keyring.Info, now time.Time) {
	if len(keys) == 0 {
		return
	}
	current := 0
	for i, k := range keys {
		if !k.NotBefore.After(now) {
			current = i
		}
	}
	out := make(map[string]platformKeyAge, len(keys))
	for i, k := range keys {
		role := "retiring"
		switch {
		case i == current:
			role = "current"
		case i > current:
			role = "next"
		}
		out[k.ID] = platformKeyAge{role: role, created: k.Created}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = out
}

// Describe implements prometheus.Collector.
func (m *platformKeyAgeMetric) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect implements prometheus.Collector.
func (m *platformKeyAgeMetric) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for kid, k := range m.keys {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, now.Sub(k.created).Seconds(), kid, k.role)
	}
}
