package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
)

// failingKeySets is ltiop_reachability_failing_registrations{check="keySet"} now.
func failingKeySets() float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "ltiop_reachability_failing_registrations" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "check" && l.GetValue() == "keySet" {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

var _ = Describe("The reachability probe", func() {
	// probeEvents are the probe's Events on registration name.
	probeEvents := func(name string) []eventsv1.Event {
		var out []eventsv1.Event
		for _, e := range eventsOn(namespace, name, "") {
			if e.Action == "Probe" {
				out = append(out, e)
			}
		}
		return out
	}
	// probed probes name now and returns the registration once its condition typ has
	// observed the current generation.
	probed := func(name, typ string) *ltiv1.PlatformRegistration {
		ctx := context.Background()
		Expect(ltiop.Reachability.ProbeNow(ctx, name)).To(BeTrue())
		reg := &ltiv1.PlatformRegistration{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, reg)).To(Succeed())
			c := meta.FindStatusCondition(reg.Status.Conditions, typ)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.ObservedGeneration).To(Equal(reg.Generation))
		}).Should(Succeed())
		return reg
	}

	// update changes registration name, again on a conflict (the probe and the controller
	// write its status meanwhile).
	update := func(name string, change func(*ltiv1.PlatformRegistration)) {
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			reg := &ltiv1.PlatformRegistration{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, reg); err != nil {
				return err
			}
			change(reg)
			return k8s.Update(context.Background(), reg)
		})).To(Succeed())
	}

	It("says KeySetReachable and EndpointsReachable, with one Event when the key set starts failing and one when it recovers", func() {
		ctx := context.Background()
		lms := newLMS()
		lms.EnableServices(baseURL + paths.KeySet(lms.ID)) // the simulator's token endpoint answers from now on

		reg := probed(lms.ID, ltiv1.ConditionKeySetReachable)
		ks := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionKeySetReachable)
		Expect(ks.Status).To(Equal(metav1.ConditionTrue))
		Expect(ks.Reason).To(Equal(ltiv1.ReasonReachable))
		Expect(ks.Message).To(ContainSubstring("1 usable RSA signing key"))
		ep := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionEndpointsReachable)
		Expect(ep.Status).To(Equal(metav1.ConditionTrue), ep.Message)
		Expect(meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionReady)).To(BeTrue(), "Ready is kept")
		Expect(probeEvents(lms.ID)).To(BeEmpty(), "a first passing probe is no news")
		failing := failingKeySets()

		By("the LMS moves its key set: NotFound, one Warning Event")
		update(lms.ID, func(r *ltiv1.PlatformRegistration) { r.Spec.AuthConfig.Key = lms.URL + "/jwks-moved" })
		Eventually(func() string { return ltiop.Registry.Get(lms.ID).Spec.AuthConfig.Key }).Should(HaveSuffix("/jwks-moved"))
		reg = probed(lms.ID, ltiv1.ConditionKeySetReachable)
		ks = meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionKeySetReachable)
		Expect(ks.Status).To(Equal(metav1.ConditionFalse))
		Expect(ks.Reason).To(Equal("NotFound"))
		Eventually(func() int { return len(probeEvents(lms.ID)) }).Should(Equal(1))
		ev := probeEvents(lms.ID)[0]
		Expect(ev.Type).To(Equal("Warning"))
		Expect(ev.Reason).To(Equal("NotFound"))
		Expect(ev.Note).To(ContainSubstring("KeySetReachable is False"))
		Expect(meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionReady)).To(BeTrue(), "an unreachable key set does not make the registration un-Ready")
		Expect(failingKeySets()).To(Equal(failing+1), "the alert's gauge counts it")

		By("a standing failure makes no second Event")
		Expect(ltiop.Reachability.ProbeNow(ctx, lms.ID)).To(BeTrue())
		Consistently(func() int { return len(probeEvents(lms.ID)) }, 2*time.Second).Should(Equal(1))

		By("the key set is back: True, one Normal Event")
		update(lms.ID, func(r *ltiv1.PlatformRegistration) { r.Spec.AuthConfig.Key = lms.URL + "/jwks" })
		Eventually(func() string { return ltiop.Registry.Get(lms.ID).Spec.AuthConfig.Key }).Should(HaveSuffix("/jwks"))
		reg = probed(lms.ID, ltiv1.ConditionKeySetReachable)
		Expect(meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionKeySetReachable)).To(BeTrue())
		Eventually(func() int { return len(probeEvents(lms.ID)) }).Should(Equal(2))
		Expect(failingKeySets()).To(Equal(failing))

		By("the annotation turns the probe off for this registration: its conditions go")
		update(lms.ID, func(r *ltiv1.PlatformRegistration) {
			r.Annotations = map[string]string{ltiv1.AnnotationReachabilityProbe: "off"}
		})
		Eventually(func(g Gomega) {
			g.Expect(ltiop.Reachability.ProbeNow(ctx, lms.ID)).To(BeTrue())
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg)).To(Succeed())
			g.Expect(meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionKeySetReachable)).To(BeNil())
			g.Expect(meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionEndpointsReachable)).To(BeNil())
		}).Should(Succeed())
	})

	It("probes every active registration once a round, spread over the round", func() {
		ctx := context.Background()
		a := newLMS()
		b := newLMS(func(s *ltiv1.PlatformRegistrationSpec) { s.AuthConfig.Key = string(s.URL) + "/jwks-moved" })
		start := time.Now()
		ltiop.Reachability.Round(ctx, 3*time.Second)
		Expect(time.Since(start)).To(BeNumerically(">=", 3*time.Second), "a round lasts its span")
		for name, want := range map[string]metav1.ConditionStatus{a.ID: metav1.ConditionTrue, b.ID: metav1.ConditionFalse} {
			reg := &ltiv1.PlatformRegistration{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, reg)).To(Succeed())
			c := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionKeySetReachable)
			Expect(c).NotTo(BeNil(), name)
			Expect(c.Status).To(Equal(want), name)
		}
	})

	It("runs on the replica running the controllers only", func() {
		const ns = "reachability-replicas"
		createNamespace(ns)
		elect := func(c *config.Config) {
			c.LeaderElection, c.LaunchURL = true, launchURL
			c.ReachabilityProbeInterval.Duration = time.Hour
		}
		replicas := []*devInstance{startReplica(ns, restCfg, elect), startReplica(ns, restCfg, elect)}
		probing := func() (n int) {
			for _, r := range replicas {
				if r.Reachability.Running() {
					Expect(r.Leading()).To(BeTrue(), "a replica probes only while it leads")
					n++
				}
			}
			return n
		}
		Eventually(probing).Should(Equal(1), "one replica probes")
		Consistently(probing, 3*time.Second).Should(Equal(1))

		By("the leader stops: the other replica takes over the probe")
		for i, r := range replicas {
			if r.Leading() {
				r.stop()
				replicas = append(replicas[:i:i], replicas[i+1:]...)
				break
			}
		}
		Eventually(probing, time.Minute).Should(Equal(1), "the new leader probes")
	})

	It("goes through the SSRF guard: a key set at the cloud metadata address is NotAllowed", func() {
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) { s.AuthConfig.Key = "http://169.254.169.254/latest/meta-data/" })
		reg := probed(lms.ID, ltiv1.ConditionKeySetReachable)
		ks := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionKeySetReachable)
		Expect(ks.Status).To(Equal(metav1.ConditionFalse))
		Expect(ks.Reason).To(Equal("NotAllowed"))
	})
})
