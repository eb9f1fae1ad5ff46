package e2e

import (
	"context"
	"fmt"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
)

// lti11LMS is a registered LMS simulator that also holds LTI 1.1 credentials: spec.lti11
// on its registration, the shared secret in a Secret labelled for ltiop's cache.
func lti11LMS() *lmsServer {
	consumerKey := fmt.Sprintf("consumer-%d", lmsCount+1)
	secretName := fmt.Sprintf("lti11-secret-%d", lmsCount+1)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName,
			Labels: map[string]string{ltiv1.LabelManagedBy: ltiv1.ManagedByValue}},
		Data: map[string][]byte{ltiv1.LTI11SecretKey: []byte("the 1.1 secret of " + consumerKey)},
	}
	Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	DeferCleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	lms := servicesLMSWith(func(spec *ltiv1.PlatformRegistrationSpec) {
		spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: consumerKey, SharedSecret: ltiv1.SecretKeyRef{Name: secretName}}
	})
	lms.EnableLTI11(consumerKey, string(secret.Data[ltiv1.LTI11SecretKey]))
	Eventually(func() bool {
		_, ok := ltiop.Registry.LTI11Secret(ltiop.Registry.Get(lms.ID))
		return ok
	}).Should(BeTrue(), "the shared secret reaches the web server through the Secret cache")
	return lms
}

var _ = Describe("LTI 1.1", func() {
	It("launches on /lti/launch signed over the public URL, reports 1.1.1, and sends Basic Outcomes (LTI11-LAUNCH-01, LTI11-OUT-01)", func() {
		lms := lti11LMS()
		b := newBrowser()
		launchURL := publicURL + paths.Launch
		form := lms.Launch11(launchURL, "student-1", nil)
		res := b.post(launchURL, form)
		Expect(res.Status).To(Equal(303), res.Body)
		Expect(res.Ltik).NotTo(BeEmpty())

		tok := idToken(res.Ltik)
		Expect(tok.Status).To(Equal(200), string(tok.Raw))
		Expect(tok.JSON).To(HaveKeyWithValue("ltiVersion", "1.1.1"))
		Expect(tok.JSON["user"]).To(HaveKeyWithValue("id", "student-1"))
		Expect(tok.JSON["services"].(map[string]any)["outcomes"]).To(HaveKeyWithValue("available", true))
		Expect(tok.JSON["lti11"]).To(HaveKeyWithValue("status", lti11.StatusLaunch))

		put := call("PUT", "/api/outcomes", map[string]any{"score": 0.7}, ltikAuth(res.Ltik))
		Expect(put.Status).To(Equal(204), string(put.Raw))
		score, stored := lms.Outcome(lmssim.SourcedID("student-1"))
		Expect(stored).To(BeTrue())
		Expect(score).To(Equal("0.7"), "the LMS checked the OAuth signature and body hash and stored the score")
		read := call("GET", "/api/outcomes", nil, ltikAuth(res.Ltik))
		Expect(read.Status).To(Equal(200), string(read.Raw))
		Expect(read.JSON).To(HaveKeyWithValue("score", 0.7))

		By("LTI11-NONCE-01: the same form again is a replay")
		again := b.post(launchURL, form)
		Expect(again.Status).To(Equal(401))
		Expect(again.Body).To(ContainSubstring(lti11.CodeNonceReused))
		Expect(again.Ltik).To(BeEmpty())

		By("LTI11-SIG-03: a launch signed for the address behind the proxy is refused")
		internal := b.post(launchURL, lms.Launch11(baseURL+paths.Launch, "student-1", url.Values{}))
		Expect(internal.Status).To(Equal(401))
		Expect(internal.Body).To(ContainSubstring(lti11.CodeInvalidSignature))
	})

	// Two registrations written with kubectl (the API refuses a second holder it can see;
	// two concurrent creates could both pass) that hold one consumer key: no holder wins.
	It("refuses launches with a consumer key two registrations hold, says so on both, and heals when one goes (LTI11-KEY-03)", func() {
		ctx := context.Background()
		lms := lti11LMS()
		b := newBrowser()
		launchURL := publicURL + paths.Launch
		Expect(b.post(launchURL, lms.Launch11(launchURL, "student-1", nil)).Status).To(Equal(303), "one holder: launches work")
		holder := &ltiv1.PlatformRegistration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lms.ID}, holder)).To(Succeed())
		consumerKey := holder.Spec.LTI11.ConsumerKey

		By("a second registration with the same consumer key, created directly")
		second := newLMS(func(spec *ltiv1.PlatformRegistrationSpec) {
			spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: consumerKey, SharedSecret: ltiv1.SecretKeyRef{Name: "another-tenants-secret"}}
		})
		res := b.post(launchURL, lms.Launch11(launchURL, "student-1", nil))
		Expect(res.Status).To(Equal(503), res.Body)
		Expect(res.Body).To(ContainSubstring(lti11.CodeAmbiguousConsumerKey))
		Expect(res.Ltik).To(BeEmpty())
		ambiguous := func(name, other string) func(g Gomega) {
			return func(g Gomega) {
				reg := &ltiv1.PlatformRegistration{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, reg)).To(Succeed())
				c := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionLTI11ConsumerKeyUnique)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(ltiv1.ReasonAmbiguousConsumerKey))
				g.Expect(c.Message).To(ContainSubstring(other))
			}
		}
		Eventually(ambiguous(lms.ID, second.ID)).Should(Succeed())
		Eventually(ambiguous(second.ID, lms.ID)).Should(Succeed())
		for _, id := range []string{lms.ID, second.ID} {
			reg := &ltiv1.PlatformRegistration{}
			Eventually(func(g Gomega) {
				g.Expect(flushedHealth(ctx, g, id, reg).LastRefusal).NotTo(BeNil())
				g.Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal(lti11.CodeAmbiguousConsumerKey))
			}).Should(Succeed(), "the refusal is in the launch health of both holders")
		}

		By("deleting the second registration")
		Expect(k8s.Delete(ctx, &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: second.ID}})).To(Succeed())
		Eventually(func() int { return b.post(launchURL, lms.Launch11(launchURL, "student-1", nil)).Status }).Should(Equal(303))
		Eventually(func(g Gomega) {
			reg := &ltiv1.PlatformRegistration{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lms.ID}, reg)).To(Succeed())
			c := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionLTI11ConsumerKeyUnique)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())
	})

	It("verifies the lti1p1 claim of the same LMS's 1.3 launches (LTI11-MIG-02)", func() {
		lms := lti11LMS()
		ltik := newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(ltik).NotTo(BeEmpty())
		tok := idToken(ltik)
		Expect(tok.JSON["lti11"]).To(HaveKeyWithValue("verified", true))
		Expect(tok.JSON["lti11"]).To(HaveKeyWithValue("userId", "legacy-teacher-1"))
		Expect(tok.JSON["user"]).To(HaveKeyWithValue("lti11LegacyUserId", "legacy-teacher-1"))
	})
})
