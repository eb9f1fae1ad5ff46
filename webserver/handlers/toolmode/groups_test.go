package toolmode_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

// GET /api/groups and /api/groupsets page the context's groups and sets with one access
// token, with the ltik or the service key; the ID token says the service is there.
func TestGroups(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil).JSON(t)
	groups, _ := tok["services"].(map[string]any)["groups"].(map[string]any)
	if groups["available"] != true || groups["groupSets"] != true {
		t.Fatalf("services.groups %v", groups)
	}
	key := rg.serviceKeyOf(t, ltik)

	var ids []string
	auth := ltikAuth(ltik)
	for path, pages := "/api/groups?limit=10", 0; path != ""; pages++ {
		res := rg.call(t, nil, "GET", path, auth, nil)
		if res.Status != http.StatusOK || pages > 10 {
			t.Fatalf("%s: %d %s", path, res.Status, res.Body)
		}
		page := res.JSON(t)
		for _, g := range page["groups"].([]any) {
			g := g.(map[string]any)
			if _, ok := g["setIds"].([]any); !ok {
				t.Fatalf("group %v has no setIds array", g)
			}
			ids = append(ids, g["id"].(string))
		}
		next, _ := page["next"].(string)
		path = ""
		if next != "" {
			path = "/api/groups?url=" + url.QueryEscape(next)
		}
		auth = serviceAuth(key) // later pages with the service key
	}
	if len(ids) != 36 || ids[0] != "lab-1" || ids[35] != "teaching-staff" {
		t.Fatalf("%d groups: %v", len(ids), ids)
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != 36 {
		t.Fatal("a group was listed twice")
	}

	mine := rg.call(t, nil, "GET", "/api/groups?userId=user-1", serviceAuth(key), nil)
	if mine.Status != http.StatusOK || len(mine.JSON(t)["groups"].([]any)) != 3 {
		t.Fatalf("user-1's groups: %d %s", mine.Status, mine.Body)
	}
	lti := rg.call(t, nil, "GET", "/api/groups?user_id=user-1", serviceAuth(key), nil)
	if lti.Status != http.StatusOK || lti.Body != mine.Body {
		t.Fatalf("user_id: %d %s", lti.Status, lti.Body)
	}
	sets := rg.call(t, nil, "GET", "/api/groupsets", ltikAuth(ltik), nil)
	if sets.Status != http.StatusOK || !strings.Contains(sets.Body, `{"id":"set-labs","name":"Lab groups","tag":"labs"}`) {
		t.Fatalf("sets: %d %s", sets.Status, sets.Body)
	}
	if n := rg.lms.TokenRequests(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

// SERVICE_NOT_AVAILABLE_FOR_CONTEXT without the claim, or (group sets) without its URL, as
// Sakai's claim may be; a launch with the groups service alone still gets a service key.
func TestGroupsNotAvailable(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	noGroups := rg.launchWith(t, func(c map[string]any) { delete(c, lmssim.ClaimGroups) })
	sakai := rg.launchWith(t, func(c map[string]any) {
		c[lmssim.ClaimGroups] = map[string]any{"context_groups_url": rg.lms.Issuer + lmssim.GroupsPath}
	})
	groupsOnly := rg.launchWith(t, func(c map[string]any) { delete(c, claimNRPS); delete(c, claimAGS) })
	for _, tc := range []struct{ name, ltik, path string }{
		{"groups without the claim", noGroups, "/api/groups"},
		{"group sets without the claim", noGroups, "/api/groupsets"},
		{"group sets without their URL", sakai, "/api/groupsets"},
		{"memberships on a groups-only launch", groupsOnly, "/api/memberships"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testhttp.WantRefusal(t, rg.call(t, nil, "GET", tc.path, ltikAuth(tc.ltik), nil), 403, toolmode.CodeServiceNotAvailable)
		})
	}
	if n := rg.lms.TokenRequests(); n != 0 {
		t.Fatalf("%d token requests for refused calls", n)
	}
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(sakai), nil).JSON(t)
	if g := tok["services"].(map[string]any)["groups"].(map[string]any); g["available"] != true || g["groupSets"] != false {
		t.Fatalf("Sakai's services.groups %v", g)
	}
	if res := rg.call(t, nil, "GET", "/api/groups", ltikAuth(sakai), nil); res.Status != http.StatusOK {
		t.Fatalf("Sakai's groups: %d %s", res.Status, res.Body)
	}
	key := rg.serviceKeyOf(t, groupsOnly)
	if key == "" {
		t.Fatal("no service key for a launch with the groups service alone")
	}
	if res := rg.call(t, nil, "GET", "/api/groupsets", serviceAuth(key), nil); res.Status != http.StatusOK {
		t.Fatalf("group sets with the service key: %d %s", res.Status, res.Body)
	}
}

// Bad parameters and URLs off the groups host are refused before the platform is called;
// the platform's own failures come back in the envelope with externalError.
func TestGroupsRefusedAndFailing(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer other.Close()
	for _, tc := range []struct {
		name, path, code, field string
	}{
		{"limit 0", "/api/groups?limit=0", "INVALID_PARAMETERS", "limit"},
		{"limit too large", "/api/groupsets?limit=10001", "INVALID_PARAMETERS", "limit"},
		{"a page URL on another host", "/api/groups?url=" + url.QueryEscape(other.URL+lmssim.GroupsPath), "INVALID_PARAMETERS", "service host"},
		{"a sets page URL on another host", "/api/groupsets?url=" + url.QueryEscape(other.URL+lmssim.GroupSetsPath), "INVALID_PARAMETERS", "service host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rg.call(t, nil, "GET", tc.path, ltikAuth(ltik), nil)
			testhttp.WantRefusal(t, res, 400, tc.code)
			if !strings.Contains(testhttp.Description(t, res), tc.field) {
				t.Fatalf("the description %q does not name %q", testhttp.Description(t, res), tc.field)
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatal("the other host was called")
	}
	// Bearer is refused exactly as on the other service endpoints (the same guard).
	bearer := map[string]string{"Authorization": "Bearer " + benchAPIKey}
	want := rg.call(t, nil, "GET", "/api/memberships", bearer, nil)
	for _, path := range []string{"/api/groups", "/api/groupsets"} {
		got := rg.call(t, nil, "GET", path, bearer, nil)
		if got.Status != http.StatusUnauthorized || got.Status != want.Status || got.Body != want.Body {
			t.Fatalf("Bearer on %s: %d %s; memberships answers %d %s", path, got.Status, got.Body, want.Status, want.Body)
		}
	}

	for _, tc := range []struct {
		name     string
		status   int
		want     int
		upstream float64
	}{
		{"the service answers 404", 404, 404, 404},
		{"the service answers 500", 500, 502, 500},
		{"the service answers 401 twice", 401, 502, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != lmssim.GroupSetsPath {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(`{"error":"nope","secret":"not passed on"}`))
				return true
			})
			res := rg.call(t, nil, "GET", "/api/groupsets", ltikAuth(ltik), nil)
			testhttp.WantRefusal(t, res, tc.want, "UPSTREAM_ERROR")
			details := res.JSON(t)["details"].(map[string]any)
			if details["externalError"] != true || details["upstreamStatus"] != tc.upstream || strings.Contains(res.Body, "not passed on") {
				t.Fatalf("details %v", details)
			}
		})
	}
}
