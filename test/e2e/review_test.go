package e2e

import (
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// Submission review (AGS "Submission Review Message") over real HTTP: the integrator
// puts a submissionReview on a line item, the LMS launches a review of one learner's
// submission to its url, ltiop checks the launch and hands it to the Submission Review URL,
// and /api/idtoken names the learner.
var _ = Describe("Submission review", func() {
	var (
		lms  *lmsServer
		ltik string
	)
	BeforeEach(func() {
		lms = servicesLMS()
		ltik = newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(ltik).NotTo(BeEmpty())
	})

	createReviewable := func(reviewURL string) response {
		return call("POST", "/api/lineitems", map[string]any{
			"label": "Essay", "scoreMaximum": 20, "tag": "essay",
			"submissionReview": map[string]any{
				"reviewableStatus": []string{"Submitted", "Completed"}, "label": "See the essay",
				"url": reviewURL, "custom": map[string]string{"mode": "review"},
			},
		}, ltikAuth(ltik))
	}

	It("hands the review to the Submission Review URL with the learner in launch.forUser (T-SR-01..08)", func() {
		created := createReviewable(publicURL + paths.Launch + "?view=review")
		Expect(created.Status).To(Equal(201), string(created.Raw))
		id, _ := created.JSON["id"].(string)
		Expect(created.JSON["submissionReview"]).To(HaveKeyWithValue("label", "See the essay"), "returned as sent")
		Expect(lms.LineItem(id)["submissionReview"]).To(HaveKeyWithValue("url", publicURL+paths.Launch+"?view=review"), "the LMS holds it")
		got := call("GET", "/api/lineitems/"+url.PathEscape(id), nil, ltikAuth(ltik))
		Expect(got.Status).To(Equal(200), string(got.Raw))
		Expect(got.JSON["submissionReview"]).To(HaveKeyWithValue("reviewableStatus", ConsistOf("Submitted", "Completed")))

		q := url.Values{"user": {"teacher-1"}, "message": {lmssim.MessageSubmissionReview}, "for_user": {"user-2"}, "lineitem": {id}}
		res := newBrowser().launch(lms, q.Encode())
		Expect(res.Status).To(Equal(303), res.Body)
		Expect(res.Location).To(HavePrefix(submissionReviewURL+"?"), "T-SR-06: the Submission Review URL, not the Launch URL")
		loc, err := url.Parse(res.Location)
		Expect(err).NotTo(HaveOccurred())
		Expect(loc.Query().Get("view")).To(Equal("review"), "the query of the review URL is kept")
		Expect(res.Ltik).NotTo(BeEmpty())

		tok := idToken(res.Ltik)
		Expect(tok.Status).To(Equal(200), string(tok.Raw))
		Expect(tok.JSON["user"]).To(HaveKeyWithValue("id", "teacher-1"))
		launch, _ := tok.JSON["launch"].(map[string]any)
		Expect(launch).To(HaveKeyWithValue("type", "LtiSubmissionReviewRequest"))
		Expect(launch["forUser"]).To(HaveKeyWithValue("id", "user-2"), "T-SR-07")
		Expect(launch["forUser"]).To(HaveKeyWithValue("roles", ContainElement("http://purl.imsglobal.org/vocab/lis/v2/membership#Learner")))
		Expect(launch["custom"]).To(HaveKeyWithValue("mode", "review"), "the line item's custom parameters")
		Expect(tok.JSON["services"]).To(HaveKeyWithValue("assignmentAndGrades", HaveKeyWithValue("lineItemId", id)))

		// The review's ltik reaches the line item under review.
		scores := call("GET", "/api/lineitems/"+url.PathEscape(id)+"/scores?userId=user-2", nil, ltikAuth(res.Ltik))
		Expect(scores.Status).To(Equal(200), string(scores.Raw))
	})

	It("refuses a submissionReview that could not come back through ltiop, and changes nothing", func() {
		before := lms.LineItemIDs()
		for _, review := range []string{"https://elsewhere.example/review", "/lti/launch"} {
			res := createReviewable(review)
			Expect(res.Status).To(Equal(400), string(res.Raw))
			Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
			Expect(res.errorDescription()).To(HavePrefix("submissionReview.url:"))
		}
		Expect(lms.LineItemIDs()).To(Equal(before))
	})

	It("refuses a review launch without for_user and issues no ltik (T-SR-04)", func() {
		lms.Customize = func(claims, _ map[string]any) {
			if claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == lmssim.MessageSubmissionReview {
				delete(claims, "https://purl.imsglobal.org/spec/lti/claim/for_user")
			}
		}
		res := newBrowser().launch(lms, url.Values{"message": {lmssim.MessageSubmissionReview}, "for_user": {"user-2"}}.Encode())
		Expect(res.Status).To(Equal(400), res.Body)
		Expect(res.Body).To(ContainSubstring("MISSING_CLAIM"))
		Expect(res.Ltik).To(BeEmpty())
		Expect(strings.Contains(res.Location, "ltik=")).To(BeFalse())
	})
})
