package controllers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/keys"
)

func canvasRegistration(name, clientID string) *ltiv1.PlatformRegistration {
	return &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL:                    "https://canvas.instructure.com",
			ClientID:               clientID,
			Name:                   "Canvas",
			AuthenticationEndpoint: "https://sso.canvaslms.com/api/lti/authorize_redirect",
			AccesstokenEndpoint:    "https://sso.canvaslms.com/login/oauth2/token",
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://sso.canvaslms.com/api/lti/security/jwks"},
		},
	}
}

func keySecret(reg *ltiv1.PlatformRegistration) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: controllers.KeySecretName(reg.Name)}, s)
	return s, err
}

var _ = Describe("PlatformRegistration controller", func() {
	ctx := context.Background()

	It("makes exactly one key for each of many registrations created at once", func() {
		const n = 24
		regs := make([]*ltiv1.PlatformRegistration, n)
		for i := range regs {
			regs[i] = canvasRegistration(uniqueName("burst"), uniqueName("client"))
		}
		var wg sync.WaitGroup
		for _, reg := range regs {
			wg.Go(func() { defer GinkgoRecover(); Expect(k8s.Create(ctx, reg)).To(Succeed()) })
		}
		wg.Wait()

		kids := map[string]bool{}
		for _, reg := range regs {
			Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
			var secrets corev1.SecretList
			Expect(k8s.List(ctx, &secrets, client.InNamespace(namespace),
				client.MatchingLabels{ltiv1.LabelPlatformRegistration: reg.Name})).To(Succeed())
			Expect(secrets.Items).To(HaveLen(1), "one key Secret for %s", reg.Name)
			cur := fresh(reg)
			Expect(string(secrets.Items[0].Data[ltiv1.SecretKeyKID])).To(Equal(cur.Status.KID), "status names the key kept")
			Expect(cur.Status.JWKSURL).To(Equal(publicURL + "/lti/keys/" + reg.Name))
			kids[cur.Status.KID] = true
			Expect(eventsFor(reg.Name, ltiv1.ReasonKeyRegenerated)()).To(BeEmpty(), "no key was replaced")
		}
		Expect(kids).To(HaveLen(n), "every registration has a key of its own")
	})

	It("creates an owned, labelled key Secret and publishes the key and the LMS URLs in status", func() {
		reg := canvasRegistration(uniqueName("canvas"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		cur := fresh(reg)
		Expect(cur.Spec.Active).To(Equal(ptr.To(true)), "active defaults to true")
		Expect(cur.Status.LoginURL).To(Equal(publicURL + "/lti/login"))
		Expect(cur.Status.LaunchURL).To(Equal(publicURL + "/lti/launch"))
		Expect(cur.Status.JWKSURL).To(Equal(publicURL+"/lti/keys/"+reg.Name), "its own key set, not every tenant's")
		Expect(meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionStalled)).To(BeNil())
		Expect(meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionReconciling)).To(BeNil())

		secret, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		Expect(cur.Status.KeySecretName).To(Equal(secret.Name))
		Expect(metav1.IsControlledBy(secret, cur)).To(BeTrue(), "the Secret is owned by the registration")
		Expect(secret.Labels).To(HaveKeyWithValue(ltiv1.LabelManagedBy, ltiv1.ManagedByValue))
		Expect(secret.Labels).To(HaveKeyWithValue(ltiv1.LabelPlatformRegistration, reg.Name))
		Expect(string(secret.Type)).To(Equal(ltiv1.SecretTypeToolKey))
		Expect(string(secret.Data[ltiv1.SecretKeyPrivateKey])).To(HavePrefix("-----BEGIN PRIVATE KEY-----"), "PKCS#8 PEM")

		private, err := keys.ParsePrivateKey(secret.Data[ltiv1.SecretKeyPrivateKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(private.N.BitLen()).To(Equal(2048))
		kid, err := keys.KID(&private.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(cur.Status.KID).To(Equal(kid))
		Expect(string(secret.Data[ltiv1.SecretKeyKID])).To(Equal(kid))
		pub, err := keys.ParsePublicKeyPEM(cur.Status.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(pub.Equal(&private.PublicKey)).To(BeTrue(), "status.publicKey is the Secret's public half")

		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyCreated)).Should(HaveLen(1))
	})

	It("is idempotent: a Ready registration and its Secret are not rewritten", func() {
		reg := canvasRegistration(uniqueName("idem"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		regVersion := fresh(reg).ResourceVersion
		secret, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())

		// A label change triggers no reconcile (generation predicate); a Secret label change does.
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Annotations = map[string]string{"touched": "yes"}
		Expect(k8s.Patch(ctx, secret, patch)).To(Succeed())
		Consistently(func() string { return fresh(reg).ResourceVersion }, 2*time.Second).Should(Equal(regVersion))
		after, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Data).To(Equal(secret.Data), "a valid key is never replaced")
	})

	It("reflects a spec change in observedGeneration and keeps the key", func() {
		reg := canvasRegistration(uniqueName("gen"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		kid := fresh(reg).Status.KID

		cur := fresh(reg)
		cur.Spec.Active = ptr.To(false)
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(func() int64 { return fresh(reg).Status.ObservedGeneration }).Should(Equal(int64(2)))
		Eventually(readyCondition(reg)).Should(And(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady),
			WithTransform(func(c *metav1.Condition) string { return c.Message }, ContainSubstring("inactive"))))
		Expect(fresh(reg).Status.KID).To(Equal(kid))
	})

	DescribeTable("refuses an unusable authConfig with Ready=False, Stalled=True and an event, without retrying",
		func(method ltiv1.AuthMethod, key func() string, want string) {
			reg := canvasRegistration(uniqueName("badkey"), uniqueName("client"))
			reg.Spec.AuthConfig = ltiv1.AuthConfig{Method: method, Key: key()}
			Expect(k8s.Create(ctx, reg)).To(Succeed())
			Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonInvalidAuthConfig))
			cur := fresh(reg)
			ready := meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionReady)
			Expect(ready.Message).To(ContainSubstring(want))
			stalled := meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionStalled)
			Expect(stalled).NotTo(BeNil())
			Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			Eventually(eventsFor(reg.Name, ltiv1.ReasonInvalidAuthConfig)).Should(HaveLen(1))

			// No hot loop: nothing is written again while the spec stays the same.
			version := cur.ResourceVersion
			Consistently(func() string { return fresh(reg).ResourceVersion }, 2*time.Second).Should(Equal(version))

			// Fixing the spec makes it Ready.
			cur.Spec.AuthConfig = ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: rsaPublicPEM(2048)}
			Expect(updateSpec(cur)).To(Succeed())
			Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		},
		Entry("RSA_KEY that is not PEM data", ltiv1.AuthMethodRSAKey,
			func() string { return "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n" }, "RSA_KEY is not a PEM RSA public key"),
		Entry("RSA_KEY holding an EC key", ltiv1.AuthMethodRSAKey, func() string {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
			return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		}, "not an RSA public key"),
		Entry("RSA_KEY of 1024 bits", ltiv1.AuthMethodRSAKey, func() string { return rsaPublicPEM(1024) }, "at least 2048"),
		Entry("JWK_KEY of type EC", ltiv1.AuthMethodJWKKey, func() string {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			return jwkJSON(&k.PublicKey)
		}, "not RSA"),
		Entry("JWK_KEY holding a private key", ltiv1.AuthMethodJWKKey, func() string {
			k, _ := rsa.GenerateKey(rand.Reader, 2048)
			return jwkJSON(k)
		}, "private key"),
		Entry("JWK_KEY that is a key set", ltiv1.AuthMethodJWKKey, func() string { return `{"keys":[]}` }, "key set"),
		Entry("JWK_KEY that is not JSON", ltiv1.AuthMethodJWKKey, func() string { return `{"kty":` }, "not a JSON object"),
		Entry("JWK_SET over plain http outside dev mode", ltiv1.AuthMethodJWKSet,
			func() string { return "http://lms.example/jwks" }, "must use https"),
	)

	It("accepts a valid JWK_KEY and RSA_KEY", func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		for _, ac := range []ltiv1.AuthConfig{
			{Method: ltiv1.AuthMethodJWKKey, Key: jwkJSON(&k.PublicKey)},
			{Method: ltiv1.AuthMethodRSAKey, Key: rsaPublicPEM(2048)},
		} {
			reg := canvasRegistration(uniqueName("goodkey"), uniqueName("client"))
			reg.Spec.AuthConfig = ac
			Expect(k8s.Create(ctx, reg)).To(Succeed())
			Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		}
	})

	It("refuses http endpoints unless the registration is in dev mode", func() {
		reg := canvasRegistration(uniqueName("http"), uniqueName("client"))
		reg.Spec.URL = "http://moodle.local"
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonInsecureURL))

		cur := fresh(reg)
		cur.Spec.DevMode = true
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	DescribeTable("the schema refuses malformed registrations before they are stored",
		func(mutate func(*ltiv1.PlatformRegistration), want string) {
			reg := canvasRegistration(uniqueName("schema"), uniqueName("client"))
			mutate(reg)
			err := k8s.Create(ctx, reg)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("unknown method", func(r *ltiv1.PlatformRegistration) { r.Spec.AuthConfig.Method = "HS256" }, "supported values"),
		Entry("JWK_SET key that is no URL", func(r *ltiv1.PlatformRegistration) { r.Spec.AuthConfig.Key = "not a url" }, "JWK_SET key must be"),
		Entry("RSA_KEY that is no PEM", func(r *ltiv1.PlatformRegistration) {
			r.Spec.AuthConfig = ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: "abc"}
		}, "PEM-encoded"),
		Entry("JWK_KEY that is no JSON object", func(r *ltiv1.PlatformRegistration) {
			r.Spec.AuthConfig = ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: "abc"}
		}, "JSON Web Key"),
		Entry("relative URL", func(r *ltiv1.PlatformRegistration) { r.Spec.AuthenticationEndpoint = "/auth" }, "absolute http(s) URL"),
		Entry("ftp URL", func(r *ltiv1.PlatformRegistration) { r.Spec.URL = "ftp://lms.example" }, "absolute http(s) URL"),
		Entry("missing clientId", func(r *ltiv1.PlatformRegistration) { r.Spec.ClientID = "" }, "clientId"),
		Entry("missing name", func(r *ltiv1.PlatformRegistration) { r.Spec.Name = "" }, "name"),
	)

	// A duration the Go type cannot decode would be stored, and then every replica's informer
	// would fail to list the registrations (metav1.Duration refuses it in UnmarshalJSON):
	// one kubectl apply would blind ltiop to all of them. The schema refuses it instead.
	DescribeTable("the schema refuses a key rotation duration Go cannot read",
		func(field, value string) {
			reg := canvasRegistration(uniqueName("duration"), uniqueName("client"))
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(reg)
			Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{Object: raw}
			obj.SetGroupVersionKind(ltiv1.GroupVersion.WithKind("PlatformRegistration"))
			Expect(unstructured.SetNestedField(obj.Object, value, "spec", "keyRotation", field)).To(Succeed())
			err = k8s.Create(ctx, obj)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.keyRotation." + field + ": Invalid value"))
			Expect(err.Error()).To(ContainSubstring("must be a Go duration"))
		},
		Entry("every: 1 day", "every", "1 day"),
		Entry("every: 90d", "every", "90d"),
		Entry("publishAhead: negative", "publishAhead", "-1h"),
		Entry("gracePeriod: no unit", "gracePeriod", "30"),
	)

	It("accepts the Go durations a key rotation is written with", func() {
		reg := canvasRegistration(uniqueName("duration"), uniqueName("client"))
		reg.Spec.KeyRotation = &ltiv1.KeyRotation{Every: &metav1.Duration{Duration: 2160 * time.Hour},
			PublishAhead: &metav1.Duration{Duration: 90 * time.Minute}, GracePeriod: &metav1.Duration{}}
		Expect(k8s.Create(ctx, reg)).To(Succeed()) // 2160h0m0s, 1h30m0s, 0s
		for _, v := range []string{"1.5h", "0", "1h30m", "500ms"} {
			cur := fresh(reg)
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
			Expect(err).NotTo(HaveOccurred())
			obj := &unstructured.Unstructured{Object: raw}
			obj.SetGroupVersionKind(ltiv1.GroupVersion.WithKind("PlatformRegistration"))
			Expect(unstructured.SetNestedField(obj.Object, v, "spec", "keyRotation", "gracePeriod")).To(Succeed())
			Expect(k8s.Update(ctx, obj)).To(Succeed(), v)
		}
	})

	It("keeps the older of two registrations with the same (url, clientId) and marks the newer", func() {
		clientID := uniqueName("shared")
		first := canvasRegistration(uniqueName("first"), clientID)
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(readyCondition(first)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
		second := canvasRegistration(uniqueName("second"), clientID)
		Expect(k8s.Create(ctx, second)).To(Succeed())

		Eventually(readyCondition(second)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonDuplicateRegistration))
		Expect(meta.FindStatusCondition(fresh(second).Status.Conditions, ltiv1.ConditionReady).Message).To(ContainSubstring(first.Name))
		Consistently(readyCondition(first), time.Second).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		// Same issuer, other client: not a duplicate (T-QUIRK-01: never key on iss alone).
		other := canvasRegistration(uniqueName("other"), uniqueName("client"))
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Eventually(readyCondition(other)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		// When the older one goes, the newer one takes over.
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(readyCondition(second)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	// LTI11-KEY-03: two registrations written with kubectl (or two API creates that both
	// passed the API's check) that share an LTI 1.1 consumer key: no holder wins, each says
	// so naming the other, and deleting one heals the other.
	It("tells both registrations that share an LTI 1.1 consumer key, and clears it when one goes", func() {
		consumerKey := uniqueName("consumer")
		withKey := func(reg *ltiv1.PlatformRegistration, secret string) *ltiv1.PlatformRegistration {
			reg.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: consumerKey, SharedSecret: ltiv1.SecretKeyRef{Name: secret}}
			return reg
		}
		first := withKey(canvasRegistration(uniqueName("lti11-first"), uniqueName("client")), "first-secret")
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(observedCondition(first, ltiv1.ConditionLTI11ConsumerKeyUnique)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonConsumerKeyUnique))
		plain := canvasRegistration(uniqueName("lti13-only"), uniqueName("client"))
		Expect(k8s.Create(ctx, plain)).To(Succeed())
		Eventually(readyCondition(plain)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		Expect(meta.FindStatusCondition(fresh(plain).Status.Conditions, ltiv1.ConditionLTI11ConsumerKeyUnique)).To(BeNil(),
			"no condition without spec.lti11")

		second := withKey(canvasRegistration(uniqueName("lti11-second"), uniqueName("client")), "second-secret")
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Eventually(observedCondition(second, ltiv1.ConditionLTI11ConsumerKeyUnique)).Should(And(
			haveReason(metav1.ConditionFalse, ltiv1.ReasonAmbiguousConsumerKey), withMessage(first.Name), withMessage("LTI11_AMBIGUOUS_CONSUMER_KEY")))
		Eventually(observedCondition(first, ltiv1.ConditionLTI11ConsumerKeyUnique)).Should(And(
			haveReason(metav1.ConditionFalse, ltiv1.ReasonAmbiguousConsumerKey), withMessage(second.Name)),
			"the older holder is told too: neither wins")
		Eventually(eventsFor(first.Name, ltiv1.ReasonAmbiguousConsumerKey)).Should(HaveLen(1))
		Eventually(eventsFor(second.Name, ltiv1.ReasonAmbiguousConsumerKey)).Should(HaveLen(1))
		for _, reg := range []*ltiv1.PlatformRegistration{first, second} {
			Expect(readyCondition(reg)()).To(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady), "LTI 1.3 launches are not concerned")
		}

		Expect(k8s.Delete(ctx, second)).To(Succeed())
		Eventually(observedCondition(first, ltiv1.ConditionLTI11ConsumerKeyUnique)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonConsumerKeyUnique))
		Expect(eventsFor(first.Name, ltiv1.ReasonAmbiguousConsumerKey)()).To(HaveLen(1), "told once")
	})

	It("generates a new key with a Warning event when the Secret is deleted out of band", func() {
		reg := canvasRegistration(uniqueName("lost"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		oldKID := fresh(reg).Status.KID
		secret, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())

		Expect(k8s.Delete(ctx, secret)).To(Succeed())
		Eventually(func() string { return fresh(reg).Status.KID }).ShouldNot(Equal(oldKID))
		fresh, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		Expect(fresh.UID).NotTo(Equal(secret.UID))
		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyRegenerated)).Should(ContainElement(And(
			HaveField("Type", corev1.EventTypeWarning),
			HaveField("Note", ContainSubstring("LMS must be given the new public key")))))
	})

	It("replaces a key that was damaged out of band", func() {
		reg := canvasRegistration(uniqueName("damaged"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		oldKID := fresh(reg).Status.KID
		secret, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		secret.Data[ltiv1.SecretKeyPrivateKey] = []byte("garbage")
		Expect(k8s.Update(ctx, secret)).To(Succeed())

		Eventually(func() string { return fresh(reg).Status.KID }).ShouldNot(Equal(oldKID))
		fresh, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		_, err = keys.ParsePrivateKey(fresh.Data[ltiv1.SecretKeyPrivateKey])
		Expect(err).NotTo(HaveOccurred())
		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyRegenerated)).ShouldNot(BeEmpty())
	})

	It("reads a key Secret's key once per change of the Secret, not at every reconcile", func() {
		reg := canvasRegistration(uniqueName("parsed-once"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		secret, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		cachedVersion := func() string { // what a reconciler reading the cache sees
			cached := &ltiv1.PlatformRegistration{}
			Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(reg), cached)).To(Succeed())
			return cached.Status.KeySecretResourceVersion
		}
		Eventually(cachedVersion).Should(Equal(secret.ResourceVersion), "status records the Secret version it read")

		var parses atomic.Int32
		r := &controllers.PlatformRegistrationReconciler{
			Client: mgr.GetClient(), APIReader: k8s, Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("ltiop-test"),
			PublicURL: publicURL,
			ParseKey: func(b []byte) (*rsa.PrivateKey, error) {
				parses.Add(1)
				return keys.ParsePrivateKey(b)
			},
		}
		reconcile := func() int32 {
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(reg)})
			Expect(err).NotTo(HaveOccurred())
			return parses.Load()
		}
		Expect(reconcile()).To(BeZero(), "an unchanged Secret's key is not parsed again")

		// Any change to the Secret is read again; a change that leaves the key as it was (a
		// label here) is not worth a status write, so it is read at each reconcile.
		secret.Labels["example.com/touched"] = "yes"
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		Eventually(func() string {
			cached := &corev1.Secret{}
			Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(secret), cached)).To(Succeed())
			return cached.ResourceVersion
		}).Should(Equal(secret.ResourceVersion))
		Expect(reconcile()).To(BeEquivalentTo(1))
		Expect(cachedVersion()).NotTo(Equal(secret.ResourceVersion), "no status write for a label")
	})

	It("does not touch a foreign Secret that has the key Secret's name", func() {
		name := uniqueName("foreign")
		foreign := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: controllers.KeySecretName(name)},
			StringData: map[string]string{"password": "hunter2"},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		reg := canvasRegistration(name, uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonKeySecretConflict))

		after := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), after)).To(Succeed())
		Expect(after.Data).To(Equal(map[string][]byte{"password": []byte("hunter2")}))
		Expect(after.OwnerReferences).To(BeEmpty())

		// Once the foreign Secret is gone, the registration recovers by itself.
		Expect(k8s.Delete(ctx, foreign)).To(Succeed())
		Eventually(readyCondition(reg), 45*time.Second).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	It("caches only ltiop's labelled Secrets", func() {
		unrelated := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: uniqueName("unrelated")},
			StringData: map[string]string{"x": "y"},
		}
		Expect(k8s.Create(ctx, unrelated)).To(Succeed())
		reg := canvasRegistration(uniqueName("cached"), uniqueName("client"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		Eventually(func() error {
			return mgr.GetCache().Get(ctx, client.ObjectKey{Namespace: namespace, Name: controllers.KeySecretName(reg.Name)}, &corev1.Secret{})
		}).Should(Succeed())
		Consistently(func() bool {
			err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(unrelated), &corev1.Secret{})
			return apierrors.IsNotFound(err)
		}, time.Second).Should(BeTrue())
	})
})

var _ = Describe("PlatformRegistration OAuth2 status", func() {
	ctx := context.Background()
	oauthCondition := func(reg *ltiv1.PlatformRegistration) func() *metav1.Condition {
		return observedCondition(reg, ltiv1.ConditionOAuth2Ready)
	}

	It("says whether the OAuth2 broker can serve the registration, without touching Ready", func() {
		secretName := uniqueName("oauth")
		reg := canvasRegistration(uniqueName("oauth"), uniqueName("client"))
		reg.Spec.OAuth2 = &ltiv1.OAuth2Client{SecretName: secretName}
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		// Canvas Cloud's shared issuer does not tell the school's domain.
		Eventually(oauthCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonOAuth2SecretMissing))
		Expect(readyCondition(reg)()).To(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
			StringData: map[string]string{"client_id": "170000000000001"},
		})).To(Succeed())
		cur := fresh(reg)
		cur.Spec.OAuth2.Scopes = []string{"url:GET|/api/v1/users/:user_id/profile"}
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(oauthCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonOAuth2SecretIncomplete))

		secret := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, secret)).To(Succeed())
		secret.Data["client_secret"] = []byte("s3cr3t")
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		cur = fresh(reg)
		cur.Spec.OAuth2.Scopes = nil
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(oauthCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonOAuth2URLsRequired))

		cur = fresh(reg)
		cur.Spec.OAuth2.AuthorizeURL = "https://school.instructure.com/login/oauth2/auth"
		cur.Spec.OAuth2.TokenURL = "https://school.instructure.com/login/oauth2/token"
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(oauthCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonOAuth2Configured))
		Expect(readyCondition(reg)()).To(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})
})
