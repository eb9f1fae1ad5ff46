package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
)

var _ = Describe("Failed calls to an LMS's services", func() {
	serviceEvents := func(name string) []eventsv1.Event {
		return eventsOn(namespace, name, launchhealth.ReasonServiceCallFailed)
	}

	It("make one ServiceCallFailed Event on the registration per code, with the LMS's status and a hint", func() {
		ctx := context.Background()
		lms := newLMS()
		// The LMS administrator pasted another registration's key set URL: the LMS cannot
		// verify ltiop's client assertions and refuses every token request.
		lms.EnableServices(baseURL + paths.KeySet("someone-else"))
		ltik := newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(ltik).NotTo(BeEmpty())

		for range 3 {
			res := call("GET", "/api/memberships", nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(400), string(res.Raw)) // the token endpoint's invalid_client
			Expect(res.errorCode()).To(Equal("UPSTREAM_ERROR"))
		}
		Expect(serviceEvents(lms.ID)).To(BeEmpty(), "nothing is written on the request path")
		ltiop.ServiceCalls.Flush(ctx)
		Eventually(func() int { return len(serviceEvents(lms.ID)) }).Should(Equal(1))
		ev := serviceEvents(lms.ID)[0]
		Expect(ev.Type).To(Equal("Warning"))
		Expect(ev.Note).To(ContainSubstring("3 call(s)"))
		Expect(ev.Note).To(ContainSubstring("UPSTREAM_ERROR"))
		Expect(ev.Note).To(ContainSubstring("HTTP 400"))
		Expect(ev.Note).To(ContainSubstring("status.jwksUrl"), "the hint for a refused assertion")
		Expect(ev.Note).NotTo(ContainSubstring("teacher-1"))

		By("more failures within the event interval wait for the next Event")
		Expect(call("GET", "/api/memberships", nil, ltikAuth(ltik)).Status).To(Equal(400))
		ltiop.ServiceCalls.Flush(ctx)
		Consistently(func() int { return len(serviceEvents(lms.ID)) }, 2*time.Second).Should(Equal(1))
	})
})
