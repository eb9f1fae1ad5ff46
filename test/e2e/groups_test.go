package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

func groupsOf(res response) []any {
	g, _ := res.JSON["groups"].([]any)
	return g
}

var _ = Describe("Course Groups Service", func() {
	var (
		lms  *lmsServer
		ltik string
		key  string
	)
	BeforeEach(func() {
		lms = servicesLMS()
		ltik = newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(ltik).NotTo(BeEmpty())
		services := idToken(ltik).JSON["services"].(map[string]any)
		Expect(services["groups"]).To(Equal(map[string]any{"available": true, "groupSets": true}))
		key, _ = services["serviceKey"].(string)
		Expect(key).NotTo(BeEmpty())
	})

	It("pages the course's groups and sets with one access token, with the ltik and the service key", func() {
		res := call("GET", "/api/groups?limit=10", nil, ltikAuth(ltik))
		Expect(res.Status).To(Equal(200), string(res.Raw))
		Expect(groupsOf(res)).To(HaveLen(10))
		first := groupsOf(res)[0].(map[string]any)
		Expect(first).To(Equal(map[string]any{"id": "lab-1", "name": "Lab 1", "tag": "lab", "setIds": []any{"set-labs"}}))

		seen := map[string]bool{}
		for page := res; ; {
			for _, g := range groupsOf(page) {
				id := g.(map[string]any)["id"].(string)
				Expect(seen).NotTo(HaveKey(id), "no group twice")
				seen[id] = true
			}
			next, _ := page.JSON["next"].(string)
			if next == "" {
				break
			}
			page = call("GET", "/api/groups?url="+url.QueryEscape(next), nil, serviceAuth(key))
			Expect(page.Status).To(Equal(200), string(page.Raw))
		}
		Expect(seen).To(HaveLen(36), "every group exactly once, following next verbatim")
		Expect(seen).To(HaveKey("teaching-staff"))

		mine := call("GET", "/api/groups?userId=user-1", nil, serviceAuth(key))
		Expect(mine.Status).To(Equal(200), string(mine.Raw))
		Expect(groupsOf(mine)).To(HaveLen(3))
		Expect(groupsOf(mine)[2]).To(Equal(map[string]any{"id": "teaching-staff", "name": "Teaching staff", "setIds": []any{}}))

		sets := call("GET", "/api/groupsets", nil, ltikAuth(ltik))
		Expect(sets.Status).To(Equal(200), string(sets.Raw))
		Expect(sets.JSON["sets"]).To(HaveLen(2))
		Expect(lms.TokenRequests()).To(Equal(1), "one access token for every call of the launch (T-CC-09, T-CC-10)")
	})

	It("refuses a launch without the service, a url on another host and Bearer, without calling the platform", func() {
		lms.Customize = func(claims, _ map[string]any) { delete(claims, lmssim.ClaimGroups) }
		DeferCleanup(func() { lms.Customize = nil })
		without := newBrowser().launch(lms, "user=teacher-1").Ltik
		Expect(idToken(without).JSON["services"]).To(HaveKeyWithValue("groups", map[string]any{"available": false, "groupSets": false}))
		before := lms.TokenRequests()
		for _, path := range []string{"/api/groups", "/api/groupsets"} {
			res := call("GET", path, nil, ltikAuth(without))
			Expect(res.Status).To(Equal(403), string(res.Raw))
			Expect(res.errorCode()).To(Equal("SERVICE_NOT_AVAILABLE_FOR_CONTEXT"))
		}

		var hits atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
		defer other.Close()
		res := call("GET", "/api/groups?url="+url.QueryEscape(other.URL+lmssim.GroupsPath), nil, ltikAuth(ltik))
		Expect(res.Status).To(Equal(400))
		Expect(res.errorCode()).To(Equal("INVALID_PARAMETERS"))
		Expect(hits.Load()).To(BeZero())

		bearer := map[string]string{"Authorization": "Bearer " + apiKey}
		refused := call("GET", "/api/groupsets", nil, bearer)
		Expect(refused.Status).To(Equal(401))
		Expect(refused.JSON["details"]).To(Equal(call("GET", "/api/memberships", nil, bearer).JSON["details"]),
			"Bearer is refused as on the other service endpoints")
		Expect(lms.TokenRequests()).To(Equal(before), "no token for refused calls")
	})
})
