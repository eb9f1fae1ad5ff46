package e2e

import (
	"context"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
)

var _ = Describe("Launch health of LTI 1.1 launches", func() {
	It("records a refused 1.1 launch (LTI11-SIG-01) and a successful one on the registration, as 1.3 launches are", func() {
		ctx := context.Background()
		lms := lti11LMS()
		b := newBrowser()
		launchURL := publicURL + paths.Launch

		bad := b.post(launchURL, lms.Launch11(baseURL+paths.Launch, "student-secret-name", url.Values{}))
		Expect(bad.Body).To(ContainSubstring(lti11.CodeInvalidSignature))
		reg := &ltiv1.PlatformRegistration{}
		Eventually(func(g Gomega) {
			g.Expect(flushedHealth(ctx, g, lms.ID, reg).LastRefusal).NotTo(BeNil())
		}).Should(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal(lti11.CodeInvalidSignature))
		Expect(reg.Status.LaunchHealth.LastRefusal.Rule).To(Equal("LTI11-SIG-01"))
		Eventually(func(g Gomega) {
			var notes []string
			for _, e := range eventsOn(namespace, lms.ID, launchhealth.ReasonLaunchRefused) {
				notes = append(notes, e.Note)
			}
			g.Expect(notes).To(HaveLen(1))
			g.Expect(notes[0]).To(ContainSubstring("consumer secret"), "the 1.1 hint")
			g.Expect(notes[0]).NotTo(ContainSubstring("student-secret-name"))
		}).Should(Succeed())

		good := b.post(launchURL, lms.Launch11(launchURL, "student-1", nil))
		Expect(good.Ltik).NotTo(BeEmpty(), good.Body)
		Eventually(func(g Gomega) {
			g.Expect(flushedHealth(ctx, g, lms.ID, reg).LastLaunchTime).NotTo(BeNil())
		}).Should(Succeed())
	})
})
