package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/integratorsim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/stdwebhook"
)

// The integrator's webhook secret, in the suite's API key Secret under webhookSecret.
const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// integratorHook is the integrator's webhook (integratorsim's, which the demo uses too),
// served for the suite: it keeps every delivery unchecked, for the specs to check, and
// answers with the status it is told to (200 unless set).
type integratorHook struct {
	*httptest.Server
	*integratorsim.Webhook
}

func newIntegratorHook() *integratorHook {
	w := integratorsim.NewWebhook(nil)
	h := &integratorHook{Server: httptest.NewServer(w), Webhook: w}
	DeferCleanup(h.Close)
	return h
}

var webhookSecretOnce sync.Once

// ensureWebhookSecret adds the webhook secret to the suite's API key Secret, once.
func ensureWebhookSecret() {
	webhookSecretOnce.Do(func() { setWebhookSecret(namespace) })
}

// setWebhookSecret adds the webhook secret to the API key Secret of namespace ns.
func setWebhookSecret(ns string) {
	ExpectWithOffset(1, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ltiop-api-key"}, &s); err != nil {
			return err
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data["webhookSecret"] = []byte(webhookSecret)
		return k8s.Update(context.Background(), &s)
	})).To(Succeed())
}

// pnsLMS is a registered LMS simulator offering services and PNS, whose notices ltiop
// delivers to hook (spec.noticeWebhookUrl). It returns once a notice goes through, so that
// the webhook secret is loaded; the hook's log is then empty.
func pnsLMS(hook *integratorHook) *lmsServer {
	ensureWebhookSecret()
	lms := servicesLMS()
	lms.EnablePNS(nil)
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var reg ltiv1.PlatformRegistration
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: lms.ID}, &reg); err != nil {
			return err
		}
		reg.Spec.NoticeWebhookURL = ltiv1.EndpointURL(hook.URL + "/hooks/lti")
		return k8s.Update(context.Background(), &reg)
	})).To(Succeed())
	Eventually(func() int {
		return postNotices(lms, sign(lms, lms.NoticeClaims(lmssim.NoticeHelloWorld))).Status
	}).Should(Equal(http.StatusOK), "the registration's webhook and the webhook secret are in place")
	hook.Reset()
	return lms
}

// noticeEndpoint is ltiop's notice endpoint for lms, where the suite reaches it.
func noticeEndpoint(lms *lmsServer) string { return baseURL + paths.NoticeEndpoint(lms.ID) }

func sign(lms *lmsServer, claims map[string]any) string {
	tok, err := lms.Sign(claims, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return tok
}

// postNotices posts a batch as the platform does and reads ltiop's answer.
func postNotices(lms *lmsServer, jwts ...string) response {
	var batch struct {
		Notices []map[string]string `json:"notices"`
	}
	for _, j := range jwts {
		batch.Notices = append(batch.Notices, map[string]string{"jwt": j})
	}
	return call("POST", paths.NoticeEndpoint(lms.ID), batch, nil)
}

func noticeID(claims map[string]any) string {
	return claims[lmssim.ClaimNotice].(map[string]any)["id"].(string)
}

func results(res response) []map[string]any {
	var out []map[string]any
	for _, r := range res.JSON["notices"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

func noticeAuth(key string) map[string]string {
	return map[string]string{"Authorization": "NOTICE-AUTH-V1 " + apiKey + ":" + key}
}

var _ = Describe("Platform Notification Service", func() {
	var (
		hook *integratorHook
		lms  *lmsServer
	)
	BeforeEach(func() {
		hook = newIntegratorHook()
		lms = pnsLMS(hook)
	})

	It("registers ltiop's own notice endpoint with the platform, never a URL of the integrator (T-PNS-08)", func() {
		ltik := newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(ltik).NotTo(BeEmpty())
		ours := publicURL + paths.NoticeEndpoint(lms.ID)

		res := call("PUT", "/api/notices/handlers", map[string]any{"noticeType": lmssim.NoticeAssetProcessorSubmission}, ltikAuth(ltik))
		Expect(res.Status).To(Equal(http.StatusOK), string(res.Raw))
		Expect(res.JSON).To(HaveKeyWithValue("registered", true))
		Expect(res.JSON).To(HaveKeyWithValue("handler", ours))
		Expect(lms.NoticeHandler(lmssim.NoticeAssetProcessorSubmission)).To(Equal(ours), "the platform holds ltiop's endpoint")

		res = call("GET", "/api/notices/handlers", nil, ltikAuth(ltik))
		Expect(res.Status).To(Equal(http.StatusOK), string(res.Raw))
		Expect(res.JSON).To(HaveKeyWithValue("deploymentId", "deployment-1"))
		Expect(res.JSON).To(HaveKeyWithValue("endpoint", ours))
		Expect(res.JSON["handlers"]).To(ContainElement(And(HaveKeyWithValue("noticeType", lmssim.NoticeAssetProcessorSubmission),
			HaveKeyWithValue("registered", true))))
		Expect(res.JSON["handlers"]).To(ContainElement(And(HaveKeyWithValue("noticeType", lmssim.NoticeContextCopy),
			HaveKeyWithValue("registered", false))))

		By("the integrator cannot name the handler")
		res = call("PUT", "/api/notices/handlers", map[string]any{"noticeType": lmssim.NoticeContextCopy, "handler": "https://evil.example/hook"}, ltikAuth(ltik))
		Expect(res.Status).To(Equal(http.StatusBadRequest), string(res.Raw))
		Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
		Expect(res.errorDescription()).To(ContainSubstring("handler"))
		Expect(lms.NoticeHandler(lmssim.NoticeContextCopy)).To(BeEmpty(), "nothing was registered")
		for _, bad := range []string{"", "Lti Notice", strings.Repeat("A", 101), "x/../y"} {
			res = call("PUT", "/api/notices/handlers", map[string]any{"noticeType": bad}, ltikAuth(ltik))
			Expect(res.Status).To(Equal(http.StatusBadRequest), bad)
			Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
			Expect(res.errorDescription()).To(HavePrefix("noticeType:"))
		}
		res = call("PUT", "/api/notices/handlers", map[string]any{"noticeType": lmssim.NoticeContextCopy, "maxBatchSize": 0}, ltikAuth(ltik))
		Expect(res.Status).To(Equal(http.StatusBadRequest))
		Expect(res.errorDescription()).To(HavePrefix("maxBatchSize:"))

		By("a type the platform does not support: its refusal, passed on")
		res = call("PUT", "/api/notices/handlers", map[string]any{"noticeType": "LtiUnknownNotice"}, ltikAuth(ltik))
		Expect(res.Status).To(Equal(http.StatusBadRequest), string(res.Raw))
		Expect(res.JSON["details"]).To(HaveKeyWithValue("externalError", true))

		By("with the service key, for background work")
		key, _ := idToken(ltik).JSON["services"].(map[string]any)["serviceKey"].(string)
		Expect(call("GET", "/api/notices/handlers", nil, serviceAuth(key)).Status).To(Equal(http.StatusOK))

		By("DELETE unregisters")
		res = call("DELETE", "/api/notices/handlers?noticeType="+lmssim.NoticeAssetProcessorSubmission, nil, ltikAuth(ltik))
		Expect(res.Status).To(Equal(http.StatusNoContent), string(res.Raw))
		Expect(lms.NoticeHandler(lmssim.NoticeAssetProcessorSubmission)).To(BeEmpty())

		By("no credential, no call")
		Expect(call("GET", "/api/notices/handlers", nil, nil).Status).To(Equal(http.StatusUnauthorized))
	})

	It("delivers exactly one webhook for a batch of one valid, one forged, one replayed and one expired notice (T-PNS-01..06, T-PNS-09)", func() {
		first := lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission)
		firstJWT := sign(lms, first)
		res := postNotices(lms, firstJWT)
		Expect(res.Status).To(Equal(http.StatusOK), string(res.Raw))
		Expect(hook.Received()).To(HaveLen(1))
		hook.Reset()

		valid := lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission)
		forger, err := lmssim.New(lms.Issuer, lms.ClientID, lms.DeploymentID)
		Expect(err).NotTo(HaveOccurred())
		forged, err := forger.Sign(lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission), map[string]any{"kid": lms.KID()})
		Expect(err).NotTo(HaveOccurred())
		expired := lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission)
		expired["iat"], expired["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()

		res = postNotices(lms, sign(lms, valid), forged, firstJWT, sign(lms, expired))
		Expect(res.Status).To(Equal(http.StatusOK), string(res.Raw))
		r := results(res)
		Expect(r[0]).To(And(HaveKeyWithValue("status", "delivered"), HaveKeyWithValue("id", noticeID(valid))))
		Expect(r[1]).To(And(HaveKeyWithValue("status", "refused"), HaveKeyWithValue("error", "INVALID_SIGNATURE")))
		Expect(r[2]).To(And(HaveKeyWithValue("status", "duplicate"), HaveKeyWithValue("id", noticeID(first))))
		Expect(r[3]).To(And(HaveKeyWithValue("status", "refused"), HaveKeyWithValue("error", "TOKEN_EXPIRED")))

		got := hook.Received()
		Expect(got).To(HaveLen(1), "exactly one webhook")
		key, err := stdwebhook.ParseSecret(webhookSecret)
		Expect(err).NotTo(HaveOccurred())
		Expect(stdwebhook.Verify(key, got[0].Header, got[0].Body, time.Now())).To(Succeed(), "a Standard Webhooks verifier accepts it")
		Expect(got[0].Header.Get("webhook-id")).To(HavePrefix("msg_"))

		var ev struct {
			Type string `json:"type"`
			Data struct {
				Notice             map[string]string `json:"notice"`
				Platform           map[string]string `json:"platform"`
				Context            map[string]string `json:"context"`
				NoticeKey          string            `json:"noticeKey"`
				NoticeKeyExpiresAt time.Time         `json:"noticeKeyExpiresAt"`
				Claims             map[string]any    `json:"claims"`
			} `json:"data"`
		}
		Expect(json.Unmarshal(got[0].Body, &ev)).To(Succeed())
		Expect(ev.Type).To(Equal("lti.notice"))
		Expect(ev.Data.Notice).To(And(HaveKeyWithValue("id", noticeID(valid)), HaveKeyWithValue("type", lmssim.NoticeAssetProcessorSubmission)))
		Expect(ev.Data.Platform).To(And(HaveKeyWithValue("id", lms.ID), HaveKeyWithValue("deploymentId", "deployment-1"),
			HaveKeyWithValue("url", lms.Issuer), HaveKeyWithValue("clientId", lms.ClientID)))
		Expect(ev.Data.Context).To(HaveKeyWithValue("id", "course-42"))
		Expect(ev.Data.Claims).To(HaveKey("https://purl.imsglobal.org/spec/lti/claim/assetservice"), "the raw claims")
		Expect(ev.Data.NoticeKeyExpiresAt).To(BeTemporally("~", time.Now().Add(time.Hour), time.Minute))

		By("the notice key authenticates like a service key, for what the notice names only")
		res = call("GET", "/api/memberships", nil, noticeAuth(ev.Data.NoticeKey))
		Expect(res.Status).To(Equal(http.StatusForbidden), string(res.Raw))
		Expect(res.errorCode()).To(Equal("SERVICE_NOT_AVAILABLE_FOR_CONTEXT"), "authenticated; the notice names no roster")
		res = call("GET", "/api/memberships", nil, noticeAuth(ev.Data.NoticeKey+"x"))
		Expect(res.Status).To(Equal(http.StatusUnauthorized))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"))
		res = call("GET", "/api/memberships", nil, serviceAuth(ev.Data.NoticeKey))
		Expect(res.Status).To(Equal(http.StatusUnauthorized), "a notice key is not a service key")
	})

	It("tells the platform to retry when the integrator is down, and records nothing (T-PNS-07)", func() {
		hook.SetStatus(http.StatusInternalServerError)
		notice := sign(lms, lms.NoticeClaims(lmssim.NoticeContextCopy))
		other := sign(lms, lms.NoticeClaims(lmssim.NoticeContextCopy))
		res := postNotices(lms, notice, other)
		Expect(res.Status).To(Equal(http.StatusServiceUnavailable), string(res.Raw))
		Expect(res.errorCode()).To(Equal("NOTICE_DELIVERY_FAILED"))
		Expect(res.Header.Get("Retry-After")).NotTo(BeEmpty())
		Expect(hook.Received()).To(HaveLen(1), "the second notice is not tried once the webhook failed")

		hook.SetStatus(http.StatusNoContent)
		res = postNotices(lms, notice, other)
		Expect(res.Status).To(Equal(http.StatusOK), string(res.Raw))
		Expect(results(res)).To(HaveEach(HaveKeyWithValue("status", "delivered")), "the failed notice was not recorded as seen")
		Expect(hook.Received()).To(HaveLen(3))
		got := hook.Received()
		Expect(got[0].Header.Get("webhook-id")).To(Equal(got[1].Header.Get("webhook-id")), "a retried notice keeps its webhook-id")
	})

	It("refuses a batch it cannot authenticate before any outbound call (T-PNS-05, T-PNS-10)", func() {
		forger, err := lmssim.New(lms.Issuer, lms.ClientID, lms.DeploymentID)
		Expect(err).NotTo(HaveOccurred())
		forged, err := forger.Sign(lms.NoticeClaims(lmssim.NoticeHelloWorld), map[string]any{"kid": lms.KID()})
		Expect(err).NotTo(HaveOccurred())
		res := postNotices(lms, forged, "not-a-jwt")
		Expect(res.Status).To(Equal(http.StatusUnauthorized), string(res.Raw))
		Expect(res.errorCode()).To(Equal("INVALID_SIGNATURE"))

		otherDeployment := lms.NoticeClaims(lmssim.NoticeHelloWorld)
		otherDeployment["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = strings.Repeat("d", 300)
		Expect(postNotices(lms, sign(lms, otherDeployment)).errorCode()).To(Equal("IDENTIFIER_TOO_LONG"))

		res = call("POST", paths.NoticeEndpoint("no-such-platform"), map[string]any{"notices": []any{}}, nil)
		Expect(res.Status).To(Equal(http.StatusNotFound))
		res = call("POST", paths.NoticeEndpoint(lms.ID), map[string]any{"notices": []any{}}, nil)
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_BATCH"))
		res = call("POST", paths.NoticeEndpoint(lms.ID), `{"notices":[{"jwt":"a"}],"extra":1}`, nil)
		Expect(res.Status).To(Equal(http.StatusBadRequest))

		many := make([]string, 101)
		for i := range many {
			many[i] = "x"
		}
		res = postNotices(lms, many...)
		Expect(res.Status).To(Equal(http.StatusRequestEntityTooLarge), string(res.Raw))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_BATCH"))

		res = call("POST", paths.NoticeEndpoint(lms.ID), `{"notices":[{"jwt":"`+strings.Repeat("a", 70<<10)+`"}]}`, nil)
		Expect(res.Status).To(Equal(http.StatusRequestEntityTooLarge), "the body limit applies")

		Expect(hook.Received()).To(BeEmpty(), "nothing reached the webhook")
	})

	It("the simulator registers, sends and shows what the integrator got, as the demo does", func() {
		ltik := newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(call("PUT", "/api/notices/handlers", map[string]any{"noticeType": lmssim.NoticeContextCopy}, ltikAuth(ltik)).Status).To(Equal(http.StatusOK))
		// The platform posts to the registered URL; the suite's ltiop answers at baseURL.
		Expect(lms.NoticeHandler(lmssim.NoticeContextCopy)).To(Equal(publicURL + paths.NoticeEndpoint(lms.ID)))
		d, err := lms.PostNotices(context.Background(), noticeEndpoint(lms), lmssim.NoticeContextCopy, sign(lms, lms.NoticeClaims(lmssim.NoticeContextCopy)))
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Status).To(Equal(http.StatusOK), d.Body)
		Expect(lms.Deliveries()).NotTo(BeEmpty())
		Expect(hook.Received()).To(HaveLen(1))
		Expect(string(hook.Received()[0].Body)).To(ContainSubstring("claim/origin_contexts"))
	})
})
