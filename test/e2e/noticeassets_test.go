package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/simulators/integratorsim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// submissionNotice has the LMS simulator post a signed LtiAssetProcessorSubmissionNotice of
// its submission to ltiop's notice endpoint over HTTP, as after a student submitted, and
// returns the webhook the integrator received for it. ltiop answers the platform only after
// the webhook answered, so the webhook has arrived when the post returns.
func submissionNotice(lms *lmsServer, hook *integratorHook) integratorsim.NoticeWebhook {
	hook.Reset()
	d, err := lms.PostNotices(context.Background(), noticeEndpoint(lms), lmssim.NoticeAssetProcessorSubmission,
		sign(lms, lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission)))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, d.Status).To(Equal(http.StatusOK), d.Body)
	got := hook.Received()
	ExpectWithOffset(1, got).To(HaveLen(1))
	var ev integratorsim.NoticeWebhook
	ExpectWithOffset(1, json.Unmarshal(got[0].Body, &ev)).To(Succeed())
	ExpectWithOffset(1, ev.Data.NoticeKey).NotTo(BeEmpty())
	return ev
}

// sealingKeyring is ltiop's own sealing keyring, read from the service Secret: the suite
// looks inside a notice key with it, and seals copies that expire sooner. No client of
// ltiop can do this; it shows what ltiop checks, not an attack.
func sealingKeyring() *sessions.Keyring {
	var s corev1.Secret
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: ltiv1.DefaultServiceSecretName}, &s)).To(Succeed())
	keys, err := keyring.Sealing.Decode(s.Data[ltiv1.SecretKeySealingKeyring])
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ring, err := sessions.NewKeyring(keys)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return ring
}

var _ = Describe("Platform Notification Service to Asset Processor: a notice-driven integration", func() {
	var (
		hook *integratorHook
		lms  *lmsServer
	)
	BeforeEach(func() {
		hook = newIntegratorHook()
		lms = pnsLMS(hook)
	})

	It("downloads the submitted assets and posts a report that the LMS shows, with only the notice key from the webhook (T-AP-05, T-AP-07)", func() {
		lms.AddAsset(lmssim.Asset{ID: "asset-appendix", Filename: "appendix.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.7 appendix")})
		ev := submissionNotice(lms, hook)
		Expect(ev.Data.Claims.Submission).To(HaveKeyWithValue("id", lmssim.DemoSubmissionID))
		assets := ev.Data.Claims.AssetService.Assets
		Expect(assets).To(HaveLen(2), "the notice names every asset of the submission")
		Expect(lms.TokenRequests()).To(BeZero(), "no launch and no service call so far")

		By("downloading each asset the notice names, by its id")
		auth := noticeAuth(ev.Data.NoticeKey)
		bodies := map[string]string{}
		for _, a := range assets {
			res := call("GET", "/api/assets/"+url.PathEscape(a.ID), nil, auth)
			Expect(res.Status).To(Equal(http.StatusOK), string(res.Raw))
			Expect(res.Header.Get("Content-Type")).To(Equal(a.ContentType))
			Expect(res.Header.Get("Content-Disposition")).To(ContainSubstring(a.Filename))
			bodies[a.ID] = string(res.Raw)
		}
		Expect(bodies).To(HaveKeyWithValue(lmssim.DemoAssetID, HavePrefix("The Analytical Engine")))
		Expect(bodies).To(HaveKeyWithValue("asset-appendix", "%PDF-1.7 appendix"))
		Expect(lms.AssetDownloads()).To(Equal(2))

		By("posting the report of the essay")
		report := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed",
			"priority": 2, "title": "Originality", "result": "7%", "scoreGiven": 7, "scoreMaximum": 100,
			"indicationColor": "#2E7D32", "indicationAlt": "Little matched text.", "comment": "From the notice", "visibleToOwner": true}
		res := call("POST", "/api/reports", report, auth)
		Expect(res.Status).To(Equal(http.StatusCreated), string(res.Raw))
		Expect(res.JSON).To(HaveKey("timestamp"))
		Expect(lms.Reports()).To(ConsistOf(And(HaveKeyWithValue("assetId", lmssim.DemoAssetID), HaveKeyWithValue("comment", "From the notice"),
			HaveKeyWithValue("indicationColor", "#2E7D32"), HaveKeyWithValue("visibleToOwner", true))))
		page, err := http.Get(lms.URL + lmssim.ReportsPagePath)
		Expect(err).NotTo(HaveOccurred())
		Expect(readBody(page)).To(And(ContainSubstring("From the notice"), ContainSubstring("Little matched text.")), "the teacher's view shows it")

		By("the notice key's grant holds the notice's service URLs and scopes, and nothing else")
		payload, _, err := sealingKeyring().Open(sessions.PurposeNoticeKey, ev.Data.NoticeKey, time.Now())
		Expect(err).NotTo(HaveOccurred())
		var g map[string]any
		Expect(json.Unmarshal(payload, &g)).To(Succeed())
		var reg ltiv1.PlatformRegistration
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: lms.ID}, &reg)).To(Succeed())
		Expect(g).To(And(HaveKeyWithValue("p", lms.ID), HaveKeyWithValue("u", string(reg.UID)), HaveKeyWithValue("d", "deployment-1"),
			HaveKeyWithValue("c", "course-42")))
		Expect(g).To(HaveKeyWithValue("au", Equal(map[string]any{
			lmssim.DemoAssetID: lms.URL + lmssim.AssetsPath + lmssim.DemoAssetID,
			"asset-appendix":   lms.URL + lmssim.AssetsPath + "asset-appendix",
		})))
		Expect(g).To(And(HaveKeyWithValue("as", lmssim.ScopeAssetReadOnly), HaveKeyWithValue("ru", lms.URL+lmssim.ReportsPath),
			HaveKeyWithValue("rs", lmssim.ScopeReport)))
		for _, other := range []string{"m", "i", "l", "s", "eu", "es", "gr", "gs", "n", "o", "r"} {
			Expect(g).NotTo(HaveKey(other), "the notice names no such service")
		}
	})

	It("refuses a notice key with a wrong API key, as a service key, on a service the notice did not name, and for assets outside the notice (T-AP-05, T-AP-07, T-AP-08)", func() {
		ev := submissionNotice(lms, hook)
		key := ev.Data.NoticeKey
		other := servicesLMS() // another registration, with a real asset service
		tokensBefore := lms.TokenRequests()

		By("a wrong API key")
		res := call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, map[string]string{"Authorization": "NOTICE-AUTH-V1 wrong-api-key-0123456789:" + key})
		Expect(res.Status).To(Equal(http.StatusUnauthorized))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"))
		res = call("POST", "/api/reports", map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed"},
			map[string]string{"Authorization": "NOTICE-AUTH-V1 :" + key})
		Expect(res.Status).To(Equal(http.StatusUnauthorized))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"))

		By("the notice key under another scheme")
		res = call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, serviceAuth(key))
		Expect(res.Status).To(Equal(http.StatusUnauthorized))
		Expect(res.errorCode()).To(Equal("INVALID_SERVICE_AUTH_AUTHORIZATION_HEADER"))
		res = call("GET", "/api/idtoken", nil, noticeAuth(key))
		Expect(res.Status).To(Equal(http.StatusUnauthorized), "the id token is a launch's")
		Expect(res.errorCode()).To(Equal("INVALID_LTIK_AUTH_AUTHORIZATION_HEADER"))

		By("services the notice did not name")
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/memberships"}, {"GET", "/api/lineitems"}, {"GET", "/api/groups"},
			{"GET", "/api/eula"}, {"GET", "/api/notices/handlers"},
		} {
			res = call(c.method, c.path, nil, noticeAuth(key))
			Expect(res.Status).To(Equal(http.StatusForbidden), c.path+": "+string(res.Raw))
			Expect(res.errorCode()).To(Equal("SERVICE_NOT_AVAILABLE_FOR_CONTEXT"), c.path)
		}

		By("assets outside the notice")
		res = call("GET", "/api/assets/asset-of-someone-else", nil, noticeAuth(key))
		Expect(res.Status).To(Equal(http.StatusNotFound))
		Expect(res.errorCode()).To(Equal("ASSET_NOT_FOUND"))
		foreign := other.URL + lmssim.AssetsPath + lmssim.DemoAssetID // another registration's asset
		res = call("GET", "/api/assets/x?url="+url.QueryEscape(foreign), nil, noticeAuth(key))
		Expect(res.Status).To(Equal(http.StatusBadRequest), string(res.Raw))
		Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
		Expect(res.errorDescription()).To(HavePrefix("url:"))
		res = call("POST", "/api/reports", map[string]any{"assetId": "asset-of-someone-else", "type": "originality", "processingProgress": "Processed"}, noticeAuth(key))
		Expect(res.Status).To(Equal(http.StatusBadRequest), string(res.Raw))
		Expect(res.errorDescription()).To(HavePrefix("assetId:"))

		Expect(lms.TokenRequests()).To(Equal(tokensBefore), "nothing refused reached the LMS")
		Expect(lms.AssetDownloads()).To(BeZero())
		Expect(lms.Reports()).To(BeEmpty())
		Expect(other.TokenRequests()).To(BeZero(), "nothing went to the other registration")
		Expect(other.AssetDownloads()).To(BeZero())
	})

	It("refuses an expired notice key", func() {
		ev := submissionNotice(lms, hook)
		ring := sealingKeyring()
		payload, _, err := ring.Open(sessions.PurposeNoticeKey, ev.Data.NoticeKey, time.Now())
		Expect(err).NotTo(HaveOccurred())
		// The same grant sealed by ltiop's keys: for an hour it opens (so the copy is sound),
		// for a second it stops opening once the second has passed.
		long, err := ring.Seal(sessions.PurposeNoticeKey, payload, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		short, err := ring.Seal(sessions.PurposeNoticeKey, payload, time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, noticeAuth(long)).Status).To(Equal(http.StatusOK))
		Eventually(func() string {
			return call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, noticeAuth(short)).errorCode()
		}).Should(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"))
		downloads := lms.AssetDownloads()
		res := call("POST", "/api/reports", map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed"}, noticeAuth(short))
		Expect(res.Status).To(Equal(http.StatusUnauthorized))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"))
		Expect(lms.Reports()).To(BeEmpty())
		Expect(lms.AssetDownloads()).To(Equal(downloads))
	})

	It("refuses a notice key of a registration since replaced, even under the same name, with the notice key's code", func() {
		ev := submissionNotice(lms, hook)
		Expect(call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, noticeAuth(ev.Data.NoticeKey)).Status).To(Equal(http.StatusOK))

		var old ltiv1.PlatformRegistration
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: lms.ID}, &old)).To(Succeed())
		Expect(k8s.Delete(context.Background(), &old)).To(Succeed())
		replacement := &ltiv1.PlatformRegistration{}
		replacement.Namespace, replacement.Name, replacement.Spec = old.Namespace, old.Name, old.Spec
		Expect(k8s.Create(context.Background(), replacement)).To(Succeed())
		Eventually(func() bool {
			p := ltiop.Registry.Get(lms.ID)
			return p != nil && p.UID == replacement.UID && p.Ready && p.Key != nil
		}).Should(BeTrue(), "the new registration is in use")

		downloads := lms.AssetDownloads()
		res := call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, noticeAuth(ev.Data.NoticeKey))
		Expect(res.Status).To(Equal(http.StatusUnauthorized), string(res.Raw))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"), "the notice key's one code")
		Expect(res.JSON["details"]).To(HaveKeyWithValue("reason", "UNREGISTERED_OR_INACTIVE_PLATFORM"))
		res = call("POST", "/api/reports", map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed"}, noticeAuth(ev.Data.NoticeKey))
		Expect(res.Status).To(Equal(http.StatusUnauthorized))
		Expect(res.errorCode()).To(Equal("INVALID_NOTICE_AUTH_AUTHORIZATION_HEADER"))
		Expect(res.JSON["details"]).To(HaveKeyWithValue("reason", "UNREGISTERED_OR_INACTIVE_PLATFORM"))
		Expect(lms.AssetDownloads()).To(Equal(downloads))
		Expect(lms.Reports()).To(BeEmpty())
	})
})
