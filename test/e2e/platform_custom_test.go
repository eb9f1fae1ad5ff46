package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/toolsim"
)

// Issue #16 §6: custom parameters per tool. The tool here requires custom id, as Moodle's
// "Publish as LTI tool" does, so a launch without the tool's spec.custom would be refused.
var _ = Describe("Platform mode custom parameters", func() {
	It("sends the tool's spec.custom under the launch's, with substitution variables expanded", func(ctx SpecContext) {
		d := startPlatformInstance("ltiop-platform-custom", nil)
		tool, toolURL := serveToolSim(d, func(c *toolsim.Config) { c.RequiredCustom = []string{"id"} })

		By("refusing a malformed custom map at the API server: nothing is stored")
		bad := &ltiv1.ToolRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: "bad-custom"},
			Spec: ltiv1.ToolRegistrationSpec{Name: "Bad", LoginURL: ltiv1.EndpointURL(toolURL + "/login"),
				RedirectionURIs: []ltiv1.EndpointURL{ltiv1.EndpointURL(toolURL + "/launch")},
				TargetLinkURI:   ltiv1.EndpointURL(toolURL + "/launch"),
				AuthConfig:      ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: tool.PublicJWK()},
				Custom:          map[string]string{"resource id": "1"}}}
		err := k8s.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("custom keys must be 1 to 128 letters, digits"))

		By("registering the tool with its custom parameters")
		registerToolOn(ctx, d, "published-course", tool, toolURL, func(s *ltiv1.ToolRegistrationSpec) {
			s.Custom = map[string]string{"id": "7d3e5b0a-5f6c-4c1e-9a53-2f8d6c1b4e90", "user": "$User.id", "course": "$Context.id",
				"link": "$ResourceLink.id", "name": "$Person.name.full", "section": "$CourseSection.sourcedId", "lang": "en"}
		})

		browser, toIntegrator := browserToIntegrator(d, map[string]any{"toolId": "published-course", "user": "student-5",
			"resourceLink": map[string]string{"id": "rl-9", "title": "Week 1"}})
		payload := toIntegrator.Query().Get("payload")

		answerBody := func(custom map[string]string) map[string]any {
			return map[string]any{"payload": payload,
				"user":    map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}, "name": "Sam Lee"},
				"context": map[string]any{"id": "c-1", "title": "Biology"},
				"custom":  custom}
		}
		By("refusing bad launch custom parameters with 400, leaving the payload usable")
		refused := callAt(d.Local, "POST", "/api/launches/idtoken", answerBody(map[string]string{"x": strings.Repeat("v", 1025)}), bearer)
		Expect(refused.Status).To(Equal(400))
		Expect(refused.errorCode()).To(Equal("INVALID_PARAMETERS"))

		By("answering the launch: the tool gets the merged, expanded custom claim")
		answer := callAt(d.Local, "POST", "/api/launches/idtoken", answerBody(map[string]string{"lang": "fr", "chapter": "$ResourceLink.title"}), bearer)
		Expect(answer.Status).To(Equal(200), string(answer.Raw))
		launch := deliverToTool(ctx, browser, answer, tool)
		Expect(launch.Claims[toolsim.ClaimCustom]).To(Equal(map[string]any{
			"id": "7d3e5b0a-5f6c-4c1e-9a53-2f8d6c1b4e90", "user": "student-5", "course": "c-1", "link": "rl-9",
			"name": "Sam Lee", "section": "$CourseSection.sourcedId", "lang": "fr", "chapter": "Week 1",
		}))
	})
})
