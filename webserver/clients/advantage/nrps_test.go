package advantage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
)

const (
	roleLearner    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	roleInstructor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
)

// testMembers are n members: one instructor with full PII, then learners, some with
// short role names, no status, or no PII.
func testMembers(n int) []map[string]any {
	out := []map[string]any{{
		"user_id": "instructor-1", "roles": []any{roleInstructor}, "status": "Active",
		"name": "Ada Lovelace", "given_name": "Ada", "family_name": "Lovelace", "middle_name": "A",
		"email": "ada@example.edu", "lis_person_sourcedid": "sis-1", "picture": "https://example.edu/ada.png",
	}}
	for i := 1; i < n; i++ {
		m := map[string]any{"user_id": fmt.Sprintf("learner-%d", i), "roles": []any{roleLearner}}
		switch i % 3 {
		case 0:
			m["roles"] = []any{"Learner"} // short name (T-NRPS-05)
		case 1:
			m["status"] = "Inactive"
			m["name"] = fmt.Sprintf("Learner %d", i)
		}
		out = append(out, m)
	}
	return out
}

func TestNRPS(t *testing.T) {
	ctx := context.Background()

	t.Run("T-NRPS-01 Accept is the membership container media type", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(2))
		if _, err := newTestClient(nil).Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{}); err != nil {
			t.Fatal(err) // the fake fails the test on any other Accept
		}
		if ts.lastForm().Get("scope") != ltiwire.ScopeMembershipReadOnly {
			t.Fatalf("scope %q", ts.lastForm().Get("scope"))
		}
	})

	t.Run("T-NRPS-02 next links are followed verbatim and filters are not re-added", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(10))
		c := newTestClient(nil)
		cred := ts.cred()
		var users []string
		q := MembersQuery{Role: "Learner", Limit: 4}
		pages := 0
		for {
			page, err := c.Memberships(ctx, cred, ns.URL(), q)
			if err != nil {
				t.Fatalf("page %d: %v", pages+1, err)
			}
			pages++
			for _, m := range page.Members {
				users = append(users, m.UserID)
			}
			if page.Next == "" {
				break
			}
			if !strings.Contains(page.Next, "PageCursor=Cur") {
				t.Fatalf("next %q is not the rel=next link (or was lowercased)", page.Next)
			}
			q = MembersQuery{URL: page.Next, Role: "ignored", Limit: 99}
		}
		if pages != 3 || len(users) != 9 {
			t.Fatalf("%d pages, %d learners: %v", pages, len(users), users)
		}
		ns.mu.Lock()
		defer ns.mu.Unlock()
		for i, u := range ns.uris[1:] {
			if strings.Count(u, "role=") != 1 || strings.Contains(u, "ignored") || strings.Count(u, "limit=") != 1 {
				t.Fatalf("request %d re-applied filters: %s", i+2, u)
			}
		}
	})

	t.Run("T-NRPS-02 Link header parsing", func(t *testing.T) {
		h := http.Header{}
		h.Add("Link", `<https://lms.example/a?X=1,2>; rel="differences", <https://lms.example/Members?Page=2&Tok=AbC>; REL="Next"`)
		h.Add("Link", `<https://lms.example/first>; title="a;b,c"; rel="first prev", </Last?P=9>; rel=last`)
		l := parseLinks(h, "https://lms.example/api/Members?x=1")
		want := links{
			next:  "https://lms.example/Members?Page=2&Tok=AbC",
			prev:  "https://lms.example/first",
			first: "https://lms.example/first",
			last:  "https://lms.example/Last?P=9",
		}
		if l != want {
			t.Fatalf("got  %+v\nwant %+v", l, want)
		}
		for _, garbage := range []string{"", "nonsense", "<unterminated", `<x>; rel`, `; rel="next"`, `<a>;;; rel="next"`} {
			h := http.Header{"Link": {garbage}}
			_ = parseLinks(h, "https://lms.example/")
		}
		if l := parseLinks(http.Header{"Link": {`<https://x/n>;rel=NEXT`}}, ""); l.next != "https://x/n" {
			t.Fatalf("unquoted upper-case rel: %+v", l)
		}
	})

	t.Run("T-NRPS-03 a next link on another host is refused and the token never goes there", func(t *testing.T) {
		ts := newTokenServer(t)
		evil := newCountingServer(t)
		ns := newNRPSServer(t, ts, testMembers(3))
		ns.nextOverride = func(*http.Request) string { return evil.srv.URL + nrpsPath + "?placement_id=_553_1" }
		c := newTestClient(nil)
		_, err := c.Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{})
		if !errors.Is(err, ErrForeignURL) {
			t.Fatalf("foreign next in a response: %v", err)
		}
		// And a caller handing us such a URL.
		_, err = c.Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{URL: evil.srv.URL + nrpsPath + "?placement_id=_553_1"})
		if !errors.Is(err, ErrForeignURL) {
			t.Fatalf("foreign q.URL: %v", err)
		}
		if evil.requests.Load() != 0 || evil.sawToken.Load() {
			t.Fatalf("the other host got %d requests", evil.requests.Load())
		}
	})

	t.Run("T-NRPS-03 https memberships URL: an http next link on the same host is refused", func(t *testing.T) {
		ts := newTokenServer(t)
		c := newTestClient(nil)
		_, err := c.Memberships(ctx, ts.cred(), "https://lms.example/memberships", MembersQuery{URL: "http://lms.example/memberships?page=2"})
		if !errors.Is(err, ErrForeignURL) {
			t.Fatalf("err %v", err)
		}
		_, err = c.Memberships(ctx, ts.cred(), "https://lms.example/memberships", MembersQuery{URL: "https://lms.example:8443/memberships?page=2"})
		if !errors.Is(err, ErrForeignURL) {
			t.Fatalf("other port: %v", err)
		}
		if ts.requests.Load() != 0 {
			t.Fatal("a token was fetched for a refused URL")
		}
	})

	t.Run("T-NRPS-03 http memberships URL (self-hosted) pages over http on its host", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(5)) // httptest: http://127.0.0.1:port
		page, err := newTestClient(nil).Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{Limit: 2})
		if err != nil || !strings.HasPrefix(page.Next, "http://") {
			t.Fatalf("page %+v err %v", page, err)
		}
	})

	t.Run("T-NRPS-04 status defaults to Active", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(4))
		page, err := newTestClient(nil).Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"Active", "Inactive", "Active", "Active"}
		for i, m := range page.Members {
			if m.Status != want[i] {
				t.Errorf("member %d status %q, want %q", i, m.Status, want[i])
			}
		}
	})

	t.Run("T-NRPS-05 short role names are kept and filter by role passes the value as given", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(7))
		c := newTestClient(nil)
		page, err := c.Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{Role: roleInstructor})
		if err != nil || len(page.Members) != 1 || page.Members[0].UserID != "instructor-1" {
			t.Fatalf("by full URI: %+v %v", page, err)
		}
		page, err = c.Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{Role: "Learner"})
		if err != nil || len(page.Members) != 6 {
			t.Fatalf("by short name: %+v %v", page, err)
		}
		var short bool
		for _, m := range page.Members {
			short = short || (len(m.Roles) == 1 && m.Roles[0] == "Learner")
		}
		if !short {
			t.Fatal("short role names were rewritten")
		}
		ns.mu.Lock()
		defer ns.mu.Unlock()
		if ns.queries[0].Get("role") != roleInstructor || !strings.Contains(ns.uris[0], "role=http%3A%2F%2Fpurl.imsglobal.org") {
			t.Fatalf("role query %q", ns.uris[0])
		}
	})

	t.Run("T-NRPS-06 absent personal data is tolerated; present PII is mapped", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(3))
		page, err := newTestClient(nil).Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{})
		if err != nil {
			t.Fatal(err)
		}
		ada := page.Members[0]
		want := Member{UserID: "instructor-1", Roles: []string{roleInstructor}, Status: "Active", Email: "ada@example.edu",
			Name: "Ada Lovelace", GivenName: "Ada", FamilyName: "Lovelace", MiddleName: "A", LisPersonSourcedID: "sis-1",
			Picture: "https://example.edu/ada.png"}
		if fmt.Sprint(ada) != fmt.Sprint(want) {
			t.Fatalf("got  %+v\nwant %+v", ada, want)
		}
		if m := page.Members[2]; m.Name != "" || m.Email != "" || m.UserID != "learner-2" {
			t.Fatalf("no-PII member %+v", m)
		}
		if page.Context.ID == "" || page.Context.Title != "Test Course" || page.ID == "" {
			t.Fatalf("context %+v", page)
		}
		out, _ := json.Marshal(page.Members[2])
		if string(out) != `{"userId":"learner-2","roles":["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],"status":"Active"}` {
			t.Fatalf("JSON %s", out)
		}
	})

	t.Run("T-NRPS-07 rlid is sent and an unsupported rlid is an upstream error", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(4))
		c := newTestClient(nil)
		_, err := c.Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{ResourceLinkID: "rl-1"})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 400 || !strings.Contains(ue.Body, "rlid") || ue.Op != "memberships" {
			t.Fatalf("err %#v", err)
		}
		ns.rlidMembers = map[string][]string{"rl-1": {"learner-1"}}
		page, err := c.Memberships(ctx, ts.cred(), ns.URL(), MembersQuery{ResourceLinkID: "rl-1"})
		if err != nil || len(page.Members) != 1 || page.Members[0].UserID != "learner-1" {
			t.Fatalf("page %+v err %v", page, err)
		}
	})

	t.Run("query parameters are appended to the URL's own query", func(t *testing.T) {
		got := addQuery("https://lms/m?placement_id=_553_1#frag", "role", "Learner", "limit", "10", "rlid", "")
		if got != "https://lms/m?placement_id=_553_1&role=Learner&limit=10" {
			t.Fatal(got)
		}
		if got := addQuery("https://lms/m", "role", roleLearner); got != "https://lms/m?role=http%3A%2F%2Fpurl.imsglobal.org%2Fvocab%2Flis%2Fv2%2Fmembership%23Learner" {
			t.Fatal(got)
		}
		if got := addQuery("https://lms/m?", "limit", "5"); got != "https://lms/m?limit=5" {
			t.Fatal(got)
		}
		if got := addQuery("https://lms/m?a=1"); got != "https://lms/m?a=1" {
			t.Fatal(got)
		}
	})

	t.Run("numeric ids and a missing members array are tolerated", func(t *testing.T) {
		page, err := MapMembers([]byte(`{"id":7,"context":{"id":12345},"members":[{"user_id":42,"roles":null}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if page.ID != "7" || page.Context.ID != "12345" || page.Members[0].UserID != "42" || page.Members[0].Roles == nil {
			t.Fatalf("%+v", page)
		}
		page, err = MapMembers([]byte(`{"id":"x","context":{"id":"c"}}`))
		if err != nil || page.Members == nil || len(page.Members) != 0 {
			t.Fatalf("%+v %v", page, err)
		}
		if _, err := MapMembers([]byte(`{"members":[{"user_id":{"a":1}}]}`)); err == nil {
			t.Fatal("object user_id accepted")
		}
		if _, err := MapMembers([]byte(`<html>`)); err == nil {
			t.Fatal("HTML accepted")
		}
	})

	t.Run("a non-JSON 200 is an upstream error", func(t *testing.T) {
		ts := newTokenServer(t)
		srv := newHTMLServer(t)
		_, err := newTestClient(nil).Memberships(ctx, ts.cred(), srv+"/m", MembersQuery{})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 200 || ue.Body != "" {
			t.Fatalf("err %#v", err)
		}
	})
}
