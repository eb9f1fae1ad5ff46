package toolmode_test

import (
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

const (
	claimNRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	claimAGS  = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
)

func itemPath(id string) string { return "/api/lineitems/" + url.PathEscape(id) }

// seeded is the id of the line item the simulator starts with (the launch's lineitem).
func seeded(rg *rig) string {
	return rg.lms.Issuer + lmssim.LineItemsPath + "/1/lineitem?" + lmssim.TypeIDQuery
}

// wantUnchanged fails when the platform's line items or the seeded item's scores changed.
func wantUnchanged(t *testing.T, rg *rig) func() {
	t.Helper()
	items, scores := rg.lms.LineItemIDs(), len(rg.lms.Scores(seeded(rg)))
	return func() {
		t.Helper()
		if got := rg.lms.LineItemIDs(); !slices.Equal(got, items) {
			t.Fatalf("line items changed: %v, were %v", got, items)
		}
		if got := len(rg.lms.Scores(seeded(rg))); got != scores {
			t.Fatalf("scores changed: %d, were %d", got, scores)
		}
	}
}

// GET /api/memberships pages the roster with one access token (T-NRPS-01/02, T-CC-09),
// with the ltik or the service key.
func TestMemberships(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	key := rg.serviceKeyOf(t, ltik)
	res := rg.call(t, nil, "GET", "/api/memberships?limit=3", ltikAuth(ltik), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("memberships: %d %s", res.Status, res.Body)
	}
	page := res.JSON(t)
	members, _ := page["members"].([]any)
	next, _ := page["next"].(string)
	if len(members) != 3 || next == "" {
		t.Fatalf("first page: %d members, next %q", len(members), next)
	}
	if _, ok := members[0].(map[string]any)["userId"]; !ok {
		t.Fatalf("member %v not in camelCase", members[0])
	}
	second := rg.call(t, nil, "GET", "/api/memberships?url="+url.QueryEscape(next), serviceAuth(key), nil)
	if second.Status != http.StatusOK || len(second.JSON(t)["members"].([]any)) == 0 {
		t.Fatalf("second page: %d %s", second.Status, second.Body)
	}
	if n := rg.lms.TokenRequests(); n != 1 {
		t.Fatalf("%d token requests for two pages, want 1", n)
	}
}

// Line items and scores through to the platform: list, create, read, replace, score,
// results, delete.
func TestLineItemsAndScores(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	key := rg.serviceKeyOf(t, ltik)

	list := rg.call(t, nil, "GET", "/api/lineitems?limit=10", serviceAuth(key), nil)
	if list.Status != http.StatusOK || !strings.Contains(list.Body, seeded(rg)) {
		t.Fatalf("list: %d %s", list.Status, list.Body)
	}
	created := rg.call(t, nil, "POST", "/api/lineitems", ltikAuth(ltik), map[string]any{"label": "Essay", "scoreMaximum": 50, "tag": "essays"})
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	id, _ := created.JSON(t)["id"].(string)
	if rg.lms.LineItem(id) == nil {
		t.Fatalf("the platform has no line item %q", id)
	}
	if got := rg.call(t, nil, "GET", itemPath(id), ltikAuth(ltik), nil); got.Status != http.StatusOK || got.JSON(t)["label"] != "Essay" {
		t.Fatalf("get: %d %s", got.Status, got.Body)
	}
	put := rg.call(t, nil, "PUT", itemPath(id), serviceAuth(key), map[string]any{"label": "Essay (final)", "scoreMaximum": 60, "tag": "essays"})
	if put.Status != http.StatusOK || rg.lms.LineItem(id)["label"] != "Essay (final)" {
		t.Fatalf("put: %d %s", put.Status, put.Body)
	}
	score := rg.call(t, nil, "POST", itemPath(id)+"/scores", ltikAuth(ltik), map[string]any{
		"userId": "u", "scoreGiven": 7, "scoreMaximum": 10, "activityProgress": "Completed", "gradingProgress": "FullyGraded"})
	if score.Status != http.StatusNoContent || score.Body != "" || len(rg.lms.Scores(id)) != 1 {
		t.Fatalf("score: %d %q", score.Status, score.Body)
	}
	results := rg.call(t, nil, "GET", itemPath(id)+"/scores?userId=u", ltikAuth(ltik), nil)
	if results.Status != http.StatusOK || !strings.Contains(results.Body, `"userId":"u"`) {
		t.Fatalf("results: %d %s", results.Status, results.Body)
	}
	if del := rg.call(t, nil, "DELETE", itemPath(id), ltikAuth(ltik), nil); del.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", del.Status, del.Body)
	}
	if rg.lms.LineItem(id) != nil {
		t.Fatal("the line item is still on the platform")
	}

	// T-NRPS-07 / AGS: the platform's own refusal is passed on with its status.
	gone := rg.call(t, nil, "GET", itemPath(id), ltikAuth(ltik), nil)
	testhttp.WantRefusal(t, gone, 404, "UPSTREAM_ERROR")
	if env := gone.JSON(t)["details"].(map[string]any); env["externalError"] != true || env["upstreamStatus"] != float64(404) {
		t.Fatalf("details %v", env)
	}
}

// SERVICE_NOT_AVAILABLE_FOR_CONTEXT: a launch without the service claim, or without the
// scope a call needs (T-AGS-02), reaches no platform.
func TestServicesNotAvailableForTheLaunch(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	noNRPS := rg.launchWith(t, func(c map[string]any) { delete(c, claimNRPS) })
	noAGS := rg.launchWith(t, func(c map[string]any) { delete(c, claimAGS) })
	readOnly := rg.launchWith(t, func(c map[string]any) {
		c[claimAGS].(map[string]any)["scope"] = []string{lmssim.ScopeLineItemReadOnly}
	})
	unchanged := wantUnchanged(t, rg)
	score := map[string]any{"userId": "u", "activityProgress": "Completed", "gradingProgress": "FullyGraded"}
	for _, tc := range []struct {
		name, ltik, method, path string
		body                     any
	}{
		{"memberships without NRPS", noNRPS, "GET", "/api/memberships", nil},
		{"line items without AGS", noAGS, "GET", "/api/lineitems", nil},
		{"a new line item without AGS", noAGS, "POST", "/api/lineitems", map[string]any{"label": "x", "scoreMaximum": 1}},
		{"a line item without AGS", noAGS, "GET", itemPath(seeded(rg)), nil},
		{"replacing a line item without AGS", noAGS, "PUT", itemPath(seeded(rg)), map[string]any{"label": "x", "scoreMaximum": 1}},
		{"deleting a line item without AGS", noAGS, "DELETE", itemPath(seeded(rg)), nil},
		{"a score without AGS", noAGS, "POST", itemPath(seeded(rg)) + "/scores", score},
		{"results without AGS", noAGS, "GET", itemPath(seeded(rg)) + "/scores", nil},
		{"T-AGS-02 a new line item with a read-only scope", readOnly, "POST", "/api/lineitems", map[string]any{"label": "x", "scoreMaximum": 1}},
		{"T-AGS-02 a score without the score scope", readOnly, "POST", itemPath(seeded(rg)) + "/scores", score},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testhttp.WantRefusal(t, rg.call(t, nil, tc.method, tc.path, ltikAuth(tc.ltik), tc.body), 403, toolmode.CodeServiceNotAvailable)
		})
	}
	unchanged()
	if n := rg.lms.TokenRequests(); n != 0 {
		t.Fatalf("%d token requests for refused calls", n)
	}
}

// Requests ltiop refuses before calling the platform: bad limits and bodies (naming the
// field), and URLs off the launch's service host (T-NRPS-03), whose host is never called.
func TestServiceRequestsRefusedBeforeThePlatform(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer other.Close()
	unchanged := wantUnchanged(t, rg)
	item := itemPath(seeded(rg))
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
	}{
		{"limit 0", "GET", "/api/memberships?limit=0", nil, 400, "INVALID_PARAMETERS", "limit"},
		{"limit not a number", "GET", "/api/lineitems?limit=ten", nil, 400, "INVALID_PARAMETERS", "limit"},
		{"limit too large", "GET", item + "/scores?limit=10001", nil, 400, "INVALID_PARAMETERS", "limit"},
		{"a line item without label", "POST", "/api/lineitems", map[string]any{"scoreMaximum": 10}, 400, "INVALID_PARAMETERS", "label"},
		{"T-AGS-06 scoreMaximum 0", "PUT", item, map[string]any{"label": "x", "scoreMaximum": 0}, 400, "INVALID_PARAMETERS", "scoreMaximum"},
		{"a score without userId", "POST", item + "/scores", map[string]any{"activityProgress": "Completed", "gradingProgress": "FullyGraded"}, 400, "INVALID_PARAMETERS", "userId"},
		{"T-AGS-07 a negative score", "POST", item + "/scores", map[string]any{"userId": "u", "scoreGiven": -1, "scoreMaximum": 10, "activityProgress": "Completed", "gradingProgress": "FullyGraded"}, 400, "INVALID_PARAMETERS", "scoreGiven"},
		{"a field of the wrong type", "POST", "/api/lineitems", map[string]any{"label": []any{}, "scoreMaximum": 1}, 400, "INVALID_PARAMETERS", "label"},
		{"not JSON", "POST", "/api/lineitems", `{"label":`, 400, "INVALID_REQUEST_BODY", ""},
		{"T-NRPS-03 a page URL on another host", "GET", "/api/memberships?url=" + url.QueryEscape(other.URL+"/nrps/memberships"), nil, 400, "INVALID_PARAMETERS", "service host"},
		{"a line item on another host", "GET", itemPath(other.URL + "/lineitems/1"), nil, 400, "INVALID_PARAMETERS", "service host"},
		{"a score to a line item on another host", "POST", itemPath(other.URL+"/lineitems/1") + "/scores",
			map[string]any{"userId": "u", "activityProgress": "Completed", "gradingProgress": "FullyGraded"}, 400, "INVALID_PARAMETERS", "service host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			header := ltikAuth(ltik)
			if s, ok := tc.body.(string); ok && s != "" {
				header["Content-Type"] = "application/json"
			}
			res := rg.call(t, nil, tc.method, tc.path, header, tc.body)
			testhttp.WantRefusal(t, res, tc.status, tc.code)
			if !strings.Contains(testhttp.Description(t, res), tc.field) {
				t.Fatalf("the description %q does not name %q", testhttp.Description(t, res), tc.field)
			}
		})
	}
	t.Run("a body that is not JSON", func(t *testing.T) {
		res := rg.call(t, nil, "POST", "/api/lineitems", map[string]string{
			"Authorization": ltikAuth(ltik)["Authorization"], "Content-Type": "text/plain"}, "label=x")
		testhttp.WantRefusal(t, res, 415, "UNSUPPORTED_MEDIA_TYPE")
	})
	unchanged()
	if hits.Load() != 0 {
		t.Fatal("the other host was called")
	}
}

// The platform's failures: a refusal of ltiop's credentials is a 502 (the integrator's
// were fine), a 5xx a 502, an unreachable platform a 502, a slow one a 504.
func TestServicesWhenThePlatformFails(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) {
		c.services = true
		c.http = &http.Client{Timeout: 300 * time.Millisecond}
	})
	ltik := rg.launchWith(t, nil)
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter, r *http.Request)
		status   int
		code     string
		upstream int
	}{
		{"the service answers 403", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) }, 502, "UPSTREAM_ERROR", 403},
		{"the service answers 500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "oops", 500) }, 502, "UPSTREAM_ERROR", 500},
		{"the service answers 400", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad", 400) }, 400, "UPSTREAM_ERROR", 400},
		{"the service is too slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, 504, "UPSTREAM_TIMEOUT", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != lmssim.MembershipsPath {
					return false
				}
				tc.answer(w, r)
				return true
			})
			res := rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil)
			testhttp.WantRefusal(t, res, tc.status, tc.code)
			details := res.JSON(t)["details"].(map[string]any)
			if details["externalError"] != true || (tc.upstream != 0 && details["upstreamStatus"] != float64(tc.upstream)) {
				t.Fatalf("details %v", details)
			}
		})
	}
	t.Run("the token endpoint is unreachable", func(t *testing.T) {
		rg := newRig(t, func(c *rigConfig) { c.services = true })
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		rg.update(func(pr *ltiv1.PlatformRegistration) {
			pr.Spec.AccesstokenEndpoint = ltiv1.EndpointURL(closed.URL + lmssim.TokenPath)
		})
		ltik := rg.launchWith(t, nil)
		res := rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil)
		testhttp.WantRefusal(t, res, 502, "UPSTREAM_ERROR")
		if details := res.JSON(t)["details"].(map[string]any); details["externalError"] != true {
			t.Fatalf("details %v", details)
		}
	})
}

// A registration deleted while a service call is under way (between the admission of the
// ltik and the call to the LMS) is a clean 401, not a recovered panic.
func TestRegistrationDeletedMidRequest(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	// The informer delivers the deletion after the guard admitted the request.
	h := rg.tool.RequireService(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rg.reg.Forget(rg.pr.DeepCopy())
		rg.tool.Memberships(w, r)
	}))
	req := httptest.NewRequest("GET", "/api/memberships", nil)
	for k, v := range ltikAuth(ltik) {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	res := testhttp.Reply{Status: w.Code, Header: w.Header(), Body: w.Body.String()}
	testhttp.WantReason(t, res, http.StatusUnauthorized, toolmode.CodeInvalidLtikAuth, lti.CodeUnregistered)
}

// A service key opens for its configured lifetime after the launch that made it, then is
// refused: a captured key does not reach rosters and grades for years.
func TestServiceKeyExpires(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true; c.opts.ServiceKeyLifetime = 48 * time.Hour })
	key := rg.serviceKeyOf(t, rg.launchWith(t, nil))
	if res := rg.call(t, nil, "GET", "/api/memberships", serviceAuth(key), nil); res.Status != http.StatusOK {
		t.Fatalf("a fresh service key: %d %s", res.Status, res.Body)
	}
	rg.clock.Advance(48*time.Hour + time.Second)
	testhttp.WantError(t, rg.call(t, nil, "GET", "/api/memberships", serviceAuth(key), nil), http.StatusUnauthorized, toolmode.CodeInvalidServiceAuth)
}

// The service key is made when /api/idtoken is first asked for it, not at launch, yet it
// still expires ServiceKeyLifetime after the launch: asking late does not extend it.
func TestServiceKeyLifetimeCountsFromLaunch(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true; c.opts.ServiceKeyLifetime = 30 * time.Hour })
	ltik := rg.launchWith(t, nil)
	rg.clock.Advance(20 * time.Hour) // the ltik (24 h) still opens
	key := rg.serviceKeyOf(t, ltik)
	if key == "" || rg.serviceKeyOf(t, ltik) != key {
		t.Fatal("the service key is missing or differs between calls")
	}
	if res := rg.call(t, nil, "GET", "/api/memberships", serviceAuth(key), nil); res.Status != http.StatusOK {
		t.Fatalf("a fresh service key: %d %s", res.Status, res.Body)
	}
	rg.clock.Advance(10*time.Hour + time.Second) // 30 h after the launch, 10 h after the call
	testhttp.WantError(t, rg.call(t, nil, "GET", "/api/memberships", serviceAuth(key), nil), http.StatusUnauthorized, toolmode.CodeInvalidServiceAuth)
}

// An ltik sealed by an ltiop that made the service key at launch (it carries the key)
// answers that key, so integrators' stored keys and ltiks survive an upgrade.
func TestServiceKeyFromAnEarlierLtik(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	earlier := rg.serviceKeyOf(t, rg.launchWith(t, nil))
	old, err := toolmode.ResealWithServiceKey(rg.tool, ltik, earlier)
	if err != nil {
		t.Fatal(err)
	}
	if got := rg.serviceKeyOf(t, old); got != earlier {
		t.Fatalf("an ltik carrying its service key answered another one")
	}
	if got := rg.serviceKeyOf(t, ltik); got == "" || got == earlier {
		t.Fatalf("the new ltik's service key %q", got)
	}
}

// A launch without a service (no NRPS, AGS, groups, asset or outcome claim) has no key.
func TestNoServiceKeyWithoutServices(t *testing.T) {
	rg := newRig(t)
	ltik := rg.launchWith(t, func(c map[string]any) {
		delete(c, "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice")
		delete(c, "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint")
		delete(c, "https://purl.imsglobal.org/spec/lti-gs/claim/groupsservice")
	})
	if key := rg.serviceKeyOf(t, ltik); key != "" {
		t.Fatalf("a launch without services got a service key")
	}
}
