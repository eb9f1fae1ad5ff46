package e2e

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

var _ = Describe("Launch health on the registration", func() {
	// refusalEvents are the LaunchRefused Events on registration name.
	refusalEvents := func(name string) []eventsv1.Event {
		return eventsOn(namespace, name, launchhealth.ReasonLaunchRefused)
	}

	It("records a flood of 100 refused launches (T-TOK-12) as the last refusal and one Event, and the last successful launch", func() {
		ctx := context.Background()
		lms := newLMS()
		lms.Customize = func(c, h map[string]any) { c["aud"] = "someone-else" } // T-TOK-12

		const workers, each = 4, 25
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				b := newBrowser()
				for range each {
					res := b.launch(lms, "user=student-secret-name")
					Expect(res.Body).To(ContainSubstring("AUDIENCE_MISMATCH"))
				}
			}()
		}
		wg.Wait()
		refusedBy := time.Now()

		// The launch path wrote nothing: the registration learns of it at the flush.
		reg := &ltiv1.PlatformRegistration{}
		Eventually(func(g Gomega) {
			g.Expect(flushedHealth(ctx, g, lms.ID, reg).LastRefusal).NotTo(BeNil())
		}).Should(Succeed())
		refusal := reg.Status.LaunchHealth.LastRefusal
		Expect(refusal.Code).To(Equal("AUDIENCE_MISMATCH"))
		Expect(refusal.Rule).To(Equal("T-TOK-12"))
		Expect(refusal.Time.Time).To(BeTemporally("~", refusedBy, 30*time.Second))
		Expect(reg.Status.LaunchHealth.LastLaunchTime).To(BeNil(), "no launch succeeded yet")

		Eventually(func() int { return len(refusalEvents(lms.ID)) }).Should(Equal(1))
		ev := refusalEvents(lms.ID)[0]
		Expect(ev.Type).To(Equal("Warning"))
		Expect(ev.Note).To(ContainSubstring("AUDIENCE_MISMATCH"))
		Expect(ev.Note).To(ContainSubstring("T-TOK-12"))
		Expect(ev.Note).To(ContainSubstring("clientId"), "the hint says what to fix")
		Expect(ev.Note).NotTo(ContainSubstring("student-secret-name"), "no user in an Event")

		By("a successful launch")
		lms.Customize = nil
		res := newBrowser().launch(lms, "user=teacher-1")
		Expect(res.Ltik).NotTo(BeEmpty(), res.Body)
		Eventually(func(g Gomega) {
			g.Expect(flushedHealth(ctx, g, lms.ID, reg).LastLaunchTime).NotTo(BeNil())
		}).Should(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal("AUDIENCE_MISMATCH"), "the last refusal is kept")
		cols := printedColumns("platformregistrations", namespace, lms.ID)
		Expect(cols["Last Error"]).To(Equal("AUDIENCE_MISMATCH"), "kubectl get platreg: LAST ERROR")
		Expect(cols["Last Launch"]).To(MatchRegexp(`^[0-9]+s$`), "kubectl get platreg: LAST LAUNCH")

		By("the platforms API answering the same launch health to an onboarding page")
		Eventually(func(g Gomega) {
			h := flushedHealth(ctx, g, lms.ID, reg)
			got := call("GET", "/api/platforms/"+lms.ID, nil, bearer)
			g.Expect(got.Status).To(Equal(200))
			g.Expect(got.JSON["launchHealth"]).To(Equal(map[string]any{
				"lastLaunchTime": h.LastLaunchTime.UTC().Format(time.RFC3339),
				"lastRefusal":    map[string]any{"time": h.LastRefusal.Time.UTC().Format(time.RFC3339), "code": "AUDIENCE_MISMATCH", "rule": "T-TOK-12"},
			}))
		}).Should(Succeed())

		By("more refusals within the event interval make no second Event")
		lms.Customize = func(c, h map[string]any) { c["aud"] = "someone-else" }
		Expect(newBrowser().launch(lms, "user=teacher-1").Body).To(ContainSubstring("AUDIENCE_MISMATCH"))
		ltiop.LaunchHealth.Flush(ctx)
		Consistently(func() int { return len(refusalEvents(lms.ID)) }, 2*time.Second).Should(Equal(1))
	})

	It("names the deployment and the registered ones in the UNKNOWN_DEPLOYMENT Event of a verified id_token (T-TOK-19), and nothing a login sent (T-LOGIN-04)", func(ctx SpecContext) {
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) { s.DeploymentIDs = []string{"deployment-2", "deployment-3"} })
		// byAction flushes, then maps each action to the note of its LaunchRefused Event.
		byAction := func() map[string]string {
			ltiop.LaunchHealth.Flush(ctx)
			notes := map[string]string{}
			for _, e := range refusalEvents(lms.ID) {
				notes[e.Action] = e.Note
			}
			return notes
		}

		By("an anonymous login naming the registration, its deployment id a phishing sentence (issue #34)")
		const phish = "Your LTI licence expired: call +1 555 0100 or visit https://evil.example/renew"
		q := url.Values{"iss": {lms.URL}, "client_id": {lms.ClientID}, "login_hint": {"u"},
			"target_link_uri": {publicURL + "/lti/launch"}, "lti_deployment_id": {phish}}
		res := call("GET", "/lti/login?"+q.Encode(), nil, map[string]string{"Accept": "application/json"})
		Expect(res.Status).To(Equal(403))
		Expect(res.errorCode()).To(Equal("UNKNOWN_DEPLOYMENT"))
		reg := &ltiv1.PlatformRegistration{}
		Eventually(func(g Gomega) {
			g.Expect(flushedHealth(ctx, g, lms.ID, reg).LastRefusal).NotTo(BeNil())
		}).Should(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal("UNKNOWN_DEPLOYMENT"), "the code and rule are still recorded")
		Expect(reg.Status.LaunchHealth.LastRefusal.Rule).To(Equal("T-LOGIN-04"))
		var note string
		Eventually(func(g Gomega) {
			note = byAction()["Login"]
			g.Expect(note).NotTo(BeEmpty())
		}).Should(Succeed())
		Expect(note).To(HavePrefix("1 login request(s) refused with UNKNOWN_DEPLOYMENT (rule T-LOGIN-04)"))
		Expect(note).To(ContainSubstring("A login request named a deployment"))
		Expect(note).To(ContainSubstring(`Registered: "deployment-2", "deployment-3".`))
		Expect(note).NotTo(ContainSubstring("evil.example"), "nothing the login sent")
		Expect(note).NotTo(ContainSubstring("The LMS sent"), "an unsigned login is not the LMS's word")

		By("an anonymous login naming a target_link_uri outside ltiop (T-LOGIN-05)")
		q = url.Values{"iss": {lms.URL}, "client_id": {lms.ClientID}, "login_hint": {"u"},
			"target_link_uri": {"https://evil.example/renew-your-licence"}}
		res = call("GET", "/lti/login?"+q.Encode(), nil, map[string]string{"Accept": "application/json"})
		Expect(res.errorCode()).To(Equal("INVALID_TARGET_LINK_URI"))
		Eventually(func(g Gomega) {
			ltiop.LaunchHealth.Flush(ctx)
			var notes []string
			for _, e := range refusalEvents(lms.ID) {
				if strings.Contains(e.Note, "INVALID_TARGET_LINK_URI") {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(HaveLen(1))
			g.Expect(notes[0]).To(ContainSubstring("A login request named a target_link_uri outside ltiop"))
			g.Expect(notes[0]).NotTo(ContainSubstring("evil.example"))
		}).Should(Succeed())

		By("a launch whose login names a registered deployment and whose signed id_token another")
		lms.DeploymentID = "deployment-2"
		lms.Customize = func(c, h map[string]any) {
			c["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = "deployment-1"
		}
		Expect(newBrowser().launch(lms, "user=teacher-1").Body).To(ContainSubstring("UNKNOWN_DEPLOYMENT"))
		Eventually(func(g Gomega) {
			note = byAction()["Launch"]
			g.Expect(note).NotTo(BeEmpty())
		}).Should(Succeed())
		Expect(note).To(HavePrefix("1 launch(es) refused with UNKNOWN_DEPLOYMENT (rule T-TOK-19)"))
		Expect(note).To(ContainSubstring(`The LMS sent "deployment-1". Registered: "deployment-2", "deployment-3".`))
	})

	It("never steps back in time when two replicas write, one from a cache that missed the other's write", func(ctx SpecContext) {
		lms := newLMS()
		reg := &ltiv1.PlatformRegistration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lms.ID}, reg)).To(Succeed())
		p := &registry.Platform{ID: reg.Name, UID: reg.UID}
		// Two replicas' recorders. A reads through a cache that still holds the
		// registration as it is now, before B's write.
		lagging := &laggingReader{Reader: k8s, stale: reg.DeepCopy()}
		a := launchhealth.New(launchhealth.Options{Namespace: namespace, Reader: lagging, Writer: k8s})
		b := launchhealth.New(launchhealth.Options{Namespace: namespace, Reader: k8s, Writer: k8s})

		a.Refused(p, "AUDIENCE_MISMATCH", "T-TOK-12", "")
		a.Launched(p)
		older := time.Now().Truncate(time.Second)
		Eventually(func() bool { return time.Now().Truncate(time.Second).After(older) }).Should(BeTrue()) // status times are seconds
		b.Refused(p, "UNKNOWN_KID", "T-TOK-08", "")

		b.Flush(ctx)
		a.Flush(ctx) // from the stale copy: refused by the API server (Conflict), kept for the next flush
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg)).To(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal("UNKNOWN_KID"), "B's newer refusal stands")
		Expect(reg.Status.LaunchHealth.LastLaunchTime).To(BeNil())

		a.Flush(ctx) // a fresh read: only what A saw that is newer goes in
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg)).To(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal("UNKNOWN_KID"), "A's older refusal does not replace it")
		Expect(reg.Status.LaunchHealth.LastLaunchTime).NotTo(BeNil(), "A's launch is merged in")
	})
})

// laggingReader answers the first Get from a copy taken earlier, as the informer cache of
// a replica that has not yet seen another replica's write; later Gets read the API server.
type laggingReader struct {
	client.Reader
	stale *ltiv1.PlatformRegistration
	used  bool
}

func (l *laggingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if reg, ok := obj.(*ltiv1.PlatformRegistration); ok && !l.used {
		l.used = true
		l.stale.DeepCopyInto(reg)
		return nil
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}
