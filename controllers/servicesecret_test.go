package controllers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/api/ltiwire"
	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/signing"
)

var serviceSecretCounter atomic.Int32

// serviceSecretName keeps specs apart from each other and from the suite's manager, which
// may run this controller for the default name.
func serviceSecretName() string {
	return fmt.Sprintf("svc-%d-%d", GinkgoParallelProcess(), serviceSecretCounter.Add(1))
}

// staleClient serves Get from a fixed copy (or NotFound), as a cache that is behind would;
// everything else goes to the API server.
type staleClient struct {
	client.Client
	secret *corev1.Secret // nil: NotFound
}

func (c staleClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if c.secret == nil {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	c.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

// writeCounter counts the writes made through it.
type writeCounter struct {
	client.Client
	writes atomic.Int32
}

func (c *writeCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *writeCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

var _ = Describe("Service Secret controller", func() {
	ctx := context.Background()
	var (
		r        *controllers.ServiceSecretReconciler
		recorder *events.FakeRecorder
		now      time.Time
		name     string
	)

	BeforeEach(func() {
		name = serviceSecretName()
		now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		recorder = events.NewFakeRecorder(10)
		r = &controllers.ServiceSecretReconciler{
			Client: k8s, APIReader: k8s, Recorder: recorder,
			Namespace: namespace, Name: name,
			Now: func() time.Time { return now },
		}
	})

	reconcile := func() ctrl.Result {
		GinkgoHelper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	current := func() *corev1.Secret {
		GinkgoHelper()
		s := &corev1.Secret{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)).To(Succeed())
		return s
	}
	keysOf := func(s *corev1.Secret) []keyring.SealingKey {
		GinkgoHelper()
		keys, err := keyring.Sealing.Decode(s.Data[ltiv1.SecretKeySealingKeyring])
		Expect(err).NotTo(HaveOccurred())
		return keys
	}
	// createdEvents takes the events of a new Secret: the sealing keyring's, then the
	// platform key's.
	createdEvents := func() {
		GinkgoHelper()
		var event string
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Normal " + controllers.ReasonSealingKeyringCreated + " "))
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Normal " + controllers.ReasonPlatformKeyCreated + " "))
	}
	noMoreEvents := func() {
		GinkgoHelper()
		Consistently(recorder.Events, 100*time.Millisecond).ShouldNot(Receive())
	}
	annotateWith := func(annotation, value string) {
		GinkgoHelper()
		s := current()
		patch := client.MergeFrom(s.DeepCopy())
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annotation] = value
		Expect(k8s.Patch(ctx, s, patch)).To(Succeed())
	}
	annotate := func(value string) {
		GinkgoHelper()
		annotateWith(ltiv1.AnnotationRotateSealingKey, value)
	}
	platformKeysOf := func(s *corev1.Secret) []keyring.SigningKey {
		GinkgoHelper()
		keys, err := keyring.Signing.Decode(s.Data[ltiv1.SecretKeyPlatformKeys])
		Expect(err).NotTo(HaveOccurred())
		return keys
	}

	It("creates the labelled Secret with one key that seals at once", func() {
		Expect(reconcile()).To(Equal(ctrl.Result{}))

		s := current()
		Expect(string(s.Type)).To(Equal(ltiv1.SecretTypeService))
		Expect(s.Labels).To(HaveKeyWithValue(ltiv1.LabelManagedBy, ltiv1.ManagedByValue))
		Expect(s.Labels).To(HaveKeyWithValue(ltiv1.LabelComponent, ltiv1.ComponentServiceKeys))
		keys := keysOf(s)
		Expect(keys).To(HaveLen(1))
		Expect(keys[0].NotBefore).To(BeTemporally("<=", now))
		Expect(keys[0].Secret).To(HaveLen(keyring.SealingKeySize))
		Expect(recorder.Events).To(Receive(Equal(fmt.Sprintf("Normal %s Created the sealing keyring with key %s.",
			controllers.ReasonSealingKeyringCreated, keys[0].ID))))
		var event string
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Normal " + controllers.ReasonPlatformKeyCreated + " "))

		// The keyring seals and opens.
		ring, err := sessions.NewKeyring(keys)
		Expect(err).NotTo(HaveOccurred())
		tok, err := ring.Seal(sessions.PurposeLTIK, []byte(`{}`), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = ring.Open(sessions.PurposeLTIK, tok, time.Now())
		Expect(err).NotTo(HaveOccurred())
	})

	It("never replaces a readable keyring", func() {
		reconcile()
		before := current()
		createdEvents()

		now = now.Add(30 * 24 * time.Hour) // a single key is never retired, however old
		Expect(reconcile()).To(Equal(ctrl.Result{}))
		Expect(reconcile()).To(Equal(ctrl.Result{}))
		after := current()
		Expect(after.Data).To(Equal(before.Data))
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing was written")
		noMoreEvents()
	})

	It("does not create a second keyring when its cache is behind: the other replica won", func() {
		reconcile()
		before := current()
		createdEvents()

		stale := *r
		stale.Client, stale.APIReader = staleClient{Client: k8s}, staleClient{Client: k8s}
		res, err := stale.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "looks again at the winner's Secret")
		Expect(current().Data).To(Equal(before.Data))
		noMoreEvents()
	})

	It("replaces an unreadable keyring and warns that earlier tokens are lost", func() {
		reconcile()
		createdEvents()
		s := current()
		s.Data[ltiv1.SecretKeySealingKeyring] = []byte("not a keyring")
		s.Data["other"] = []byte("kept")
		Expect(k8s.Update(ctx, s)).To(Succeed())

		reconcile()
		s = current()
		keys := keysOf(s)
		Expect(keys).To(HaveLen(1))
		Expect(keys[0].NotBefore).To(BeTemporally("<=", now), "seals at once: nothing else can")
		Expect(s.Data).To(HaveKeyWithValue("other", []byte("kept")), "other data is left alone")
		var event string
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Warning " + controllers.ReasonSealingKeyringRegenerated + " "))
		Expect(event).To(ContainSubstring("can no longer be opened"))
		Expect(event).To(ContainSubstring(keys[0].ID))
		Expect(event).NotTo(ContainSubstring("not a keyring"), "the data is not quoted")
	})

	It("adds a key on request that seals only after the activation delay", func() {
		reconcile()
		createdEvents()
		first := keysOf(current())[0]

		annotate("2026-03-01")
		res := reconcile()
		s := current()
		keys := keysOf(s)
		Expect(keys).To(HaveLen(2))
		Expect(keys[0].ID).To(Equal(first.ID), "the old key stays")
		Expect(keys[1].NotBefore).To(Equal(now.Add(controllers.DefaultActivationDelay)))
		Expect(s.Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedSealingKey, "2026-03-01"))
		Expect(res.RequeueAfter).To(Equal(controllers.DefaultActivationDelay), "requeued at the activation")
		var event string
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Normal " + controllers.ReasonSealingKeyRotated + " Added sealing key " + keys[1].ID))

		// Served once: reconciling again adds nothing.
		reconcile()
		Expect(keysOf(current())).To(HaveLen(2))
		noMoreEvents()

		// Until the new key activates, the old one seals; afterwards the new one does.
		ring, err := sessions.NewKeyring(keys)
		Expect(err).NotTo(HaveOccurred())
		Expect(ring.IDs()).To(Equal([]string{first.ID, keys[1].ID}))

		// A new value asks for another key.
		annotate("second")
		reconcile()
		Expect(keysOf(current())).To(HaveLen(3))
		Expect(current().Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedSealingKey, "second"))
	})

	It("retires a key RetireAfter after its successor activates, keeping the newest", func() {
		reconcile()
		createdEvents()
		first := keysOf(current())[0]
		annotate("rotate")
		reconcile()
		Expect(recorder.Events).To(Receive())
		second := keysOf(current())[1]
		retireAt := second.NotBefore.Add(controllers.DefaultRetireAfter)

		now = second.NotBefore // the successor activates: requeue at the retirement
		Expect(reconcile().RequeueAfter).To(Equal(controllers.DefaultRetireAfter))

		now = retireAt.Add(-time.Second)
		Expect(reconcile().RequeueAfter).To(Equal(time.Second))
		Expect(keysOf(current())).To(HaveLen(2))
		noMoreEvents()

		now = retireAt
		Expect(reconcile()).To(Equal(ctrl.Result{}))
		keys := keysOf(current())
		Expect(keys).To(HaveLen(1))
		Expect(keys[0].ID).To(Equal(second.ID))
		Expect(recorder.Events).To(Receive(Equal(fmt.Sprintf(
			"Normal %s Retired sealing key(s) %s: their successor has sealed for %s, so every token they sealed has expired.",
			controllers.ReasonSealingKeysRetired, first.ID, controllers.DefaultRetireAfter))))

		now = now.Add(365 * 24 * time.Hour)
		reconcile()
		Expect(keysOf(current())).To(HaveLen(1), "the newest key is never retired")
	})

	It("retires on its own schedule with a custom RetireAfter, and requeues at the next instant", func() {
		r.ActivationDelay, r.RetireAfter = 10*time.Second, time.Hour
		reconcile()
		createdEvents()
		annotate("a")
		Expect(reconcile().RequeueAfter).To(Equal(10 * time.Second))
		now = now.Add(time.Minute)
		annotate("b")
		// Key 2 active since +10s (key 1 retires at +1h10s); key 3 activates at +70s.
		Expect(reconcile().RequeueAfter).To(Equal(10 * time.Second))
		Expect(keysOf(current())).To(HaveLen(3))

		now = now.Add(2 * time.Hour)
		reconcile()
		Expect(keysOf(current())).To(HaveLen(1), "both older keys have had an active successor for an hour")
	})

	It("does not lose a concurrent change: the update is optimistically locked", func() {
		reconcile()
		createdEvents()
		stale := current()

		// Meanwhile another replica rotated.
		annotate("other-replica")
		other := *r
		other.Recorder = events.NewFakeRecorder(10)
		_, err := other.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
		Expect(err).NotTo(HaveOccurred())
		rotated := current()
		Expect(keysOf(rotated)).To(HaveLen(2))

		// This replica still sees the old Secret, with another rotation request.
		stale.Annotations = map[string]string{ltiv1.AnnotationRotateSealingKey: "this-replica"}
		behind := *r
		behind.Client = staleClient{Client: k8s, secret: stale}
		res, err := behind.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "retries")
		Expect(current().Data).To(Equal(rotated.Data), "the other replica's key is still there")
		noMoreEvents()
	})

	It("leaves a foreign Secret of the same name alone and says so", func() {
		foreign := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"password": []byte("hunter2")},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		Expect(reconcile().RequeueAfter).To(BeNumerically(">", 0))
		Expect(current().Data).To(Equal(foreign.Data))
		Expect(current().Labels).NotTo(HaveKey(ltiv1.LabelManagedBy))
		var event string
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Warning " + controllers.ReasonServiceSecretConflict + " "))
	})

	It("fills a Secret of its type that has no keyring yet, without a warning", func() {
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Type:       ltiv1.SecretTypeService,
			Data:       map[string][]byte{"signing-key.pem": []byte("kept")},
		})).To(Succeed())
		reconcile()
		s := current()
		Expect(keysOf(s)).To(HaveLen(1))
		Expect(s.Data).To(HaveKeyWithValue("signing-key.pem", []byte("kept")))
		Expect(s.Labels).To(HaveKeyWithValue(ltiv1.LabelComponent, ltiv1.ComponentServiceKeys))
		var event string
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Normal " + controllers.ReasonSealingKeyringCreated + " "))
		Expect(platformKeysOf(s)).To(HaveLen(1))
		Expect(recorder.Events).To(Receive(&event))
		Expect(event).To(HavePrefix("Normal " + controllers.ReasonPlatformKeyCreated + " "))
		noMoreEvents()
	})

	It("puts its labels back on its Secret", func() {
		reconcile()
		createdEvents()
		s := current()
		s.Labels = nil
		Expect(k8s.Update(ctx, s)).To(Succeed())
		reconcile()
		Expect(current().Labels).To(HaveKeyWithValue(ltiv1.LabelManagedBy, ltiv1.ManagedByValue))
		noMoreEvents()
	})

	It("ignores requests for other objects", func() {
		Expect(r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: "other"}})).To(Equal(ctrl.Result{}))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &corev1.Secret{}))).To(BeTrue())
	})

	Context("the platform signing key", func() {
		// signedBy signs with keys at instant at and returns the kid of the token, after
		// checking that the token verifies with the JWKS the keys publish, as a tool would.
		signedBy := func(keys []keyring.SigningKey, at time.Time) string {
			GinkgoHelper()
			ring, err := signing.NewKeyring(keys)
			Expect(err).NotTo(HaveOccurred())
			tok, err := ring.SignAt(at, ltiwire.TypeJWT, []byte(`{"iss":"https://lti.test.example"}`))
			Expect(err).NotTo(HaveOccurred())
			set, err := jwk.Parse(ring.JWKS())
			Expect(err).NotTo(HaveOccurred())
			Expect(set.Len()).To(Equal(len(keys)), "every key held is published")
			msg, err := jws.Parse([]byte(tok))
			Expect(err).NotTo(HaveOccurred())
			kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
			_, err = jws.Verify([]byte(tok), jws.WithKeySet(set, jws.WithRequireKid(true)))
			Expect(err).NotTo(HaveOccurred(), "a token verifies with the published JWKS")
			return kid
		}

		It("is created with the Secret and signs at once", func() {
			Expect(reconcile()).To(Equal(ctrl.Result{}))
			s := current()
			keys := platformKeysOf(s)
			Expect(keys).To(HaveLen(1))
			Expect(keys[0].NotBefore).To(BeTemporally("<=", now))
			Expect(keys[0].Private.N.BitLen()).To(Equal(2048))
			Expect(recorder.Events).To(Receive(HavePrefix("Normal " + controllers.ReasonSealingKeyringCreated + " ")))
			Expect(recorder.Events).To(Receive(Equal(fmt.Sprintf(
				"Normal %s Created the platform signing key %s; it signs at once and is published in the platform JWKS.",
				controllers.ReasonPlatformKeyCreated, keys[0].ID))))
			Expect(signedBy(keys, now)).To(Equal(keys[0].ID))

			// Never replaced while readable.
			now = now.Add(30 * 24 * time.Hour)
			Expect(reconcile()).To(Equal(ctrl.Result{}))
			Expect(current().ResourceVersion).To(Equal(s.ResourceVersion), "nothing was written")
			noMoreEvents()
		})

		It("is added to a Secret that has only a sealing keyring, which stays as it was", func() {
			sealing, err := keyring.Sealing.NewKey(now.Add(-time.Hour), 0)
			Expect(err).NotTo(HaveOccurred())
			sealingData, err := keyring.Sealing.Encode([]keyring.SealingKey{sealing})
			Expect(err).NotTo(HaveOccurred())
			Expect(k8s.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				Type:       ltiv1.SecretTypeService,
				Data:       map[string][]byte{ltiv1.SecretKeySealingKeyring: sealingData},
			})).To(Succeed())

			Expect(reconcile()).To(Equal(ctrl.Result{}))
			s := current()
			Expect(s.Data).To(HaveKeyWithValue(ltiv1.SecretKeySealingKeyring, sealingData))
			keys := platformKeysOf(s)
			Expect(keys).To(HaveLen(1))
			Expect(keys[0].NotBefore).To(BeTemporally("<=", now))
			Expect(recorder.Events).To(Receive(HavePrefix("Normal " + controllers.ReasonPlatformKeyCreated + " Created the platform signing key " + keys[0].ID)))
			noMoreEvents()
		})

		It("rotates on request: published at once, signing after the activation delay, the old key retired RetireAfter later", func() {
			reconcile()
			createdEvents()
			before := current()
			first := platformKeysOf(before)[0]

			annotateWith(ltiv1.AnnotationRotatePlatformKey, "2026-03-01")
			res := reconcile()
			s := current()
			keys := platformKeysOf(s)
			Expect(keys).To(HaveLen(2))
			Expect(keys[0].ID).To(Equal(first.ID), "the old key stays")
			second := keys[1]
			Expect(second.NotBefore).To(Equal(now.Add(controllers.DefaultPlatformKeyActivationDelay)))
			Expect(s.Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedPlatformKey, "2026-03-01"))
			Expect(s.Annotations).NotTo(HaveKey(ltiv1.AnnotationRotatedSealingKey))
			Expect(s.Data[ltiv1.SecretKeySealingKeyring]).To(Equal(before.Data[ltiv1.SecretKeySealingKeyring]), "the sealing keyring is left alone")
			Expect(res.RequeueAfter).To(Equal(controllers.DefaultPlatformKeyActivationDelay), "requeued at the activation")
			Expect(recorder.Events).To(Receive(Equal(fmt.Sprintf(
				"Normal %s Added platform signing key %s for %s=%q. It is in the platform JWKS now and signs from %s, once tools "+
					"that cache the JWKS have fetched it; earlier keys stay published until they are retired.",
				controllers.ReasonPlatformKeyRotated, second.ID, ltiv1.AnnotationRotatePlatformKey, "2026-03-01",
				second.NotBefore.Format(time.RFC3339)))))

			// Served once: reconciling again adds nothing.
			Expect(reconcile().RequeueAfter).To(Equal(controllers.DefaultPlatformKeyActivationDelay))
			Expect(platformKeysOf(current())).To(HaveLen(2))
			noMoreEvents()

			// Published first, signing later: until the activation the old key signs, and both
			// are in the JWKS; from then on the new one signs.
			Expect(signedBy(keys, now)).To(Equal(first.ID))
			Expect(signedBy(keys, second.NotBefore.Add(-time.Second))).To(Equal(first.ID))
			Expect(signedBy(keys, second.NotBefore)).To(Equal(second.ID))

			// Active: requeued at the retirement.
			now = second.NotBefore
			Expect(reconcile().RequeueAfter).To(Equal(controllers.DefaultRetireAfter))
			now = second.NotBefore.Add(controllers.DefaultRetireAfter - time.Second)
			Expect(reconcile().RequeueAfter).To(Equal(time.Second))
			Expect(platformKeysOf(current())).To(HaveLen(2))
			noMoreEvents()

			now = second.NotBefore.Add(controllers.DefaultRetireAfter)
			Expect(reconcile()).To(Equal(ctrl.Result{}))
			keys = platformKeysOf(current())
			Expect(keys).To(HaveLen(1))
			Expect(keys[0].ID).To(Equal(second.ID))
			Expect(recorder.Events).To(Receive(Equal(fmt.Sprintf(
				"Normal %s Retired platform signing key(s) %s: their successor has signed for %s, so no token they signed is still in use.",
				controllers.ReasonPlatformKeysRetired, first.ID, controllers.DefaultRetireAfter))))
			Expect(current().Data[ltiv1.SecretKeySealingKeyring]).To(Equal(before.Data[ltiv1.SecretKeySealingKeyring]))
			noMoreEvents()

			// A new value asks for another key.
			annotateWith(ltiv1.AnnotationRotatePlatformKey, "second")
			reconcile()
			Expect(platformKeysOf(current())).To(HaveLen(2))
			Expect(current().Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedPlatformKey, "second"))
		})

		It("rotates on schedule with PlatformKeyRotateEvery: published the activation delay before the key has signed that long", func() {
			const every = 30 * 24 * time.Hour
			delay := controllers.DefaultPlatformKeyActivationDelay
			r.PlatformKeyRotateEvery = every
			reconcile()
			createdEvents()
			first := platformKeysOf(current())[0]
			Expect(reconcile().RequeueAfter).To(Equal(every-delay), "requeued at the next rotation")

			now = first.NotBefore.Add(every - delay - time.Second)
			Expect(reconcile().RequeueAfter).To(Equal(time.Second))
			Expect(platformKeysOf(current())).To(HaveLen(1))
			noMoreEvents()

			now = now.Add(time.Second)
			Expect(reconcile().RequeueAfter).To(Equal(delay), "requeued at the new key's activation")
			keys := platformKeysOf(current())
			Expect(keys).To(HaveLen(2))
			second := keys[1]
			Expect(second.NotBefore).To(Equal(first.NotBefore.Add(every)), "the old key signed exactly `every`")
			Expect(recorder.Events).To(Receive(ContainSubstring("Added platform signing key " + second.ID + " on schedule (every 720h0m0s)")))
			Expect(reconcile().RequeueAfter).To(Equal(delay), "a key waiting to sign is not joined by another")
			Expect(platformKeysOf(current())).To(HaveLen(2))
			noMoreEvents()

			roles := map[string]string{}
			families, err := metrics.Registry.Gather()
			Expect(err).NotTo(HaveOccurred())
			for _, f := range families {
				if f.GetName() == "ltiop_platform_key_age_seconds" {
					for _, m := range f.GetMetric() {
						labels := map[string]string{}
						for _, l := range m.GetLabel() {
							labels[l.GetName()] = l.GetValue()
						}
						roles[labels["kid"]] = labels["key"]
					}
				}
			}
			Expect(roles).To(Equal(map[string]string{first.ID: "current", second.ID: "next"}))

			now = second.NotBefore
			Expect(reconcile().RequeueAfter).To(Equal(controllers.DefaultRetireAfter), "the retirement comes before the next rotation")
			Expect(platformKeysOf(current())).To(HaveLen(2))
		})

		It("rotates both key sets in one write, and requeues at the soonest activation or retirement of either", func() {
			r.ActivationDelay, r.PlatformKeyActivationDelay, r.RetireAfter = 10*time.Second, 30*time.Second, time.Hour
			reconcile()
			createdEvents()

			s := current()
			patch := client.MergeFrom(s.DeepCopy())
			s.Annotations = map[string]string{
				ltiv1.AnnotationRotateSealingKey:  "both",
				ltiv1.AnnotationRotatePlatformKey: "both",
			}
			Expect(k8s.Patch(ctx, s, patch)).To(Succeed())
			counting := &writeCounter{Client: k8s}
			r.Client = counting
			Expect(reconcile().RequeueAfter).To(Equal(10*time.Second), "the sealing key activates first")
			Expect(counting.writes.Load()).To(BeEquivalentTo(1), "one patch for both key sets")
			s = current()
			Expect(keysOf(s)).To(HaveLen(2))
			Expect(platformKeysOf(s)).To(HaveLen(2))
			Expect(platformKeysOf(s)[1].NotBefore).To(Equal(now.Add(30 * time.Second)))
			Expect(s.Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedSealingKey, "both"))
			Expect(s.Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedPlatformKey, "both"))
			Expect(recorder.Events).To(Receive(HavePrefix("Normal " + controllers.ReasonSealingKeyRotated + " ")))
			Expect(recorder.Events).To(Receive(HavePrefix("Normal " + controllers.ReasonPlatformKeyRotated + " ")))

			start := now
			now = start.Add(10 * time.Second) // the sealing key activates; the platform key at +30s
			Expect(reconcile().RequeueAfter).To(Equal(20 * time.Second))
			now = start.Add(30 * time.Second) // both active: the old sealing key retires first
			Expect(reconcile().RequeueAfter).To(Equal(time.Hour - 20*time.Second))
			now = start.Add(time.Hour + 10*time.Second)
			Expect(reconcile().RequeueAfter).To(Equal(20 * time.Second))
			Expect(keysOf(current())).To(HaveLen(1))
			Expect(platformKeysOf(current())).To(HaveLen(2))
			Expect(recorder.Events).To(Receive(HavePrefix("Normal " + controllers.ReasonSealingKeysRetired + " ")))
			now = start.Add(time.Hour + 30*time.Second)
			Expect(reconcile()).To(Equal(ctrl.Result{}))
			Expect(platformKeysOf(current())).To(HaveLen(1))
			Expect(recorder.Events).To(Receive(HavePrefix("Normal " + controllers.ReasonPlatformKeysRetired + " ")))
			Expect(counting.writes.Load()).To(BeEquivalentTo(3), "one write per change")
			noMoreEvents()
		})

		It("replaces unreadable keys with a new key and warns that tools must refetch the JWKS", func() {
			reconcile()
			createdEvents()
			before := current()
			old := platformKeysOf(before)[0]
			s := before.DeepCopy()
			s.Data[ltiv1.SecretKeyPlatformKeys] = []byte(`[{"kid":"not-a-key","privateKey":"secret material"}]`)
			Expect(k8s.Update(ctx, s)).To(Succeed())

			Expect(reconcile()).To(Equal(ctrl.Result{}))
			s = current()
			keys := platformKeysOf(s)
			Expect(keys).To(HaveLen(1))
			Expect(keys[0].ID).NotTo(Equal(old.ID))
			Expect(keys[0].NotBefore).To(BeTemporally("<=", now), "signs at once: nothing else can")
			Expect(s.Data[ltiv1.SecretKeySealingKeyring]).To(Equal(before.Data[ltiv1.SecretKeySealingKeyring]), "the sealing keyring is left alone")
			var event string
			Expect(recorder.Events).To(Receive(&event))
			Expect(event).To(HavePrefix("Warning " + controllers.ReasonPlatformKeyRegenerated + " "))
			Expect(event).To(ContainSubstring(keys[0].ID))
			Expect(event).To(ContainSubstring("must fetch the platform JWKS again"))
			Expect(event).NotTo(ContainSubstring("secret material"), "the data is not quoted")
			noMoreEvents()

			// A rotation asked for at the same time is served by the new key.
			s = current()
			s.Data[ltiv1.SecretKeyPlatformKeys] = []byte("garbage")
			s.Annotations = map[string]string{ltiv1.AnnotationRotatePlatformKey: "with-repair"}
			Expect(k8s.Update(ctx, s)).To(Succeed())
			reconcile()
			s = current()
			Expect(platformKeysOf(s)).To(HaveLen(1))
			Expect(s.Annotations).To(HaveKeyWithValue(ltiv1.AnnotationRotatedPlatformKey, "with-repair"))
			Expect(recorder.Events).To(Receive(HavePrefix("Warning " + controllers.ReasonPlatformKeyRegenerated + " ")))
			noMoreEvents()
		})
	})

	It("creates the Secret when a manager starts, and again after it is deleted", func() {
		cfg := config.Default()
		cfg.Namespace, cfg.MetricsListen = namespace, "0"
		opts := app.ManagerOptions(&cfg)
		opts.Controller.SkipNameValidation = ptr.To(true) // the suite's manager may run the same controller
		opts.LeaderElection = false
		m, err := ctrl.NewManager(restCfg, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect((&controllers.ServiceSecretReconciler{Namespace: namespace, Name: name}).SetupWithManager(m)).To(Succeed())
		mctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(m.Start(mctx)).To(Succeed())
		}()
		DeferCleanup(func() { stop(); <-done })

		key := types.NamespacedName{Namespace: namespace, Name: name}
		s := &corev1.Secret{}
		Eventually(func() error { return k8s.Get(ctx, key, s) }).Should(Succeed())
		firstUID := s.UID
		Expect(keysOf(s)).To(HaveLen(1))
		Expect(platformKeysOf(s)).To(HaveLen(1))

		Expect(k8s.Delete(ctx, s)).To(Succeed())
		Eventually(func() types.UID {
			fresh := &corev1.Secret{}
			if err := k8s.Get(ctx, key, fresh); err != nil {
				return ""
			}
			return fresh.UID
		}).Should(And(Not(BeEmpty()), Not(Equal(firstUID))))

		// A rotation request through the watch is served without a direct call.
		Eventually(func() error {
			cur := &corev1.Secret{}
			if err := k8s.Get(ctx, key, cur); err != nil {
				return err
			}
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Annotations = map[string]string{ltiv1.AnnotationRotateSealingKey: "via-watch"}
			return k8s.Patch(ctx, cur, patch)
		}).Should(Succeed())
		Eventually(func() int {
			cur := &corev1.Secret{}
			Expect(k8s.Get(ctx, key, cur)).To(Succeed())
			keys, err := keyring.Sealing.Decode(cur.Data[ltiv1.SecretKeySealingKeyring])
			Expect(err).NotTo(HaveOccurred())
			return len(keys)
		}).Should(Equal(2))
	})
})
