package e2e

import (
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
)

// Platform mode: the ToolRegistration tells the tool's administrator how its launches,
// token requests and deep-linking responses go (issue #27 §1).
var _ = Describe("Launch health on a ToolRegistration", func() {
	It("records a flood of refused token requests (P-TOK-05) as one Event and the last refusal, a refused authorization request (P-AUTH-06), and the last launch", func(ctx SpecContext) {
		d := startPlatformInstance("ltiop-tool-health", nil)
		tool, toolURL := serveToolSim(d, nil)
		reg := registerToolOn(ctx, d, "health-tool", tool, toolURL, nil)
		fetch := func(g Gomega) *ltiv1.LaunchHealth {
			d.ToolHealth.Flush(ctx)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg)).To(Succeed())
			return reg.Status.LaunchHealth
		}

		By("token requests naming the tool, signed by a stranger (P-TOK-08): anyone's, so not the tool's refusals (issue #34)")
		stranger := testkeys.RSAKey(GinkgoTB(), 1)
		for _, opts := range [][]toolsim.AssertionOption{
			{toolsim.WithSigningKey(stranger)},
			{toolsim.WithSigningKey(stranger), toolsim.WithHeader("kid", "strangers-key")},
		} {
			for range 10 {
				_, status, err := tool.RequestTokenWith(ctx, []string{string(ltiv1.ScopeNRPSMembership)}, opts...)
				Expect(err).NotTo(HaveOccurred())
				Expect(status).To(Equal(401))
			}
		}
		Consistently(func(g Gomega) {
			g.Expect(fetch(g)).To(BeNil(), "nothing recorded on the tool's launch health")
			g.Expect(eventsOn(d.Namespace, reg.Name, launchhealth.ReasonTokenRequestRefused)).To(BeEmpty())
		}, 2*time.Second).Should(Succeed())

		By("50 token requests whose assertion is addressed elsewhere")
		for range 50 {
			_, status, err := tool.RequestTokenWith(ctx, []string{string(ltiv1.ScopeNRPSMembership)},
				toolsim.WithClaim("aud", "https://elsewhere.example/token"))
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(401))
		}
		refusedBy := time.Now()
		Eventually(func(g Gomega) {
			h := fetch(g)
			g.Expect(h).NotTo(BeNil())
			g.Expect(h.LastRefusal).NotTo(BeNil())
			g.Expect(h.LastRefusal.Code).To(Equal("AUDIENCE_MISMATCH"))
		}).Should(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Rule).To(Equal("P-TOK-05"))
		Expect(reg.Status.LaunchHealth.LastRefusal.Time.Time).To(BeTemporally("~", refusedBy, 30*time.Second))
		Expect(reg.Status.LaunchHealth.LastLaunchTime).To(BeNil(), "no launch yet")

		Eventually(func() int { return len(eventsOn(d.Namespace, reg.Name, launchhealth.ReasonTokenRequestRefused)) }).Should(Equal(1))
		ev := eventsOn(d.Namespace, reg.Name, launchhealth.ReasonTokenRequestRefused)[0]
		Expect(ev.Type).To(Equal("Warning"))
		Expect(ev.Action).To(Equal("Token"))
		Expect(ev.Note).To(HavePrefix("50 token request(s) refused with AUDIENCE_MISMATCH (rule P-TOK-05)"))
		Expect(ev.Note).To(ContainSubstring("status.tokenEndpoint"), "the hint says what to fix")
		Expect(ev.Regarding.Kind).To(Equal("ToolRegistration"))

		By("an authorization request with a redirect_uri the registration does not list")
		q := url.Values{"scope": {"openid"}, "response_type": {"id_token"}, "response_mode": {"form_post"}, "prompt": {"none"},
			"client_id": {reg.Status.ClientID}, "redirect_uri": {"https://elsewhere.example/launch"},
			"login_hint": {"u"}, "lti_message_hint": {"h"}, "state": {"s"}, "nonce": {"n"}}
		Expect(callAt(d.Local, "GET", paths.PlatformAuthorize+"?"+q.Encode(), nil, nil).Status).To(Equal(400))
		Eventually(func(g Gomega) {
			g.Expect(fetch(g).LastRefusal.Code).To(Equal("INVALID_REDIRECT_URI"))
		}).Should(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Rule).To(Equal("P-AUTH-06"))
		Eventually(func() []string {
			var actions []string
			for _, e := range eventsOn(d.Namespace, reg.Name, launchhealth.ReasonLaunchRefused) {
				actions = append(actions, e.Action+" "+strings.SplitN(e.Note, ".", 2)[0])
			}
			return actions
		}).Should(ConsistOf("Authorize 1 authorization request(s) refused with INVALID_REDIRECT_URI (rule P-AUTH-06) since the last report"))

		By("a launch")
		body := map[string]any{"toolId": reg.Name, "user": "student-secret-name", "resourceLink": map[string]string{"id": "rl-1"}}
		_, toIntegrator := browserToIntegrator(d, body)
		Expect(toIntegrator.Query().Get("payload")).NotTo(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(fetch(g).LastLaunchTime).NotTo(BeNil())
		}).Should(Succeed())
		Expect(reg.Status.LaunchHealth.LastRefusal.Code).To(Equal("INVALID_REDIRECT_URI"), "the last refusal is kept")

		By("more refusals within the event interval make no second Event; no Event names a user")
		_, status, err := tool.RequestTokenWith(ctx, []string{string(ltiv1.ScopeNRPSMembership)},
			toolsim.WithClaim("aud", "https://elsewhere.example/token"))
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(401))
		d.ToolHealth.Flush(ctx)
		Consistently(func() int {
			return len(eventsOn(d.Namespace, reg.Name, launchhealth.ReasonTokenRequestRefused))
		}, 2*time.Second).Should(Equal(1))
		Eventually(func(g Gomega) {
			d.ToolHealth.Flush(ctx)
			cols := printedColumns("toolregistrations", d.Namespace, reg.Name)
			g.Expect(cols["Last Error"]).To(Equal("AUDIENCE_MISMATCH"), "kubectl get toolreg: LAST ERROR")
			g.Expect(cols["Last Launch"]).To(MatchRegexp(`^[0-9]+s$`), "kubectl get toolreg: LAST LAUNCH")
		}).Should(Succeed())

		By("the tools API answering the same launch health; a PUT of what GET answered is accepted")
		var shown response
		Eventually(func(g Gomega) {
			h := fetch(g)
			shown = callAt(d.Local, "GET", "/api/tools/"+reg.Name, nil, bearer)
			g.Expect(shown.Status).To(Equal(200))
			g.Expect(shown.JSON["launchHealth"]).To(Equal(map[string]any{
				"lastLaunchTime": h.LastLaunchTime.UTC().Format(time.RFC3339),
				"lastRefusal":    map[string]any{"time": h.LastRefusal.Time.UTC().Format(time.RFC3339), "code": "AUDIENCE_MISMATCH", "rule": "P-TOK-05"},
			}))
		}).Should(Succeed())
		put := callAt(d.Local, "PUT", "/api/tools/"+reg.Name, shown.JSON, bearer)
		Expect(put.Status).To(Equal(200), string(put.Raw))
		for _, e := range append(eventsOn(d.Namespace, reg.Name, launchhealth.ReasonTokenRequestRefused),
			eventsOn(d.Namespace, reg.Name, launchhealth.ReasonLaunchRefused)...) {
			Expect(e.Note).NotTo(ContainSubstring("student-secret-name"))
		}
	})
})
