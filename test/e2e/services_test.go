package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// servicesLMS is a registered LMS simulator offering NRPS, AGS and deep linking; it
// verifies ltiop's client assertions and deep-linking responses with the key set its
// administrator was given: the registration's status.jwksUrl, its own key set.
func servicesLMS() *lmsServer { return servicesLMSWith() }

// servicesLMSWith is servicesLMS with changes to the registration.
func servicesLMSWith(mutate ...func(*ltiv1.PlatformRegistrationSpec)) *lmsServer {
	lms := newLMS(mutate...)
	Eventually(func() string {
		var reg ltiv1.PlatformRegistration
		_ = k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: lms.ID}, &reg)
		return reg.Status.JWKSURL
	}).Should(Equal(publicURL + paths.KeySet(lms.ID)))
	lms.EnableServices(baseURL + paths.KeySet(lms.ID)) // publicURL's name is not resolvable here
	return lms
}

func ltikAuth(ltik string) map[string]string {
	return map[string]string{"Authorization": "LTIK-AUTH-V2 " + apiKey + ":" + ltik}
}

func serviceAuth(key string) map[string]string {
	return map[string]string{"Authorization": "SERVICE-AUTH-V1 " + apiKey + ":" + key}
}

func members(res response) []any {
	m, _ := res.JSON["members"].([]any)
	return m
}

var _ = Describe("LTI Advantage services", func() {
	var (
		lms  *lmsServer
		ltik string
		key  string
	)
	BeforeEach(func() {
		lms = servicesLMS()
		ltik = newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(ltik).NotTo(BeEmpty())
		tok := idToken(ltik)
		key, _ = tok.JSON["services"].(map[string]any)["serviceKey"].(string)
		Expect(key).NotTo(BeEmpty(), "a service key when NRPS or AGS is available")
		Expect(idToken(ltik).JSON["services"].(map[string]any)["serviceKey"]).To(Equal(key), "the same key on every call")
	})

	Describe("GET /api/memberships", func() {
		It("returns the roster page by page, mapped to camelCase (T-NRPS-01..06)", func() {
			res := call("GET", "/api/memberships?limit=400", nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(200), string(res.Raw))
			Expect(members(res)).To(HaveLen(400))
			Expect(res.JSON["context"]).To(HaveKeyWithValue("id", "course-42"))
			first := members(res)[0].(map[string]any)
			Expect(first).To(HaveKey("userId"))
			Expect(first).To(HaveKey("roles"))
			Expect(first).To(HaveKey("status"), "status defaults to Active (T-NRPS-04)")
			Expect(first).NotTo(HaveKey("user_id"))

			seen := map[string]bool{}
			for page := res; ; {
				for _, m := range members(page) {
					id := m.(map[string]any)["userId"].(string)
					Expect(seen).NotTo(HaveKey(id), "no member twice")
					seen[id] = true
				}
				next, _ := page.JSON["next"].(string)
				if next == "" {
					break
				}
				page = call("GET", "/api/memberships?url="+url.QueryEscape(next), nil, serviceAuth(key))
				Expect(page.Status).To(Equal(200), string(page.Raw))
			}
			Expect(seen).To(HaveLen(1000), "every member exactly once, following next verbatim (T-NRPS-02)")
			Expect(lms.TokenRequests()).To(Equal(1), "one access token for all pages (T-CC-09)")
		})

		It("filters by role, short or full, and by resource link", func() {
			short := call("GET", "/api/memberships?role=Instructor&limit=1000", nil, ltikAuth(ltik))
			full := call("GET", "/api/memberships?limit=1000&role="+url.QueryEscape("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"), nil, ltikAuth(ltik))
			Expect(short.Status).To(Equal(200))
			Expect(members(short)).NotTo(BeEmpty())
			Expect(len(members(short))).To(Equal(len(members(full))))
			Expect(len(members(short))).To(BeNumerically("<", 1000))

			byLink := call("GET", "/api/memberships?limit=1000&resourceLinkId="+lmssim.ResourceLinkID, nil, ltikAuth(ltik))
			Expect(byLink.Status).To(Equal(200))
			Expect(len(members(byLink))).To(BeNumerically("<", 1000))

			unknown := call("GET", "/api/memberships?resourceLinkId=nope", nil, ltikAuth(ltik))
			Expect(unknown.Status).To(Equal(404), "T-NRPS-07: the platform's refusal is surfaced")
			Expect(unknown.JSON["details"]).To(HaveKeyWithValue("externalError", true))
		})

		It("never sends the access token to a url on another host (T-NRPS-03)", func() {
			var hits atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
			defer other.Close()
			res := call("GET", "/api/memberships?url="+url.QueryEscape(other.URL+"/nrps/memberships"), nil, ltikAuth(ltik))
			Expect(res.Status).To(Equal(400))
			Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
			Expect(hits.Load()).To(BeZero())
		})

		It("gets a fresh token once when the platform revokes the cached one (T-CC-09)", func() {
			Expect(call("GET", "/api/memberships?limit=1", nil, ltikAuth(ltik)).Status).To(Equal(200))
			before := lms.TokenRequests()
			lms.RevokeTokens()
			Expect(call("GET", "/api/memberships?limit=1", nil, ltikAuth(ltik)).Status).To(Equal(200))
			Expect(lms.TokenRequests()).To(Equal(before + 1))
			claims := lms.LastAssertionClaims()
			Expect(claims["iss"]).To(Equal(lms.ClientID), "T-CC-02")
			Expect(claims["sub"]).To(Equal(lms.ClientID), "T-CC-02")
			Expect(claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"]).To(Equal("deployment-1"), "T-CC-05")
		})
	})

	Describe("authentication of the service endpoints", func() {
		It("accepts LTIK-AUTH-V2 and SERVICE-AUTH-V1 where the issue says, and nothing else", func() {
			for _, tc := range []struct {
				method, path string
				body         any
				ltik, svc    bool
			}{
				{"GET", "/api/idtoken", nil, true, false},
				{"GET", "/api/memberships?limit=1", nil, true, true},
				{"GET", "/api/lineitems", nil, true, true},
				{"POST", "/api/deeplinking/form", map[string]any{"contentItems": []any{}}, true, false},
				{"POST", "/api/deeplinking", map[string]any{"contentItems": []any{}}, true, false},
			} {
				for scheme, hdr := range map[string]map[string]string{
					"ltik": ltikAuth(ltik), "service": serviceAuth(key), "bearer": bearer,
					"wrong key": {"Authorization": "SERVICE-AUTH-V1 wrong:" + key},
					"tampered":  serviceAuth(key[:len(key)-3] + "abc"),
				} {
					res := call(tc.method, tc.path, tc.body, hdr)
					want := (scheme == "ltik" && tc.ltik) || (scheme == "service" && tc.svc)
					if want {
						// Deep linking on a resource-link launch is refused, but authenticated.
						Expect(res.Status).NotTo(Equal(401), tc.path+" with "+scheme+": "+string(res.Raw))
					} else {
						Expect(res.Status).To(Equal(401), tc.path+" with "+scheme)
						Expect(string(res.Raw)).NotTo(ContainSubstring(apiKey))
					}
				}
			}
		})

		It("refuses a service key once the registration is deactivated", func() {
			Expect(call("GET", "/api/memberships?limit=1", nil, serviceAuth(key)).Status).To(Equal(200))
			Expect(call("POST", "/api/platforms/"+lms.ID+"/deactivate", nil, bearer).Status).To(Equal(200))
			res := call("GET", "/api/memberships?limit=1", nil, serviceAuth(key))
			Expect(res.Status).To(Equal(401))
			// §7: one code per credential; the precise one is in details.reason.
			Expect(res.errorCode()).To(Equal("INVALID_SERVICE_AUTH_AUTHORIZATION_HEADER"))
			Expect(string(res.Raw)).To(ContainSubstring(`"reason":"UNREGISTERED_OR_INACTIVE_PLATFORM"`))
		})
	})

	Describe("line items and scores", func() {
		seeded := func() string { return lms.URL + "/mod/lti/services.php/2/lineitems/1/lineitem?type_id=4" }
		itemPath := func(id string) string { return "/api/lineitems/" + url.PathEscape(id) }

		It("lists, creates, reads, replaces and deletes line items with Moodle-style ids", func() {
			list := call("GET", "/api/lineitems", nil, serviceAuth(key))
			Expect(list.Status).To(Equal(200), string(list.Raw))
			Expect(list.JSON["lineItems"]).To(ContainElement(HaveKeyWithValue("id", seeded())))

			created := call("POST", "/api/lineitems", map[string]any{
				"label": "Essay", "scoreMaximum": 50, "resourceId": "essay-1", "tag": "essays",
			}, ltikAuth(ltik))
			Expect(created.Status).To(Equal(201), string(created.Raw))
			id := created.JSON["id"].(string)
			Expect(id).To(ContainSubstring("type_id=4"))

			got := call("GET", itemPath(id), nil, ltikAuth(ltik))
			Expect(got.Status).To(Equal(200), string(got.Raw))
			Expect(got.JSON).To(HaveKeyWithValue("label", "Essay"))

			byTag := call("GET", "/api/lineitems?tag=essays", nil, ltikAuth(ltik))
			Expect(byTag.JSON["lineItems"]).To(ConsistOf(HaveKeyWithValue("id", id)))

			put := call("PUT", itemPath(id), map[string]any{"label": "Essay (final)", "scoreMaximum": 60, "resourceId": "essay-1", "tag": "essays"}, ltikAuth(ltik))
			Expect(put.Status).To(Equal(200), string(put.Raw))
			Expect(lms.LineItem(id)).To(HaveKeyWithValue("label", "Essay (final)"))

			Expect(call("DELETE", itemPath(id), nil, ltikAuth(ltik)).Status).To(Equal(204))
			gone := call("GET", itemPath(id), nil, ltikAuth(ltik))
			Expect(gone.Status).To(Equal(404))
			Expect(gone.JSON["details"]).To(HaveKeyWithValue("externalError", true))
		})

		It("posts scores with increasing millisecond timestamps before the query string (T-AGS-01, T-AGS-03, T-AGS-05)", func() {
			for i, score := range []float64{7, 9} {
				res := call("POST", itemPath(seeded())+"/scores", map[string]any{
					"userId": "teacher-1", "scoreGiven": score, "scoreMaximum": 10,
					"activityProgress": "Initiated", "gradingProgress": "FullyGraded", "comment": "well done",
				}, serviceAuth(key))
				Expect(res.Status).To(Equal(204), "score %d: %s", i, res.Raw)
			}
			stored := lms.Scores(seeded())
			Expect(stored).To(HaveLen(2))
			Expect(stored[0]["activityProgress"]).To(Equal("Initialized"), "Initiated is an alias")
			Expect(stored[0]["timestamp"]).To(MatchRegexp(`\.\d{3}`))
			Expect(stored[1]["timestamp"].(string) > stored[0]["timestamp"].(string)).To(BeTrue())

			results := call("GET", itemPath(seeded())+"/scores?userId=teacher-1", nil, ltikAuth(ltik))
			Expect(results.Status).To(Equal(200), string(results.Raw))
			Expect(results.JSON["scores"]).To(ContainElement(And(HaveKeyWithValue("userId", "teacher-1"), HaveKey("resultScore"))))
		})

		DescribeTable("refuses invalid bodies with 400 naming the field",
			func(path string, body map[string]any, field string) {
				if path == "scores" {
					path = itemPath(seeded()) + "/scores"
				}
				res := call("POST", path, body, ltikAuth(ltik))
				Expect(res.Status).To(Equal(400), string(res.Raw))
				Expect(res.errorDescription()).To(ContainSubstring(field))
			},
			Entry("line item without label", "/api/lineitems", map[string]any{"scoreMaximum": 10}, "label"),
			Entry("T-AGS-06 scoreMaximum 0", "/api/lineitems", map[string]any{"label": "x", "scoreMaximum": 0}, "scoreMaximum"),
			Entry("score without userId", "scores", map[string]any{"activityProgress": "Completed", "gradingProgress": "FullyGraded"}, "userId"),
			Entry("T-AGS-07 negative score", "scores", map[string]any{"userId": "u", "scoreGiven": -1, "scoreMaximum": 10, "activityProgress": "Completed", "gradingProgress": "FullyGraded"}, "scoreGiven"),
			Entry("scoreGiven without scoreMaximum", "scores", map[string]any{"userId": "u", "scoreGiven": 1, "activityProgress": "Completed", "gradingProgress": "FullyGraded"}, "scoreMaximum"),
			Entry("unknown gradingProgress", "scores", map[string]any{"userId": "u", "activityProgress": "Completed", "gradingProgress": "Done"}, "gradingProgress"),
		)

		It("refuses line item ids on another host", func() {
			var hits atomic.Int32
			evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
			defer evil.Close()
			for _, path := range []string{itemPath(evil.URL + "/lineitems/1"), itemPath(evil.URL+"/lineitems/1") + "/scores"} {
				res := call("GET", path, nil, ltikAuth(ltik))
				Expect(res.Status).To(Equal(400))
				Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
				Expect(res.errorDescription()).To(ContainSubstring("not on the platform's service host"))
			}
			Expect(hits.Load()).To(BeZero(), "the access token never left for another host")
		})
	})

	Describe("deep linking", func() {
		It("builds a form whose JWT the platform accepts (T-DL-01..11)", func() {
			dl := newBrowser().launch(lms, "message=LtiDeepLinkingRequest").Ltik
			Expect(dl).NotTo(BeEmpty())
			res := call("POST", "/api/deeplinking/form", map[string]any{
				"contentItems": []any{map[string]any{
					"type": "ltiResourceLink", "title": "Quiz 3", "url": publicURL + "/lti/launch?quiz=3",
					"custom": map[string]any{"quiz": "3"}, "lineItem": map[string]any{"scoreMaximum": 10, "label": "Quiz 3"},
				}},
				"options": map[string]any{"message": "Added Quiz 3"},
			}, ltikAuth(dl))
			Expect(res.Status).To(Equal(200), string(res.Raw))
			form := res.JSON["form"].(string)
			Expect(form).To(ContainSubstring(`name="JWT"`))
			Expect(form).To(ContainSubstring("course=42&amp;sesskey=abc"), "the return URL's query is kept")

			// Submit it to the platform as the browser would; the LMS verifies it with ltiop's JWKS.
			action := regexpFind(form, `action="([^"]*)"`)
			jwt := regexpFind(form, `name="JWT" value="([^"]*)"`)
			post, err := http.PostForm(strings.ReplaceAll(action, "&amp;", "&"), url.Values{"JWT": {jwt}})
			Expect(err).NotTo(HaveOccurred())
			Expect(post.StatusCode).To(Equal(200), readBody(post))
			Expect(lms.DeepLinkResponses()).To(HaveLen(1))
			got := lms.DeepLinkResponses()[0]
			Expect(got["https://purl.imsglobal.org/spec/lti-dl/claim/msg"]).To(Equal("Added Quiz 3"))

			msg := call("POST", "/api/deeplinking/message", map[string]any{"contentItems": []any{}}, ltikAuth(dl))
			Expect(msg.Status).To(Equal(200))
			Expect(msg.JSON["target"]).To(ContainSubstring("/deep_links?course=42&sesskey=abc"))
			Expect(msg.JSON["message"]).To(HavePrefix("eyJ"))
		})

		It("refuses invalid items naming the item, and deep linking on a resource-link launch", func() {
			dl := newBrowser().launch(lms, "message=LtiDeepLinkingRequest").Ltik
			res := call("POST", "/api/deeplinking/form", map[string]any{
				"contentItems": []any{map[string]any{"type": "link"}},
			}, ltikAuth(dl))
			Expect(res.Status).To(Equal(400))
			Expect(res.errorDescription()).To(ContainSubstring("contentItems[0].url"))

			res = call("POST", "/api/deeplinking/form", map[string]any{"contentItems": []any{}}, ltikAuth(ltik))
			Expect(res.Status).To(Equal(403))
		})
	})
})

func regexpFind(s, pattern string) string {
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	Expect(m).NotTo(BeNil(), s)
	return m[1]
}
