package deploy

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Chart: platform notices", func() {
	It("passes noticeWebhookUrl to ltiop, and nothing when it is empty", func() {
		values := defaultValues()
		values["noticeWebhookUrl"] = "https://app.example.com/hooks/lti"
		c := container(mustRenderChart(values).Find("Deployment", "ltiop"))
		Expect(c["env"]).To(ContainElement(map[string]any{"name": "LTIOP_NOTICE_WEBHOOK_URL", "value": "https://app.example.com/hooks/lti"}))
		c = container(mustRenderChart(defaultValues()).Find("Deployment", "ltiop"))
		Expect(c["env"]).NotTo(ContainElement(HaveKeyWithValue("name", "LTIOP_NOTICE_WEBHOOK_URL")))
	})
})
