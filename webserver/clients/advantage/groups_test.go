package advantage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// groupsServer is a Course Groups service on Blackboard's URL shapes
// (/learn/api/v1/lti/courses/_4_1/groups and …/groupsets), paging with a case-sensitive
// cursor and answering only tokens that carry contextgroup.readonly.
type groupsServer struct {
	t        testing.TB
	srv      *httptest.Server
	ts       *tokenServer
	groups   []map[string]any // served as given (any shape a test wants)
	sets     []map[string]any
	members  map[string][]string // user id → group ids (the user_id filter)
	requests atomic.Int64
	// body, when set, is the raw body of every 200 (a platform's own shape).
	body         string
	nextOverride string // when set, the next link of every page

	mu   sync.Mutex
	uris []string
}

const (
	groupsPath    = "/learn/api/v1/lti/courses/_4_1/groups"
	groupSetsPath = "/learn/api/v1/lti/courses/_4_1/groupsets"
)

func newGroupsServer(t testing.TB, ts *tokenServer) *groupsServer {
	gs := &groupsServer{t: t, ts: ts, members: map[string][]string{}}
	for i := 1; i <= 7; i++ {
		gs.groups = append(gs.groups, map[string]any{
			"id": fmt.Sprintf("g-%d", i), "name": fmt.Sprintf("Lab %d", i), "tag": "lab", "set_ids": []any{"set-" + strconv.Itoa(1+i%2)},
		})
	}
	gs.sets = []map[string]any{{"id": "set-1", "name": "Odd labs"}, {"id": "set-2", "name": "Even labs", "tag": "even"}}
	gs.members["user-3"] = []string{"g-2", "g-5"}
	gs.srv = httptest.NewServer(gs)
	t.Cleanup(gs.srv.Close)
	return gs
}

// GroupsURL and SetsURL carry a query of their own, as Blackboard's service URLs may.
func (gs *groupsServer) GroupsURL() string { return gs.srv.URL + groupsPath + "?course=_4_1" }
func (gs *groupsServer) SetsURL() string   { return gs.srv.URL + groupSetsPath + "?course=_4_1" }

func (gs *groupsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gs.requests.Add(1)
	gs.mu.Lock()
	gs.uris = append(gs.uris, r.URL.RequestURI())
	gs.mu.Unlock()
	var list []map[string]any
	var media, key string
	switch r.URL.Path {
	case groupsPath:
		list, media, key = gs.groups, MediaTypeGroupContainer, "groups"
	case groupSetsPath:
		list, media, key = gs.sets, MediaTypeGroupSetContainer, "sets"
	default:
		http.Error(w, `{"message":"no such resource"}`, http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Accept"); got != media {
		gs.t.Errorf("Accept %q, want %q", got, media)
		http.Error(w, "wrong Accept", http.StatusNotAcceptable)
		return
	}
	if !gs.ts.valid(bearer(r), ltiwire.ScopeGroupReadOnly) {
		http.Error(w, `{"message":"Invalid access token"}`, http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	if q.Get("course") != "_4_1" {
		http.Error(w, `{"message":"the service URL's own query was lost"}`, http.StatusBadRequest)
		return
	}
	if u := q.Get("user_id"); u != "" {
		mine := gs.members[u]
		list = slices.DeleteFunc(slices.Clone(list), func(g map[string]any) bool { return !slices.Contains(mine, fmt.Sprint(g["id"])) })
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = len(list) + 1
	}
	from := 0
	if c := q.Get("Cursor"); c != "" {
		n, ok := strings.CutPrefix(c, "At")
		from, _ = strconv.Atoi(n)
		if !ok || from > len(list) {
			http.Error(w, `{"message":"bad cursor"}`, http.StatusBadRequest)
			return
		}
	}
	end := min(from+limit, len(list))
	next := ""
	if end < len(list) {
		next = gs.srv.URL + r.URL.Path + "?" + strings.Split(r.URL.RawQuery, "&Cursor=")[0] + "&Cursor=At" + strconv.Itoa(end)
	}
	if gs.nextOverride != "" {
		next = gs.nextOverride
	}
	if next != "" {
		w.Header().Add("Link", `<`+next+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", media)
	if gs.body != "" {
		_, _ = w.Write([]byte(gs.body))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": gs.srv.URL + r.URL.Path, key: list[from:end]})
}

func TestGroups(t *testing.T) {
	ctx := context.Background()

	t.Run("pages of groups follow the next link verbatim, with one token and the filters sent once", func(t *testing.T) {
		ts := newTokenServer(t)
		gs := newGroupsServer(t, ts)
		c := newTestClient(nil)
		var ids []string
		q := GroupsQuery{Limit: 3}
		pages := 0
		for {
			page, err := c.Groups(ctx, ts.cred(), gs.GroupsURL(), q)
			if err != nil {
				t.Fatalf("page %d: %v", pages+1, err)
			}
			pages++
			for _, g := range page.Groups {
				ids = append(ids, g.ID)
			}
			if page.Next == "" {
				break
			}
			if !strings.Contains(page.Next, "Cursor=At") {
				t.Fatalf("next %q is not the rel=next link (or was rewritten)", page.Next)
			}
			q = GroupsQuery{URL: page.Next, Limit: 99, UserID: "ignored"}
		}
		if pages != 3 || len(ids) != 7 || ids[0] != "g-1" || ids[6] != "g-7" {
			t.Fatalf("%d pages: %v", pages, ids)
		}
		if ts.requests.Load() != 1 {
			t.Fatalf("%d token requests for 3 pages", ts.requests.Load())
		}
		if got := ts.lastForm().Get("scope"); got != ltiwire.ScopeGroupReadOnly {
			t.Fatalf("scope %q", got)
		}
		gs.mu.Lock()
		defer gs.mu.Unlock()
		for i, u := range gs.uris {
			if strings.Count(u, "limit=3") != 1 || strings.Contains(u, "ignored") || strings.Contains(u, "99") {
				t.Fatalf("request %d: %s", i+1, u)
			}
		}
	})

	t.Run("the user_id filter is sent and a group keeps its set ids", func(t *testing.T) {
		ts := newTokenServer(t)
		gs := newGroupsServer(t, ts)
		page, err := newTestClient(nil).Groups(ctx, ts.cred(), gs.GroupsURL(), GroupsQuery{UserID: "user-3"})
		if err != nil {
			t.Fatal(err)
		}
		want := []Group{{ID: "g-2", Name: "Lab 2", Tag: "lab", SetIDs: []string{"set-1"}}, {ID: "g-5", Name: "Lab 5", Tag: "lab", SetIDs: []string{"set-2"}}}
		if fmt.Sprint(page.Groups) != fmt.Sprint(want) || page.Next != "" || page.ID == "" {
			t.Fatalf("got %+v", page)
		}
		if gs.uris[0] != groupsPath+"?course=_4_1&user_id=user-3" {
			t.Fatalf("request %s", gs.uris[0])
		}
		out, _ := json.Marshal(page.Groups[0])
		if string(out) != `{"id":"g-2","name":"Lab 2","tag":"lab","setIds":["set-1"]}` {
			t.Fatalf("JSON %s", out)
		}
	})

	t.Run("group sets page like groups", func(t *testing.T) {
		ts := newTokenServer(t)
		gs := newGroupsServer(t, ts)
		c := newTestClient(nil)
		page, err := c.GroupSets(ctx, ts.cred(), gs.SetsURL(), GroupSetsQuery{Limit: 1})
		if err != nil || len(page.Sets) != 1 || page.Sets[0] != (GroupSet{ID: "set-1", Name: "Odd labs"}) || page.Next == "" {
			t.Fatalf("first page %+v %v", page, err)
		}
		page, err = c.GroupSets(ctx, ts.cred(), gs.SetsURL(), GroupSetsQuery{URL: page.Next})
		if err != nil || len(page.Sets) != 1 || page.Sets[0] != (GroupSet{ID: "set-2", Name: "Even labs", Tag: "even"}) || page.Next != "" {
			t.Fatalf("second page %+v %v", page, err)
		}
	})

	t.Run("a next link on another host is refused and the token never goes there (T-NRPS-03 for groups)", func(t *testing.T) {
		ts := newTokenServer(t)
		gs := newGroupsServer(t, ts)
		evil := newCountingServer(t)
		gs.nextOverride = evil.srv.URL + groupsPath + "?course=_4_1&Cursor=At1"
		c := newTestClient(nil)
		if _, err := c.Groups(ctx, ts.cred(), gs.GroupsURL(), GroupsQuery{}); !errors.Is(err, ErrForeignURL) {
			t.Fatalf("foreign next in a response: %v", err)
		}
		if _, err := c.Groups(ctx, ts.cred(), gs.GroupsURL(), GroupsQuery{URL: evil.srv.URL + groupsPath}); !errors.Is(err, ErrForeignURL) {
			t.Fatalf("foreign q.URL: %v", err)
		}
		if _, err := c.GroupSets(ctx, ts.cred(), gs.SetsURL(), GroupSetsQuery{URL: evil.srv.URL + groupSetsPath}); !errors.Is(err, ErrForeignURL) {
			t.Fatalf("foreign sets q.URL: %v", err)
		}
		if evil.requests.Load() != 0 || evil.sawToken.Load() {
			t.Fatalf("the other host got %d requests", evil.requests.Load())
		}
	})

	t.Run("T-AGS-02 for groups: a launch without the groups scope reaches no endpoint", func(t *testing.T) {
		ts := newTokenServer(t)
		gs := newGroupsServer(t, ts)
		cred := ts.cred()
		cred.LaunchScopes = GrantedScopes([]string{ltiwire.ScopeScore}, true)
		_, err := newTestClient(nil).Groups(ctx, cred, gs.GroupsURL(), GroupsQuery{})
		if !errors.Is(err, ErrScopeNotGranted) || ts.requests.Load() != 0 || gs.requests.Load() != 0 {
			t.Fatalf("err %v, %d token and %d service requests", err, ts.requests.Load(), gs.requests.Load())
		}
		cred.LaunchScopes = GrantedScopes([]string{ltiwire.ScopeScore}, true, ltiwire.ScopeGroupReadOnly)
		if _, err := newTestClient(nil).Groups(ctx, cred, gs.GroupsURL(), GroupsQuery{}); err != nil {
			t.Fatal(err)
		}
		// T-CC-10: one token for every scope of the launch.
		if got := ts.lastForm().Get("scope"); got != strings.Join([]string{ltiwire.ScopeScore, ltiwire.ScopeGroupReadOnly, ltiwire.ScopeMembershipReadOnly}, " ") {
			t.Fatalf("scope %q", got)
		}
	})

	t.Run("T-CC-08 for groups: a token the platform granted without the groups scope is not used", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.grant = func([]string) (any, bool) { return ltiwire.ScopeMembershipReadOnly, true }
		gs := newGroupsServer(t, ts)
		cred := ts.cred()
		cred.LaunchScopes = GrantedScopes(nil, true, ltiwire.ScopeGroupReadOnly)
		_, err := newTestClient(nil).Groups(ctx, cred, gs.GroupsURL(), GroupsQuery{})
		if !errors.Is(err, ErrScopeNotGranted) || gs.requests.Load() != 0 {
			t.Fatalf("err %v, %d service requests", err, gs.requests.Load())
		}
	})

	t.Run("the platform's refusal and an unusable 200 are upstream errors", func(t *testing.T) {
		ts := newTokenServer(t)
		gs := newGroupsServer(t, ts)
		c := newTestClient(nil)
		_, err := c.Groups(ctx, ts.cred(), gs.srv.URL+"/learn/api/v1/lti/courses/_9_1/groups", GroupsQuery{})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 404 || ue.Op != "groups" || !strings.Contains(ue.Body, "no such resource") {
			t.Fatalf("err %#v", err)
		}
		gs.body = `{"groups":[{"id":{"a":1}}]}`
		if _, err := c.Groups(ctx, ts.cred(), gs.GroupsURL(), GroupsQuery{}); !errors.As(err, &ue) || ue.Status != 200 {
			t.Fatalf("an object id: %#v", err)
		}
		_, err = c.GroupSets(ctx, ts.cred(), newHTMLServer(t)+"/sets", GroupSetsQuery{})
		if !errors.As(err, &ue) || ue.Status != 200 || ue.Op != "group sets" {
			t.Fatalf("HTML: %#v", err)
		}
	})
}

// The shapes platforms send are mapped to one; garbage is refused.
func TestMapGroupsVariants(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []Group
	}{
		{"the spec's set_ids", `{"id":"https://lms/groups","groups":[{"id":"g1","name":"Red","tag":"lab","set_ids":["s1","s2"]}]}`,
			[]Group{{ID: "g1", Name: "Red", Tag: "lab", SetIDs: []string{"s1", "s2"}}}},
		{"Blackboard's single set_id, and a group outside any set",
			`{"id":"https://learn.blackboard.com/learn/api/v1/lti/courses/_4_1/groups","groups":[
			{"id":"44711f9f-64af-443a-bc3d-0abbfff73790","name":"Bob's Tuesday Group","set_id":"912cc53f","tag":"marking"},
			{"id":"89230b3-a341","name":"The cool kids group"}]}`,
			[]Group{{ID: "44711f9f-64af-443a-bc3d-0abbfff73790", Name: "Bob's Tuesday Group", Tag: "marking", SetIDs: []string{"912cc53f"}},
				{ID: "89230b3-a341", Name: "The cool kids group", SetIDs: []string{}}}},
		{"Moodle's numeric ids and set_id", `{"id":"https://moodle/groups","groups":[{"id":12,"name":"Group A","set_id":3}]}`,
			[]Group{{ID: "12", Name: "Group A", SetIDs: []string{"3"}}}},
		{"Sakai's container with user_id and no sets", "{\n \"id\" : \"https://sakai/imsblis/lti13/groupsservice/site-1\", \n \"user_id\" : \"u1\", \n \"groups\": [\n{\"name\":\"Section 1\",\"id\":\"a5b\",\"tag\":\"whatever\"}\n ] }\n",
			[]Group{{ID: "a5b", Name: "Section 1", Tag: "whatever", SetIDs: []string{}}}},
		{"set_ids and set_id together, merged once", `{"groups":[{"id":"g","name":"n","set_ids":["a",7,null,{"x":1}],"set_id":"a"}]}`,
			[]Group{{ID: "g", Name: "n", SetIDs: []string{"a", "7"}}}},
		{"a bare array", `[{"id":"g","name":"n","set_ids":"s"}]`, []Group{{ID: "g", Name: "n", SetIDs: []string{"s"}}}},
		{"names and tags of another type, groups without id", `{"groups":[{"id":"g","name":5,"tag":true},{"name":"no id"},null]}`,
			[]Group{{ID: "g", Name: "5", SetIDs: []string{}}}},
		{"null", `null`, []Group{}},
		{"no groups member", `{"id":"x"}`, []Group{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := MapGroups([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if page.Groups == nil || fmt.Sprintf("%#v", page.Groups) != fmt.Sprintf("%#v", tc.want) {
				t.Fatalf("got  %#v\nwant %#v", page.Groups, tc.want)
			}
			for _, g := range page.Groups {
				if g.SetIDs == nil {
					t.Fatalf("nil SetIDs in %+v", g)
				}
			}
		})
	}
	for _, bad := range []string{`<html>`, `"groups"`, `{"groups":"g1"}`, `{"groups":["g1"]}`, `{"groups":[{"id":["g"]}]}`, `{"groups":[`} {
		if _, err := MapGroups([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	sets, err := MapGroupSets([]byte(`{"id":"https://lms/sets","sets":[{"id":3,"name":"Grouping"},{"id":"s2","name":"Projects","tag":"p","groups":[{"id":"g"}]},{"name":"no id"}]}`))
	if err != nil || fmt.Sprint(sets.Sets) != fmt.Sprint([]GroupSet{{ID: "3", Name: "Grouping"}, {ID: "s2", Name: "Projects", Tag: "p"}}) || sets.ID != "https://lms/sets" {
		t.Fatalf("sets %+v %v", sets, err)
	}
	if sets, err := MapGroupSets([]byte(`null`)); err != nil || sets.Sets == nil {
		t.Fatalf("null: %+v %v", sets, err)
	}
	if _, err := MapGroupSets([]byte(`{"sets":[1]}`)); err == nil {
		t.Fatal("a set that is not an object accepted")
	}
}

// Whatever the input, the decoders accept only JSON and keep their promises: no nil slices,
// no entry without an id, no set id twice in a group.
func FuzzMapGroups(f *testing.F) {
	for _, s := range []string{`{"id":"x","groups":[{"id":"g","name":"n","tag":"t","set_ids":["a",7],"set_id":"a"}]}`,
		`[{"id":1,"set_id":2}]`, `{"sets":[{"id":"s","name":"n"}]}`, `null`, `{"groups":[null,{"name":"x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		page, err := MapGroups(raw)
		if err == nil {
			if !json.Valid(raw) {
				t.Fatalf("accepted invalid JSON %q", raw)
			}
			if page.Groups == nil {
				t.Fatal("nil Groups")
			}
			for _, g := range page.Groups {
				if g.ID == "" || g.SetIDs == nil || len(slices.Compact(slices.Sorted(slices.Values(g.SetIDs)))) != len(g.SetIDs) {
					t.Fatalf("%q: group %#v", raw, g)
				}
			}
		}
		sets, err := MapGroupSets(raw)
		if err == nil {
			if !json.Valid(raw) || sets.Sets == nil {
				t.Fatalf("%q: %#v", raw, sets)
			}
			for _, s := range sets.Sets {
				if s.ID == "" {
					t.Fatalf("%q: a set without id", raw)
				}
			}
		}
	})
}

func BenchmarkMapGroups(b *testing.B) {
	groups := make([]map[string]any, 200)
	for i := range groups {
		groups[i] = map[string]any{"id": fmt.Sprintf("group-%d", i), "name": fmt.Sprintf("Group %d", i), "tag": "lab", "set_ids": []string{"set-1"}}
	}
	body, _ := json.Marshal(map[string]any{"id": "https://lms.example/groups", "groups": groups})
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := MapGroups(body); err != nil {
			b.Fatal(err)
		}
	}
}
