package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
)

// dynamicRegistration is what /lti/register writes: labelled, inactive.
func dynamicRegistration(name string) *ltiv1.PlatformRegistration {
	reg := canvasRegistration(name, uniqueName("client"))
	reg.Labels = map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration}
	reg.Spec.Active = ptr.To(false)
	return reg
}

func setActive(ctx context.Context, reg *ltiv1.PlatformRegistration, active bool) {
	cur := fresh(reg)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Active = ptr.To(active)
	ExpectWithOffset(1, k8s.Patch(ctx, cur, patch)).To(Succeed())
}

var _ = Describe("Dynamic registrations awaiting activation (issue #13 §1)", func() {
	ctx := context.Background()

	It("makes no key or Secret for a never-activated dynamic registration, then keeps the key once activated", func() {
		reg := dynamicRegistration(uniqueName("flood"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(And(haveReason(metav1.ConditionFalse, ltiv1.ReasonAwaitingActivation),
			withMessage("not activated yet")))
		// The status above is written by the reconcile that decided not to make a key.
		_, err := keySecret(reg)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no key Secret for a registration never activated: %v", err)
		cur := fresh(reg)
		Expect(cur.Status.KID).To(BeEmpty())
		Expect(cur.Status.FirstActivated).To(BeNil())
		Expect(eventsFor(reg.Name, ltiv1.ReasonAwaitingActivation)()).To(BeEmpty(), "waiting is not an error: no Warning event")
		Expect(cur.Status.Conditions).NotTo(ContainElement(HaveField("Type", ltiv1.ConditionStalled)))

		setActive(ctx, reg, true)
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		activated := fresh(reg)
		Expect(activated.Status.FirstActivated).NotTo(BeNil())
		Expect(activated.Status.KID).NotTo(BeEmpty())
		secret, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())

		// Deactivating later keeps the key, and the registration no longer awaits activation.
		setActive(ctx, reg, false)
		Eventually(readyCondition(reg)).Should(And(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady), withMessage("inactive")))
		again, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.UID).To(Equal(secret.UID))
		Expect(fresh(reg).Status.KID).To(Equal(activated.Status.KID))
		Expect(fresh(reg).AwaitingActivation()).To(BeFalse())
	})

	It("gives a registration created by kubectl or the platforms API its key even when inactive", func() {
		reg := canvasRegistration(uniqueName("trusted"), uniqueName("client"))
		reg.Spec.Active = ptr.To(false)
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		_, err := keySecret(reg)
		Expect(err).NotTo(HaveOccurred())
	})

	It("deletes a dynamic registration never activated once it is older than the expiry, with an Expired event", func() {
		pending := dynamicRegistration(uniqueName("stale"))
		Expect(k8s.Create(ctx, pending)).To(Succeed())
		Eventually(readyCondition(pending)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonAwaitingActivation))
		wasActive := dynamicRegistration(uniqueName("was-active"))
		Expect(k8s.Create(ctx, wasActive)).To(Succeed())
		setActive(ctx, wasActive, true)
		Eventually(func() *metav1.Time { return fresh(wasActive).Status.FirstActivated }).ShouldNot(BeNil())
		setActive(ctx, wasActive, false)
		trusted := canvasRegistration(uniqueName("trusted-old"), uniqueName("client"))
		trusted.Spec.Active = ptr.To(false)
		Expect(k8s.Create(ctx, trusted)).To(Succeed())
		Eventually(readyCondition(trusted)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		// A reconciler whose clock is eight days ahead, against the same API server.
		expiry := 7 * 24 * time.Hour
		later := &controllers.PlatformRegistrationReconciler{
			Client: mgr.GetClient(), APIReader: k8s, Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("ltiop-test"),
			PublicURL: publicURL, PendingExpiry: expiry, Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) },
		}
		for _, reg := range []*ltiv1.PlatformRegistration{wasActive, trusted} {
			_, err := later.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(reg)})
			Expect(err).NotTo(HaveOccurred())
			Expect(fresh(reg).DeletionTimestamp).To(BeNil(), "%s was activated once, or is trusted: it never expires", reg.Name)
		}
		_, err := later.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pending)})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pending), &ltiv1.PlatformRegistration{}))
		}).Should(BeTrue(), "the never-activated registration is deleted")
		Eventually(eventsFor(pending.Name, ltiv1.ReasonExpired)).ShouldNot(BeEmpty())
	})

	It("requeues a waiting registration for its expiry", func() {
		reg := dynamicRegistration(uniqueName("waiting"))
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(readyCondition(reg)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonAwaitingActivation)) // cached now
		r := &controllers.PlatformRegistrationReconciler{
			Client: mgr.GetClient(), APIReader: k8s, Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("ltiop-test"),
			PublicURL: publicURL, PendingExpiry: time.Hour,
		}
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(reg)})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).To(And(BeNumerically(">", 0), BeNumerically("<=", time.Hour)))
		Expect(fresh(reg).DeletionTimestamp).To(BeNil())
	})
})
