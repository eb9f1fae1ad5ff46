package toolmode_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

// members[].roles are normalised exactly as /api/idtoken's user.roles (service interface
// §2.1), and rawRoles keeps what the LMS sent.
func TestMembershipRolesNormalisedAsIDToken(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	rosters := map[string][]string{
		"deprecated": {"urn:lti:role:ims/lis/Instructor", "http://purl.imsglobal.org/vocab/lis/v2/unknown#Helper", ""},
		"simple":     {"TeachingAssistant", "Learner", "http://purl.imsglobal.org/vocab/lis/v2/person#Administrator"},
		"none":       nil,
	}
	for id, roles := range rosters {
		rg.lms.Members = append(rg.lms.Members, lmssim.Member{UserID: id, Roles: roles})
	}
	for id, roles := range rosters {
		// What /api/idtoken shows for a launch with these roles…
		ltik := rg.launchWith(t, func(c map[string]any) {
			c["https://purl.imsglobal.org/spec/lti/claim/roles"] = append([]string{}, roles...)
		})
		tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil)
		want := stringsOf(tok.JSON(t)["user"].(map[string]any)["roles"])
		// …is what /api/memberships shows for a member with them.
		res := rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil)
		if res.Status != http.StatusOK {
			t.Fatalf("memberships: %d %s", res.Status, res.Body)
		}
		var found bool
		for _, m := range res.JSON(t)["members"].([]any) {
			m := m.(map[string]any)
			if m["userId"] != id {
				continue
			}
			found = true
			got := stringsOf(m["roles"])
			if !slices.Equal(got, want) {
				t.Errorf("%s: members[].roles %q, /api/idtoken user.roles %q", id, got, want)
			}
			if raw := stringsOf(m["rawRoles"]); !slices.Equal(raw, append([]string{}, roles...)) {
				t.Errorf("%s: rawRoles %q, the LMS sent %q", id, raw, roles)
			}
		}
		if !found {
			t.Fatalf("member %s not returned: %s", id, res.Body)
		}
	}
}

// The role filter takes the §2.1 values (and the forms that normalise onto them); anything
// else is refused naming the parameter, before the LMS is called.
func TestMembershipRoleFilter(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	var mu sync.Mutex
	var sent []string
	rg.interceptLMS(t, func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "membership") {
			mu.Lock()
			sent = append(sent, r.URL.Query().Get("role"))
			mu.Unlock()
		}
		return false
	})
	for _, tc := range []struct{ role, sent string }{
		{"Learner", "Learner"},
		{"Instructor", "Instructor"},
		{"Student", lmssim.RoleLearner},
		{lmssim.RoleTA, lmssim.RoleTA},
		{"urn:lti:role:ims/lis/Learner", lmssim.RoleLearner},
		{"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty", "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty"},
	} {
		mu.Lock()
		sent = nil
		mu.Unlock()
		res := rg.call(t, nil, "GET", "/api/memberships?limit=2&role="+url.QueryEscape(tc.role), ltikAuth(ltik), nil)
		mu.Lock()
		got := slices.Clone(sent)
		mu.Unlock()
		if res.Status != http.StatusOK || len(got) != 1 || got[0] != tc.sent {
			t.Errorf("role=%s: %d, the LMS got role %q, want %q", tc.role, res.Status, got, tc.sent)
		}
	}
	for _, bad := range []string{"Teacher", "http://purl.imsglobal.org/vocab/lis/v2/membership#Wizard", " ", "Learner,Instructor"} {
		mu.Lock()
		sent = nil
		mu.Unlock()
		res := rg.call(t, nil, "GET", "/api/memberships?role="+url.QueryEscape(bad), ltikAuth(ltik), nil)
		testhttp.WantRefusal(t, res, http.StatusBadRequest, "INVALID_PARAMETERS")
		if d := testhttp.Description(t, res); !strings.HasPrefix(d, "role:") {
			t.Errorf("role=%q: the description %q does not name role", bad, d)
		}
		mu.Lock()
		if len(sent) != 0 {
			t.Errorf("role=%q reached the LMS", bad)
		}
		mu.Unlock()
	}
}

// T-SR-08: line items accept and return submissionReview; a broken one, or one whose url
// is not on ltiop's origin, is refused naming the field, and nothing reaches the LMS.
func TestLineItemSubmissionReview(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	reviewURL := rg.ltiop.URL + "/lti/launch?view=review"
	review := map[string]any{"reviewableStatus": []string{"Submitted", "Completed"}, "label": "See the essay",
		"url": reviewURL, "custom": map[string]string{"mode": "review"}}
	created := rg.call(t, nil, "POST", "/api/lineitems", ltikAuth(ltik), map[string]any{"label": "Essay", "scoreMaximum": 10, "submissionReview": review})
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	id, _ := created.JSON(t)["id"].(string)
	sr, _ := created.JSON(t)["submissionReview"].(map[string]any)
	if sr["url"] != reviewURL || sr["label"] != "See the essay" {
		t.Fatalf("create returned %s", created.Body)
	}
	if onLMS, _ := rg.lms.LineItem(id)["submissionReview"].(map[string]any); onLMS["url"] != reviewURL {
		t.Fatalf("the LMS holds %v", rg.lms.LineItem(id))
	}
	got := rg.call(t, nil, "GET", itemPath(id), ltikAuth(ltik), nil)
	if sr, _ := got.JSON(t)["submissionReview"].(map[string]any); got.Status != http.StatusOK || sr["label"] != "See the essay" {
		t.Fatalf("get: %d %s", got.Status, got.Body)
	}

	unchanged := wantUnchanged(t, rg)
	for _, tc := range []struct {
		name   string
		review any
		field  string
	}{
		{"not an object", "yes", "submissionReview:"},
		{"no reviewableStatus", map[string]any{"label": "x"}, "submissionReview.reviewableStatus:"},
		{"an unknown status", map[string]any{"reviewableStatus": []string{"Graded"}}, "submissionReview.reviewableStatus[0]:"},
		{"a relative url", map[string]any{"reviewableStatus": []string{"Submitted"}, "url": "/review"}, "submissionReview.url:"},
		{"a url on another origin", map[string]any{"reviewableStatus": []string{"Submitted"}, "url": "https://elsewhere.example/review"}, "submissionReview.url:"},
		{"a null custom value", map[string]any{"reviewableStatus": []string{"Submitted"}, "custom": map[string]any{"a": nil}}, "submissionReview.custom.a:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []struct{ method, path string }{{"POST", "/api/lineitems"}, {"PUT", itemPath(id)}} {
				res := rg.call(t, nil, call.method, call.path, ltikAuth(ltik), map[string]any{"label": "Essay", "scoreMaximum": 10, "submissionReview": tc.review})
				testhttp.WantRefusal(t, res, http.StatusBadRequest, "INVALID_PARAMETERS")
				if d := testhttp.Description(t, res); !strings.HasPrefix(d, tc.field) {
					t.Fatalf("%s: the description %q does not name %s", call.method, d, tc.field)
				}
			}
		})
	}
	unchanged()
	if sr, _ := rg.lms.LineItem(id)["submissionReview"].(map[string]any); sr["label"] != "See the essay" {
		t.Fatalf("a refused PUT changed the line item: %v", rg.lms.LineItem(id))
	}
}

// stringsOf reads a JSON array of strings; it fails on anything else (nil included).
func stringsOf(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return []string{"<not an array>"}
	}
	out := []string{}
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
