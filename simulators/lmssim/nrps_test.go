package lmssim_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

type container struct {
	ID      string           `json:"id"`
	Context map[string]any   `json:"context"`
	Members []map[string]any `json:"members"`
}

// allMembers follows the next links from u and returns the user ids and the pages seen.
func allMembers(t *testing.T, u, token string) (ids []string, pages int) {
	t.Helper()
	seen := map[string]bool{}
	for u != "" {
		res := call(t, "GET", u, token, map[string]string{"Accept": lmssim.MediaMembershipContainer}, "")
		if res.Status != 200 {
			t.Fatalf("GET %s: HTTP %d: %s", u, res.Status, res.Body)
		}
		if ct := res.Header.Get("Content-Type"); ct != lmssim.MediaMembershipContainer {
			t.Errorf("Content-Type %q", ct)
		}
		var c container
		if err := json.Unmarshal([]byte(res.Body), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID != u {
			t.Errorf("container id %q, want the request URL %q", c.ID, u)
		}
		if c.Context["id"] != "course-42" || c.Context["label"] != "CS101" {
			t.Errorf("context %v", c.Context)
		}
		for _, m := range c.Members {
			id := m["user_id"].(string)
			if seen[id] {
				t.Errorf("%s listed twice", id)
			}
			seen[id] = true
			ids = append(ids, id)
			if _, ok := m["roles"].([]any); !ok {
				t.Errorf("%s: roles %v", id, m["roles"])
			}
		}
		pages++
		u = nextLink(t, res.Header)
		if pages > 2000 {
			t.Fatal("paging does not end")
		}
	}
	return ids, pages
}

func TestMembershipsPaging(t *testing.T) {
	r := newRig(t)
	tok := r.token(t, lmssim.ScopeNRPS)
	base := r.lms.Issuer + lmssim.MembershipsPath
	want := []string{}
	for _, m := range lmssim.DefaultMembers() {
		want = append(want, m.UserID)
	}
	if len(want) != 1000 {
		t.Fatalf("%d default members", len(want))
	}
	for _, c := range []struct {
		query string
		pages int
	}{{"", 10}, {"?limit=333", 4}, {"?limit=1000", 1}, {"?limit=5000", 1}, {"?limit=7", 143}} {
		ids, pages := allMembers(t, base+c.query, tok)
		if !slices.Equal(ids, want) {
			t.Errorf("%q: %d members, want every member exactly once, in order", c.query, len(ids))
		}
		if pages != c.pages {
			t.Errorf("%q: %d pages, want %d", c.query, pages, c.pages)
		}
	}
}

func TestMembershipsRefusals(t *testing.T) {
	r := newRig(t)
	tok := r.token(t, lmssim.ScopeNRPS)
	base := r.lms.Issuer + lmssim.MembershipsPath
	for _, accept := range []string{"", "application/json", "*/*", "application/vnd.ims.lti-nrps.v1.membershipcontainer+json"} {
		if res := call(t, "GET", base, tok, map[string]string{"Accept": accept}, ""); res.Status != 406 {
			t.Errorf("Accept %q: HTTP %d, want 406", accept, res.Status)
		}
	}
	if res := call(t, "GET", base, tok, map[string]string{"Accept": "application/json, " + lmssim.MediaMembershipContainer + ";q=0.9"}, ""); res.Status != 200 {
		t.Errorf("Accept listing the media type among others: HTTP %d", res.Status)
	}
	for _, limit := range []string{"0", "-1", "ten"} {
		if res := call(t, "GET", base+"?limit="+limit, tok, map[string]string{"Accept": lmssim.MediaMembershipContainer}, ""); res.Status != 400 {
			t.Errorf("limit=%s: HTTP %d, want 400", limit, res.Status)
		}
	}

	// The next URL must be followed verbatim.
	res := call(t, "GET", base+"?role=Learner&limit=10", tok, map[string]string{"Accept": lmssim.MediaMembershipContainer}, "")
	next := nextLink(t, res.Header)
	u, _ := url.Parse(next)
	if u.Query().Get("page") == "" || u.Query().Get("role") != "Learner" {
		t.Fatalf("next URL %q", next)
	}
	for name, change := range map[string]func(q url.Values){
		"filter dropped":  func(q url.Values) { q.Del("role") },
		"filter changed":  func(q url.Values) { q.Set("role", "Instructor") },
		"limit changed":   func(q url.Values) { q.Set("limit", "20") },
		"page forged":     func(q url.Values) { q.Set("page", "MjA.AAAAAAAAAAAAAAAA") },
		"page lowercased": func(q url.Values) { q.Set("page", strings.ToLower(q.Get("page"))) },
	} {
		q := u.Query()
		change(q)
		v := *u
		v.RawQuery = q.Encode()
		if res := call(t, "GET", v.String(), tok, map[string]string{"Accept": lmssim.MediaMembershipContainer}, ""); res.Status != 400 {
			t.Errorf("%s: HTTP %d, want 400", name, res.Status)
		}
	}
}

func TestMembershipsRoleFilter(t *testing.T) {
	r := newRig(t)
	tok := r.token(t, lmssim.ScopeNRPS)
	base := r.lms.Issuer + lmssim.MembershipsPath
	count := func(role string) []string {
		var out []string
		for _, m := range lmssim.DefaultMembers() {
			if slices.ContainsFunc(m.Roles, func(x string) bool { return lmssim.RoleURI(x) == role }) {
				out = append(out, m.UserID)
			}
		}
		return out
	}
	learners := count(lmssim.RoleLearner)
	if len(learners) == 0 || len(learners) == 1000 {
		t.Fatalf("%d learners", len(learners))
	}
	for _, q := range []string{"Learner", lmssim.RoleLearner} {
		ids, _ := allMembers(t, base+"?role="+url.QueryEscape(q), tok)
		if !slices.Equal(ids, learners) {
			t.Errorf("role=%s: %d members, want %d", q, len(ids), len(learners))
		}
	}
	instructors := count(lmssim.RoleInstructor)
	ids, _ := allMembers(t, base+"?role=Instructor", tok)
	if !slices.Equal(ids, instructors) || !slices.Contains(ids, "user-25") || !slices.Contains(ids, "user-5") {
		t.Errorf("role=Instructor: %v, want %v (short names and TAs included)", ids, instructors)
	}
	tas, _ := allMembers(t, base+"?role="+url.QueryEscape(lmssim.RoleTA), tok)
	if len(tas) != 20 || tas[0] != "user-5" {
		t.Errorf("TAs %v", tas)
	}
	if ids, _ := allMembers(t, base+"?role=Mentor", tok); len(ids) != 0 {
		t.Errorf("role=Mentor: %v", ids)
	}
}

func TestMembershipsDefaultRosterVariety(t *testing.T) {
	var short, inactive, noStatus, anonymous int
	for _, m := range lmssim.DefaultMembers() {
		if slices.Contains(m.Roles, "Learner") || slices.Contains(m.Roles, "Instructor") {
			short++
		}
		switch m.Status {
		case "Inactive":
			inactive++
		case "":
			noStatus++
		}
		if m.Name == "" && m.Email == "" {
			anonymous++
		}
	}
	if short == 0 || inactive == 0 || noStatus == 0 || anonymous == 0 {
		t.Errorf("short %d, inactive %d, no status %d, anonymous %d", short, inactive, noStatus, anonymous)
	}
	// DefaultMembers returns a copy.
	m := lmssim.DefaultMembers()
	m[0].Roles[0] = "changed"
	if lmssim.DefaultMembers()[0].Roles[0] == "changed" {
		t.Error("DefaultMembers shares its slices")
	}
}

func TestMembershipsResourceLink(t *testing.T) {
	r := newRig(t)
	tok := r.token(t, lmssim.ScopeNRPS)
	base := r.lms.Issuer + lmssim.MembershipsPath
	var want []string
	for _, m := range lmssim.DefaultMembers() {
		if slices.Contains(m.ResourceLinks, lmssim.ResourceLinkID) {
			want = append(want, m.UserID)
		}
	}
	ids, _ := allMembers(t, base+"?rlid="+lmssim.ResourceLinkID, tok)
	if !slices.Equal(ids, want) || len(ids) == 1000 {
		t.Errorf("rlid: %d members, want %d", len(ids), len(want))
	}
	ids, _ = allMembers(t, base+"?rlid="+lmssim.ResourceLinkID+"&role=Instructor&limit=3", tok)
	for _, id := range ids {
		if !slices.Contains(want, id) {
			t.Errorf("%s is not in the resource link", id)
		}
	}
	res := call(t, "GET", base+"?rlid=resource-link-404", tok, map[string]string{"Accept": lmssim.MediaMembershipContainer}, "")
	if res.Status != 404 {
		t.Errorf("unknown rlid: HTTP %d, want 404", res.Status)
	}
}

func TestMembershipsCustomRoster(t *testing.T) {
	r := newRig(t, func(l *lmssim.LMS) {
		l.Members = []lmssim.Member{
			{UserID: "a", Roles: []string{"Instructor"}, Name: "A"},
			{UserID: "b", Roles: []string{lmssim.RoleLearner}, ResourceLinks: []string{"link-2"}},
			{UserID: "c"},
		}
	})
	tok := r.token(t, lmssim.ScopeNRPS)
	res := call(t, "GET", r.lms.Issuer+lmssim.MembershipsPath, tok, map[string]string{"Accept": lmssim.MediaMembershipContainer}, "")
	var c container
	_ = json.Unmarshal([]byte(res.Body), &c)
	if len(c.Members) != 3 || c.Members[0]["name"] != "A" || c.Members[1]["name"] != nil {
		t.Errorf("members %v", c.Members)
	}
	if roles, ok := c.Members[2]["roles"].([]any); !ok || len(roles) != 0 {
		t.Errorf("a member without roles has roles [] not %v", c.Members[2]["roles"])
	}
	if _, ok := c.Members[1]["status"]; ok {
		t.Error("empty status must be absent")
	}
	ids, _ := allMembers(t, r.lms.Issuer+lmssim.MembershipsPath+"?rlid=link-2", tok)
	if !slices.Equal(ids, []string{"b"}) {
		t.Errorf("rlid=link-2: %v", ids)
	}
}
