package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/keys"
)

func rotationPolicy(every, ahead, grace time.Duration, source ltiv1.LMSKeySource) *ltiv1.KeyRotation {
	kr := &ltiv1.KeyRotation{PublishAhead: &metav1.Duration{Duration: ahead}, GracePeriod: &metav1.Duration{Duration: grace}, LMSKeySource: source}
	if every > 0 {
		kr.Every = &metav1.Duration{Duration: every}
	}
	return kr
}

func rotation(reg *ltiv1.PlatformRegistration) *ltiv1.KeyRotationStatus {
	if ks := fresh(reg).Status.KeyRotation; ks != nil {
		return ks
	}
	return &ltiv1.KeyRotationStatus{}
}

func kidOf(k *ltiv1.ToolKeyStatus) string {
	if k == nil {
		return ""
	}
	return k.KID
}

// secretKIDs are the kids the key Secret holds: the one that signs, the next, the retiring.
func secretKIDs(reg *ltiv1.PlatformRegistration) [3]string {
	s, err := keySecret(reg)
	Expect(err).NotTo(HaveOccurred())
	kidOfPEM := func(data []byte) string {
		if len(data) == 0 {
			return ""
		}
		k, err := keys.ParsePrivateKey(data)
		Expect(err).NotTo(HaveOccurred())
		kid, err := keys.KID(&k.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		return kid
	}
	return [3]string{kidOfPEM(s.Data[ltiv1.SecretKeyPrivateKey]), kidOfPEM(s.Data[ltiv1.SecretKeyNextPrivateKey]),
		kidOfPEM(s.Data[ltiv1.SecretKeyRetiringPrivateKey])}
}

// keyAgeRoles are the key labels of ltiop_tool_key_age_seconds for the registration.
func keyAgeRoles(registration string) []string {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var roles []string
	for _, f := range families {
		if f.GetName() != "ltiop_tool_key_age_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["registration"] == registration {
				roles = append(roles, labels["key"])
			}
		}
	}
	return roles
}

var _ = Describe("Tool-key rotation", func() {
	ctx := context.Background()

	It("publishes the next key, switches to it, keeps the old one for the grace period, then drops it, on request", func() {
		reg := canvasRegistration(uniqueName("rotate"), uniqueName("client"))
		reg.Spec.KeyRotation = rotationPolicy(0, 3*time.Second, 3*time.Second, "")
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(observedCondition(reg, ltiv1.ConditionKeyRotating)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonRotationDisabled))
		first := fresh(reg).Status.KID
		Expect(first).NotTo(BeEmpty())
		Expect(kidOf(rotation(reg).Current)).To(Equal(first))
		Expect(rotation(reg).Current.Created).NotTo(BeNil(), "the key age column reads it")

		By("asking for a rotation with the annotation")
		cur := fresh(reg)
		cur.Annotations = map[string]string{ltiv1.AnnotationRotateKey: "ticket-1"}
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(func() string { return kidOf(rotation(reg).Next) }).ShouldNot(BeEmpty())
		ks := rotation(reg)
		next := ks.Next.KID
		Expect(next).NotTo(Equal(first))
		Expect(ks.LastRequest).To(Equal("ticket-1"))
		Expect(ks.Next.PublicKey).To(ContainSubstring("BEGIN PUBLIC KEY"), "for an LMS that holds a pasted key")
		Expect(ks.Next.SignsFrom.Time).To(BeTemporally("~", ks.Next.Created.Add(3*time.Second), time.Second))
		Expect(fresh(reg).Status.KID).To(Equal(first), "the old key signs until the next one's time")
		Expect(secretKIDs(reg)).To(Equal([3]string{first, next, ""}))
		Expect(eventsFor(reg.Name, ltiv1.ReasonKeyRotationStart)()).To(HaveLen(1))
		Expect(keyAgeRoles(reg.Name)).To(ConsistOf("current", "next"), "ltiop_tool_key_age_seconds has both keys")

		By("switching once the next key's time has come")
		Eventually(func() string { return fresh(reg).Status.KID }).Should(Equal(next))
		Expect(kidOf(rotation(reg).Current)).To(Equal(next))
		Expect(kidOf(rotation(reg).Retiring)).To(Equal(first))
		Expect(secretKIDs(reg)).To(Equal([3]string{next, "", first}), "the old key stays published")
		Eventually(observedCondition(reg, ltiv1.ConditionKeyRotating)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonOldKeyRetiring))
		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyRotated)).Should(HaveLen(1))

		By("dropping the old key after the grace period")
		Eventually(func() string { return kidOf(rotation(reg).Retiring) }).Should(BeEmpty())
		Expect(secretKIDs(reg)).To(Equal([3]string{next, "", ""}))
		Eventually(observedCondition(reg, ltiv1.ConditionKeyRotating)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonRotationDisabled))
		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyRetired)).Should(HaveLen(1))
		Expect(rotation(reg).LastRequest).To(Equal("ticket-1"), "the request is served once")
		Expect(eventsFor(reg.Name, ltiv1.ReasonKeyRotationStart)()).To(HaveLen(1), "and not again")
	})

	It("does not rotate automatically when the LMS may hold a pasted key, and does once it reads the key set", func() {
		reg := canvasRegistration(uniqueName("rotate-auto"), uniqueName("client"))
		reg.Spec.KeyRotation = rotationPolicy(2*time.Second, time.Second, time.Second, "")
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(observedCondition(reg, ltiv1.ConditionKeyRotating)).Should(And(
			haveReason(metav1.ConditionFalse, ltiv1.ReasonPastedKey), withMessage("pasted public key")))
		first := fresh(reg).Status.KID
		Consistently(func() [3]string { return secretKIDs(reg) }, 4*time.Second).Should(Equal([3]string{first, "", ""}),
			"every has passed twice, and the key did not change")

		By("declaring that the LMS reads the key set")
		cur := fresh(reg)
		cur.Spec.KeyRotation.LMSKeySource = ltiv1.LMSKeySourceKeySetURL
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(func() string { return fresh(reg).Status.KID }).ShouldNot(Equal(first), "rotated automatically")
		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyRotated)).ShouldNot(BeEmpty())
		Expect(eventsFor(reg.Name, ltiv1.ReasonKeyRotationStart)()).NotTo(BeEmpty())
	})

	// The procedure for a compromised tool key (docs/security.md): publishAhead: 0s and
	// gracePeriod: 0s, then the annotation. "0s" is a valid duration for both (not "unset,
	// so the default"), and the compromised key leaves the Secret, and so every replica's
	// key set, within seconds, without waiting for a default (24h ahead, 1h grace).
	It("rotates at once with publishAhead and gracePeriod 0s, for a compromised key", func() {
		reg := canvasRegistration(uniqueName("rotate-now"), uniqueName("client"))
		reg.Spec.KeyRotation = rotationPolicy(0, 0, 0, "")
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(observedCondition(reg, ltiv1.ConditionKeyRotating)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonRotationDisabled))
		kr := fresh(reg).Spec.KeyRotation
		Expect(kr.PublishAhead).NotTo(BeNil())
		Expect(kr.PublishAhead.Duration).To(BeZero(), "stored as 0s")
		Expect(kr.GracePeriod).NotTo(BeNil())
		Expect(kr.GracePeriod.Duration).To(BeZero())
		compromised := fresh(reg).Status.KID

		cur := fresh(reg)
		cur.Annotations = map[string]string{ltiv1.AnnotationRotateKey: "compromised-2026-12-08"}
		Expect(k8s.Patch(ctx, cur, client.MergeFrom(fresh(reg)))).To(Succeed())
		Eventually(func() [3]string { return secretKIDs(reg) }, 10*time.Second).Should(And(
			WithTransform(func(k [3]string) string { return k[0] }, Not(Or(BeEmpty(), Equal(compromised)))),
			WithTransform(func(k [3]string) []string { return k[1:] }, Equal([]string{"", ""}))),
			"a new key signs and the compromised one is neither next nor retiring")
		Eventually(func() string { return fresh(reg).Status.KID }).Should(Equal(secretKIDs(reg)[0]))
		Eventually(func() string { return kidOf(rotation(reg).Retiring) }).Should(BeEmpty())
		Eventually(eventsFor(reg.Name, ltiv1.ReasonKeyRetired)).Should(HaveLen(1), "the compromised key left the key set")
		Consistently(eventsFor(reg.Name, ltiv1.ReasonKeyRotationStart), 2*time.Second).Should(HaveLen(1), "one request, one rotation")
		Expect(rotation(reg).LastRequest).To(Equal("compromised-2026-12-08"))
	})

	// The reconcile that the Secret write of a rotation triggers may read the registration
	// before the status write that records the request served. With publishAhead 0 it finds
	// the next key already due and none pending: it must not take the request for a new one.
	It("serves a rotation request once, even to a reconcile that reads the status from before it was served (publishAhead 0)", func() {
		reg := canvasRegistration("stale-status", "client")
		reg.Spec.KeyRotation = rotationPolicy(0, 0, 0, "")
		reg.Annotations = map[string]string{ltiv1.AnnotationRotateKey: "compromised"}
		private, err := keys.Generate()
		Expect(err).NotTo(HaveOccurred())
		pemBytes, err := keys.EncodePrivateKey(private)
		Expect(err).NotTo(HaveOccurred())
		kid, err := keys.KID(&private.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		now := time.Now().UTC().Truncate(time.Second)
		secret := &corev1.Secret{Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pemBytes, ltiv1.SecretKeyKID: []byte(kid)}}

		started, _, err := controllers.AdvanceRotation(reg, secret, now)
		Expect(err).NotTo(HaveOccurred())
		Expect(started).NotTo(BeEmpty(), "the request publishes a next key")
		started, switched, err := controllers.AdvanceRotation(reg, secret, now) // reg: its status still says nothing served
		Expect(err).NotTo(HaveOccurred())
		Expect(switched).NotTo(BeEmpty(), "the next key signs at once")
		Expect(started).To(BeEmpty(), "the request was served: no second rotation")
	})

	It("rotates a registration whose LMS holds a pasted key when asked to", func() {
		reg := canvasRegistration(uniqueName("rotate-pasted"), uniqueName("client"))
		reg.Spec.KeyRotation = rotationPolicy(time.Hour, 0, time.Hour, ltiv1.LMSKeySourcePastedKey)
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(observedCondition(reg, ltiv1.ConditionKeyRotating)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonPastedKey))
		first := fresh(reg).Status.KID
		cur := fresh(reg)
		cur.Annotations = map[string]string{ltiv1.AnnotationRotateKey: "leaked"}
		Expect(k8s.Patch(ctx, cur, client.MergeFrom(fresh(reg)))).To(Succeed())
		Eventually(func() string { return fresh(reg).Status.KID }).ShouldNot(Equal(first))
		Expect(kidOf(rotation(reg).Retiring)).To(Equal(first))
		Expect(fresh(reg).Status.PublicKey).To(ContainSubstring("BEGIN PUBLIC KEY"))
	})
})
