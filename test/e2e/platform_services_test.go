package e2e

import (
	"net/http/httptest"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/stdwebhook"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
)

// Platform mode's whole chain on the real API server and the real app wiring: a tool
// registers itself (dynamic registration), is launched with the services ltiop serves,
// gets a token, reads the roster and posts a score, which reaches the integrator's data
// API signed with the webhook secret.
var _ = Describe("Platform mode services", func() {
	It("registers a tool dynamically, launches it with ltiop's NRPS and AGS, and passes its score to the integrator", func(ctx SpecContext) {
		key, err := stdwebhook.ParseSecret(webhookSecret)
		Expect(err).NotTo(HaveOccurred())
		data := datasim.New(key)
		dataSrv := httptest.NewServer(data.Handler())
		DeferCleanup(dataSrv.Close)
		data.AddMembers("course-1", "Biology", datasim.Member{UserID: "student-5", Roles: []string{"Learner"}, Name: "Sam"},
			datasim.Member{UserID: "teacher-1", Roles: []string{"Instructor"}})
		d := startPlatformInstance("ltiop-platform-services", func(c *config.Config) { c.PlatformData.URL = dataSrv.URL + "/data" })
		setWebhookSecret(d.Namespace) // read by an informer: the first data call below waits for it

		By("the tool registering itself, pre-approved")
		tool, toolURL := serveToolSim(d, nil)
		started := callAt(d.Local, "POST", "/api/tools/registrations", map[string]any{"initiationUrl": toolURL + "/register", "preApproved": true}, bearer)
		Expect(started.Status).To(Equal(201), string(started.Raw))
		reg, err := tool.Register(ctx, started.JSON["url"].(string), toolURL,
			[]string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSLineItem), string(ltiv1.ScopeAGSScore)}, false)
		Expect(err).NotTo(HaveOccurred())
		var toolID string
		Eventually(func(g Gomega) {
			list := callAt(d.Local, "GET", "/api/tools?clientId="+url.QueryEscape(reg.ClientID), nil, bearer)
			tools, _ := list.JSON["tools"].([]any)
			g.Expect(tools).To(HaveLen(1))
			t := tools[0].(map[string]any)
			g.Expect(t["ready"]).To(BeTrue())
			toolID = t["id"].(string)
		}).Should(Succeed())

		By("launching it with the services ltiop serves, naming the line item the integrator made for it")
		lineItem := data.AddLineItem("course-1", toolID, datasim.LineItem{Label: "Quiz 1", ScoreMaximum: 10, ResourceLinkID: "rl-1"})
		browser, toIntegrator := browserToIntegrator(d, map[string]any{"toolId": toolID, "user": "student-5",
			"resourceLink": map[string]string{"id": "rl-1"}})
		answer := callAt(d.Local, "POST", "/api/launches/idtoken", map[string]any{
			"payload":  toIntegrator.Query().Get("payload"),
			"user":     map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}},
			"context":  map[string]any{"id": "course-1"},
			"services": map[string]any{"namesAndRoles": true, "assignmentAndGrades": map[string]any{"lineItemId": lineItem}},
		}, bearer)
		Expect(answer.Status).To(Equal(200), string(answer.Raw))
		launch := deliverToTool(ctx, browser, answer, tool)
		nrps := launch.Claims["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"].(map[string]any)
		ags := launch.Claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"].(map[string]any)
		memberships, lineItemURL := nrps["context_memberships_url"].(string), ags["lineitem"].(string)
		Expect(memberships).To(HavePrefix(d.URL + "/lti/platform/services/"))

		By("reading the roster and posting a score with a token from ltiop")
		tr, status, err := tool.RequestToken(ctx, []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore)})
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(200))
		local := func(u string) string { return strings.Replace(u, d.URL, d.Local, 1) }
		Eventually(func(g Gomega) { // the webhook secret is read by an informer
			ans, err := tool.CallService(ctx, "GET", local(memberships), tr.AccessToken, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", "", nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ans.Status).To(Equal(200), string(ans.Body))
			g.Expect(string(ans.Body)).To(ContainSubstring(`"user_id":"teacher-1"`))
		}).Should(Succeed())
		score := []byte(`{"userId":"student-5","scoreGiven":9,"scoreMaximum":10,"activityProgress":"Completed","gradingProgress":"FullyGraded","timestamp":"2026-11-29T01:00:00.000Z"}`)
		ans, err := tool.CallService(ctx, "POST", local(lineItemURL)+"/scores", tr.AccessToken, "", "application/vnd.ims.lis.v1.score+json", score)
		Expect(err).NotTo(HaveOccurred())
		Expect(ans.Status).To(Equal(200), string(ans.Body))
		got := data.Scores("course-1", lineItem)
		Expect(got).To(HaveLen(1))
		Expect(*got[0].ScoreGiven).To(Equal(9.0))

		By("a score posted with a token without the score scope: refused, and the tool's registration says so")
		nrpsOnly, status, err := tool.RequestToken(ctx, []string{string(ltiv1.ScopeNRPSMembership)})
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(200))
		ans, err = tool.CallService(ctx, "POST", local(lineItemURL)+"/scores", nrpsOnly.AccessToken, "", "application/vnd.ims.lis.v1.score+json", score)
		Expect(err).NotTo(HaveOccurred())
		Expect(ans.Status).To(Equal(403), string(ans.Body))
		treg := &ltiv1.ToolRegistration{}
		Eventually(func(g Gomega) {
			d.ToolHealth.Flush(ctx)
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: toolID}, treg)).To(Succeed())
			g.Expect(treg.Status.LaunchHealth).NotTo(BeNil())
			g.Expect(treg.Status.LaunchHealth.LastLaunchTime).NotTo(BeNil(), "the launch above")
			g.Expect(treg.Status.LaunchHealth.LastRefusal).NotTo(BeNil())
			g.Expect(treg.Status.LaunchHealth.LastRefusal.Code).To(Equal("INSUFFICIENT_SCOPE"))
		}).Should(Succeed())
		Eventually(func() []eventsv1.Event { return eventsOn(d.Namespace, toolID, launchhealth.ReasonServiceCallRefused) }).Should(HaveLen(1))
		ev := eventsOn(d.Namespace, toolID, launchhealth.ReasonServiceCallRefused)[0]
		Expect(ev.Action).To(Equal("ServiceCall"))
		Expect(ev.Note).To(HavePrefix("1 service call(s) refused with INSUFFICIENT_SCOPE"))
		Expect(ev.Note).To(ContainSubstring("spec.scopes"))

		By("deactivating the tool through the tools API: its service calls stop")
		Expect(callAt(d.Local, "POST", "/api/tools/"+toolID+"/deactivate", nil, bearer).Status).To(Equal(200))
		Eventually(func() int {
			ans, _ := tool.CallService(ctx, "GET", local(memberships), tr.AccessToken, "", "", nil)
			return ans.Status
		}).Should(Equal(401))
	})
})
