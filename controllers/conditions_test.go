package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
)

var _ = Describe("status writes", func() {
	// A reconcile can read its cache before its own last status write arrives there. Written
	// on that stale read, the same news would be written and announced a second time (seen
	// under load: two InvalidAuthConfig events, a second status write). The write carries the
	// version it read, so the stale one is refused and announces nothing.
	It("refuse a write based on a stale read, and send its event only with a write that succeeded", func(ctx context.Context) {
		ns := uniqueName("stale-read") // outside the manager's namespace: nothing else reconciles it
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		reg := canvasRegistration(uniqueName("stale"), uniqueName("client"))
		reg.Namespace = ns
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		stale := reg.DeepCopy()

		// Another write lands after the read (the reconcile's own previous one).
		written := reg.DeepCopy()
		written.Status.LoginURL = publicURL + "/lti/login"
		Expect(k8s.Status().Patch(ctx, written, client.MergeFrom(reg))).To(Succeed())

		rec := mgr.GetEventRecorder("stale-read-test")
		err := controllers.WriteStatusProblem(ctx, k8s, rec, stale, ltiv1.ReasonInvalidAuthConfig, "stale")
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a write on a stale read is refused, got %v", err)

		current := &ltiv1.PlatformRegistration{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), current)).To(Succeed())
		Expect(current.ResourceVersion).To(Equal(written.ResourceVersion), "the refused write changed nothing")
		Expect(controllers.WriteStatusProblem(ctx, k8s, rec, current, ltiv1.ReasonInvalidAuthConfig, "fresh")).To(Succeed())

		// The recorder sends in order: once the fresh write's event is there, a stale one
		// would be too.
		events := func() []eventsv1.Event {
			var list eventsv1.EventList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}
		Eventually(events).ShouldNot(BeEmpty())
		Expect(events()).To(HaveLen(1))
		Expect(events()[0].Note).To(Equal("fresh"))
		Expect(events()[0].Series).To(BeNil())
	})
})
