package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

const (
	// eulaLaunchURL is the integrator page of LtiEulaRequest launches (messageLaunchUrls).
	eulaLaunchURL = "https://app.test.example/eula"
	// maxAssetBytes is the suite's assetProcessor.maxAssetBytes.
	maxAssetBytes = 256 << 10
)

// apLaunch launches message from an LMS simulator with services, and returns the ltik.
func apLaunch(lms *lmsServer, message string) launchResult {
	res := newBrowser().launch(lms, "user=student-1&message="+message)
	ExpectWithOffset(1, res.Status).To(Equal(http.StatusSeeOther), res.Body)
	ExpectWithOffset(1, res.Ltik).NotTo(BeEmpty())
	return res
}

// rawGet is a GET that returns the response itself, body unread.
func rawGet(path string, headers map[string]string) (*http.Response, error) {
	req, err := http.NewRequest("GET", baseURL+path, nil)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

var _ = Describe("Asset Processor and EULA", func() {
	Describe("launches", func() {
		It("hands each message type to its Launch URL and shows its claims in /api/idtoken (T-AP-01..03)", func() {
			lms := servicesLMS()
			settings := apLaunch(lms, "LtiAssetProcessorSettingsRequest")
			Expect(settings.Location).To(HavePrefix(launchURL+"?"), "no messageLaunchUrls entry: the Launch URL")
			tok := idToken(settings.Ltik)
			Expect(tok.JSON["launch"]).To(HaveKeyWithValue("type", "LtiAssetProcessorSettingsRequest"))
			ap := tok.JSON["assetProcessor"].(map[string]any)
			Expect(ap["activity"]).To(HaveKeyWithValue("id", lmssim.DemoActivityID))

			review := apLaunch(lms, "LtiReportReviewRequest")
			tok = idToken(review.Ltik)
			Expect(tok.Status).To(Equal(200), string(tok.Raw))
			ap = tok.JSON["assetProcessor"].(map[string]any)
			Expect(ap["submission"]).To(HaveKeyWithValue("id", lmssim.DemoSubmissionID))
			Expect(ap["report"]).To(And(HaveKeyWithValue("assetId", lmssim.DemoAssetID), HaveKeyWithValue("type", "originality")))
			assets := ap["assets"].([]any)
			Expect(assets).To(HaveLen(1))
			Expect(assets[0]).To(And(HaveKeyWithValue("id", lmssim.DemoAssetID), HaveKeyWithValue("filename", "essay.txt"), Not(HaveKey("url"))))
			Expect(tok.JSON["launch"]).To(HaveKeyWithValue("forUser", HaveKeyWithValue("id", lmssim.DemoStudent)))
			svc := ap["services"].(map[string]any)
			Expect(svc["assetService"]).To(HaveKeyWithValue("available", true))
			Expect(svc["assetReport"]).To(HaveKeyWithValue("available", true))
			Expect(tok.JSON["services"]).To(HaveKey("serviceKey"), "asset and report services give a service key")

			eula := apLaunch(lms, "LtiEulaRequest")
			Expect(eula.Location).To(HavePrefix(eulaLaunchURL+"?"), "messageLaunchUrls.LtiEulaRequest")
			tok = idToken(eula.Ltik)
			Expect(tok.JSON["assetProcessor"].(map[string]any)["services"]).To(HaveKeyWithValue("eula", HaveKeyWithValue("available", true)))
		})

		DescribeTable("refuses a launch missing a required claim, and issues no ltik",
			func(message, claim, code string) {
				lms := newLMS()
				lms.Customize = func(c, _ map[string]any) { delete(c, claim) }
				res := newBrowser().launch(lms, "message="+message)
				Expect(res.Ltik).To(BeEmpty())
				Expect(res.Status).To(Equal(400), res.Body)
				Expect(res.Body).To(ContainSubstring(code))
			},
			Entry("T-AP-01 settings without activity", "LtiAssetProcessorSettingsRequest", lmssim.ClaimActivity, "MISSING_CLAIM"),
			Entry("T-AP-01 settings without roles", "LtiAssetProcessorSettingsRequest", "https://purl.imsglobal.org/spec/lti/claim/roles", "MISSING_CLAIM"),
			Entry("T-AP-02 review without activity", "LtiReportReviewRequest", lmssim.ClaimActivity, "MISSING_CLAIM"),
			Entry("T-AP-02 review without submission", "LtiReportReviewRequest", lmssim.ClaimSubmission, "MISSING_CLAIM"),
			Entry("T-AP-02 review without asset", "LtiReportReviewRequest", lmssim.ClaimAsset, "MISSING_CLAIM"),
			Entry("T-AP-02 review without assetreport_type", "LtiReportReviewRequest", lmssim.ClaimAssetReportType, "MISSING_CLAIM"),
			Entry("T-AP-02 review without for_user", "LtiReportReviewRequest", lmssim.ClaimForUser, "MISSING_CLAIM"),
			Entry("T-AP-03 EULA request without eulaservice", "LtiEulaRequest", lmssim.ClaimEulaService, "MISSING_CLAIM"),
		)
	})

	Describe("services", func() {
		var (
			lms  *lmsServer
			ltik string
			key  string
		)
		BeforeEach(func() {
			lms = servicesLMS()
			ltik = apLaunch(lms, "LtiReportReviewRequest").Ltik
			key, _ = idToken(ltik).JSON["services"].(map[string]any)["serviceKey"].(string)
			Expect(key).NotTo(BeEmpty())
		})

		It("T-AP-05 streams an asset with its content type, with an ltik or a service key", func() {
			for _, auth := range []map[string]string{ltikAuth(ltik), serviceAuth(key)} {
				res := call("GET", "/api/assets/"+lmssim.DemoAssetID, nil, auth)
				Expect(res.Status).To(Equal(200), string(res.Raw))
				Expect(res.Header.Get("Content-Type")).To(Equal("text/plain; charset=utf-8"))
				Expect(res.Header.Get("Content-Disposition")).To(ContainSubstring("essay.txt"))
				Expect(string(res.Raw)).To(HavePrefix("The Analytical Engine"))
			}
			Expect(lms.AssetDownloads()).To(Equal(2))
		})

		It("T-AP-05 refuses an asset the launch does not name, and an asset URL on another host", func() {
			before := lms.AssetDownloads()
			res := call("GET", "/api/assets/asset-of-someone-else", nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(404))
			Expect(res.errorCode()).To(Equal("ASSET_NOT_FOUND"))

			other := servicesLMS() // a real asset service, on another host
			foreign := other.URL + lmssim.AssetsPath + lmssim.DemoAssetID
			res = call("GET", "/api/assets/x?url="+url.QueryEscape(foreign), nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(400), string(res.Raw))
			Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
			Expect(res.errorDescription()).To(HavePrefix("url:"))
			Expect(other.TokenRequests()).To(BeZero(), "no token was asked for, nothing sent there")
			Expect(other.AssetDownloads()).To(BeZero())

			// A URL on the launch's asset host is accepted.
			same := lms.URL + lmssim.AssetsPath + lmssim.DemoAssetID
			Expect(call("GET", "/api/assets/x?url="+url.QueryEscape(same), nil, ltikAuth(ltik)).Status).To(Equal(200))
			Expect(lms.AssetDownloads()).To(Equal(before + 1))
		})

		It("T-AP-05 follows a redirect to another host (a file store) without the access token", func() {
			var gotAuth atomic.Value
			store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth.Store(r.Header.Get("Authorization"))
				w.Header().Set("Content-Type", "application/pdf")
				_, _ = w.Write([]byte("%PDF-1.7 stored"))
			}))
			DeferCleanup(store.Close)
			lms.AddAsset(lmssim.Asset{ID: "stored", Filename: "essay.pdf", RedirectTo: store.URL + "/files/1?sig=abc"})
			ltik := apLaunch(lms, "LtiReportReviewRequest").Ltik

			res := call("GET", "/api/assets/stored", nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(200), string(res.Raw))
			Expect(string(res.Raw)).To(Equal("%PDF-1.7 stored"))
			Expect(res.Header.Get("Content-Type")).To(Equal("application/pdf"))
			Expect(gotAuth.Load()).To(Equal(""), "the platform's access token never leaves its host")
		})

		It("T-AP-06 refuses an asset larger than the limit before streaming when its size is announced, and cuts the stream otherwise", func() {
			big := bytes.Repeat([]byte("x"), maxAssetBytes+1)
			lms.AddAsset(lmssim.Asset{ID: "big", Filename: "big.bin", ContentType: "application/octet-stream", Content: big})
			lms.AddAsset(lmssim.Asset{ID: "big-chunked", Filename: "big.bin", ContentType: "application/octet-stream", Content: big, Chunked: true})
			lms.AddAsset(lmssim.Asset{ID: "at-limit", Filename: "ok.bin", ContentType: "application/octet-stream", Content: big[:maxAssetBytes], Chunked: true})
			ltik := apLaunch(lms, "LtiReportReviewRequest").Ltik // names the new assets

			res := call("GET", "/api/assets/big", nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(502))
			Expect(res.errorCode()).To(Equal("ASSET_TOO_LARGE"))

			stream, err := rawGet("/api/assets/big-chunked", ltikAuth(ltik))
			Expect(err).NotTo(HaveOccurred())
			Expect(stream.StatusCode).To(Equal(200))
			n, err := io.Copy(io.Discard, stream.Body)
			stream.Body.Close()
			Expect(err).To(HaveOccurred(), "the response ends without its last chunk")
			Expect(n).To(BeNumerically("<=", maxAssetBytes), "nothing past the limit was passed on")

			ok := call("GET", "/api/assets/at-limit", nil, ltikAuth(ltik))
			Expect(ok.Status).To(Equal(200))
			Expect(ok.Raw).To(HaveLen(maxAssetBytes), "exactly the limit passes")
		})

		It("T-AP-07 posts a report, validated and sent per the spec", func() {
			report := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed",
				"priority": 5, "title": "Originality", "result": "83%", "scoreGiven": 83, "scoreMaximum": 100,
				"indicationColor": "#EC0000", "indicationAlt": "High percentage of matched text.", "comment": "Two sources", "visibleToOwner": true}
			res := call("POST", "/api/reports", report, serviceAuth(key))
			Expect(res.Status).To(Equal(201), string(res.Raw))
			Expect(res.JSON).To(HaveKey("timestamp"), "ltiop sets the timestamp")
			sent := lms.Reports()
			Expect(sent).To(HaveLen(1))
			Expect(sent[0]).To(And(HaveKeyWithValue("assetId", lmssim.DemoAssetID), HaveKeyWithValue("indicationColor", "#EC0000"),
				HaveKeyWithValue("priority", BeNumerically("==", 5)), HaveKeyWithValue("visibleToOwner", true)))

			page, err := http.Get(lms.URL + lmssim.ReportsPagePath)
			Expect(err).NotTo(HaveOccurred())
			Expect(readBody(page)).To(And(ContainSubstring("originality"), ContainSubstring("High percentage of matched text.")))

			// An older report of the same asset and type: the platform's 409, passed on.
			old := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processing", "timestamp": "2020-01-01T00:00:00Z"}
			res = call("POST", "/api/reports", old, ltikAuth(ltik))
			Expect(res.Status).To(Equal(409), string(res.Raw))
			Expect(res.JSON["details"]).To(HaveKeyWithValue("externalError", true))
		})

		DescribeTable("T-AP-07 refuses a report with a bad field with 400 naming it, and sends nothing",
			func(field string, value any) {
				report := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Failed"}
				if value == nil {
					delete(report, field)
				} else {
					report[field] = value
				}
				switch field {
				case "indicationColor":
					report["indicationAlt"] = "alt"
				case "indicationAlt":
					report["indicationColor"] = "#00AA00"
				}
				res := call("POST", "/api/reports", report, ltikAuth(ltik))
				Expect(res.Status).To(Equal(400), string(res.Raw))
				Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
				Expect(res.errorDescription()).To(MatchRegexp(`^"?`+field+`"?:`), "the description names the field")
				Expect(lms.Reports()).To(BeEmpty())
			},
			Entry("assetId missing", "assetId", nil),
			Entry("assetId of another submission", "assetId", "asset-of-someone-else"),
			Entry("assetId not a string", "assetId", 42),
			Entry("type missing", "type", nil),
			Entry("type blank", "type", "  "),
			Entry("processingProgress missing", "processingProgress", nil),
			Entry("processingProgress unknown", "processingProgress", "Done"),
			Entry("priority out of range", "priority", 6),
			Entry("priority not whole", "priority", 2.5),
			Entry("priority not a number", "priority", "high"),
			Entry("timestamp not ISO 8601", "timestamp", "yesterday"),
			Entry("indicationColor not #RRGGBB", "indicationColor", "red"),
			Entry("indicationAlt missing with a colour", "indicationAlt", nil),
			Entry("scoreGiven negative", "scoreGiven", -1),
			Entry("scoreMaximum zero", "scoreMaximum", 0),
			Entry("errorCode with spaces", "errorCode", "NOT GOOD"),
			Entry("result too long", "result", strings.Repeat("r", 17)),
			Entry("title too long", "title", strings.Repeat("t", 1025)),
			Entry("comment not a string", "comment", 3),
			Entry("visibleToOwner not a boolean", "visibleToOwner", "yes"),
			Entry("an unknown field", "colour", "red"),
		)

		It("T-AP-08 sets the EULA requirement and records a user's acceptance", func() {
			eulaLtik := apLaunch(lms, "LtiEulaRequest").Ltik
			Expect(lms.EulaRequired()).To(BeTrue())
			res := call("PUT", "/api/eula", map[string]any{"eulaRequired": false}, ltikAuth(eulaLtik))
			Expect(res.Status).To(Equal(200), string(res.Raw))
			Expect(res.JSON).To(HaveKeyWithValue("eulaRequired", false))
			Expect(lms.EulaRequired()).To(BeFalse())
			Expect(call("GET", "/api/eula", nil, ltikAuth(eulaLtik)).JSON).To(HaveKeyWithValue("eulaRequired", false))

			res = call("POST", "/api/eula/acceptance", map[string]any{"accepted": true}, ltikAuth(eulaLtik))
			Expect(res.Status).To(Equal(201), string(res.Raw))
			Expect(res.JSON).To(And(HaveKeyWithValue("userId", "student-1"), HaveKeyWithValue("accepted", true), HaveKey("timestamp")))
			Expect(lms.EulaAcceptance("student-1")).To(HaveKeyWithValue("accepted", true), "userId defaults to the launching user")

			res = call("POST", "/api/eula/acceptance", map[string]any{"userId": "student-1"}, ltikAuth(eulaLtik))
			Expect(res.Status).To(Equal(400))
			Expect(res.errorDescription()).To(HavePrefix("accepted:"))
			res = call("PUT", "/api/eula", map[string]any{}, ltikAuth(eulaLtik))
			Expect(res.Status).To(Equal(400))
			Expect(res.errorDescription()).To(HavePrefix("eulaRequired:"))

			Expect(call("DELETE", "/api/eula/acceptance", nil, ltikAuth(eulaLtik)).Status).To(Equal(204))
			Expect(lms.EulaAcceptance("student-1")).To(BeNil())

			// A launch without the EULA service cannot use it.
			res = call("PUT", "/api/eula", map[string]any{"eulaRequired": true}, ltikAuth(ltik))
			Expect(res.Status).To(Equal(403))
			Expect(res.errorCode()).To(Equal("SERVICE_NOT_AVAILABLE_FOR_CONTEXT"))
		})

		It("T-AP-08 refuses the services to a launch without their claims", func() {
			plain := newBrowser().launch(lms, "user=teacher-1").Ltik
			for _, c := range []struct{ method, path string }{{"GET", "/api/assets/" + lmssim.DemoAssetID}, {"POST", "/api/reports"}, {"GET", "/api/eula"}} {
				res := call(c.method, c.path, map[string]any{}, ltikAuth(plain))
				Expect(res.Status).To(Equal(403), c.path)
				Expect(res.errorCode()).To(Equal("SERVICE_NOT_AVAILABLE_FOR_CONTEXT"))
			}
		})
	})
})
