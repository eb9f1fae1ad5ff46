package advantage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
)

func ptr[T any](v T) *T { return &v }

// agsSetup is a token endpoint, a Moodle-like AGS service and credentials for a launch
// that granted every AGS scope.
func agsSetup(t *testing.T) (*tokenServer, *agsServer, Credentials, *Client) {
	ts := newTokenServer(t)
	as := newAGSServer(t, ts)
	cred := ts.cred()
	cred.LaunchScopes = GrantedScopes([]string{ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly, ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore}, false)
	cred.ServiceURLs = []string{as.ContainerURL()}
	return ts, as, cred, newTestClient(nil)
}

func newHTMLServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>login</html>"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAppendPath(t *testing.T) {
	for _, tc := range []struct{ in, suffix, want string }{
		// T-AGS-01 / T-QUIRK-05: Moodle's id keeps its query after the appended path.
		{"https://moodle.example/mod/lti/services.php/2/lineitems/11/lineitem?type_id=4", "/scores",
			"https://moodle.example/mod/lti/services.php/2/lineitems/11/lineitem/scores?type_id=4"},
		{"https://moodle.example/mod/lti/services.php/2/lineitems/11/lineitem?type_id=4", "/results",
			"https://moodle.example/mod/lti/services.php/2/lineitems/11/lineitem/results?type_id=4"},
		{"https://canvas.example/api/lti/courses/1/line_items/7", "/scores", "https://canvas.example/api/lti/courses/1/line_items/7/scores"},
		{"https://lms.example/li/7/", "/scores", "https://lms.example/li/7/scores"},
		{"https://lms.example/li/7", "scores", "https://lms.example/li/7/scores"},
		{"https://lms.example/li/7?a=1&b=/x/y", "/results", "https://lms.example/li/7/results?a=1&b=/x/y"},
		{"https://lms.example/li/7?a=1#frag", "/scores", "https://lms.example/li/7/scores?a=1"},
		{"https://lms.example/li/A%2FB?Q=Mixed", "/scores", "https://lms.example/li/A%2FB/scores?Q=Mixed"},
		{"https://lms.example", "/scores", "https://lms.example/scores"},
		{"http://canvas.selfhosted.example/api/lti/courses/1/line_items/7", "/scores", "http://canvas.selfhosted.example/api/lti/courses/1/line_items/7/scores"},
		{"https://blackboard.example/learn/api/v1/lti/courses/_1_1/lineItems/_5_1?placement_id=_553_1", "/scores",
			"https://blackboard.example/learn/api/v1/lti/courses/_1_1/lineItems/_5_1/scores?placement_id=_553_1"},
	} {
		got, err := AppendPath(tc.in, tc.suffix)
		if err != nil || got != tc.want {
			t.Errorf("T-AGS-01 AppendPath(%q, %q) = %q, %v; want %q", tc.in, tc.suffix, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"", "/scores"}, {"/relative/li/7", "/scores"}, {"ftp://lms/li/7", "/scores"}, {"https://lms/li/7", ""}, {"https://lms/li/7", "/"}, {"://", "/x"}} {
		if got, err := AppendPath(bad[0], bad[1]); err == nil {
			t.Errorf("AppendPath(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}

func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		base, other string
		want        bool
	}{
		{"https://lms.example/a", "https://lms.example/b?c=d", true},
		{"https://LMS.example/a", "https://lms.EXAMPLE/b", true},
		{"https://lms.example/a", "https://lms.example:443/b", true},
		{"http://lms.example/a", "http://lms.example:80/b", true},
		{"http://lms.example:8080/a", "http://lms.example:8080/b", true},
		{"https://lms.example/a", "http://lms.example/b", false},
		{"http://lms.example/a", "https://lms.example/b", false},
		{"https://lms.example/a", "https://lms.example:8443/b", false},
		{"https://lms.example/a", "https://evil.example/b", false},
		{"https://lms.example/a", "https://lms.example.evil.example/b", false},
		{"https://lms.example/a", "https://sub.lms.example/b", false},
		{"https://lms.example/a", "https://lms.example@evil.example/b", false},
		{"https://lms.example/a", "https://user:pw@lms.example/b", false},
		{"https://lms.example/a", "/relative", false},
		{"https://lms.example/a", "javascript:alert(1)", false},
		{"https://lms.example/a", "", false},
		{"", "https://lms.example/a", false},
		{"https://[::1]:8443/a", "https://[::1]:8443/b", true},
	} {
		if got := SameHost(tc.base, tc.other); got != tc.want {
			t.Errorf("SameHost(%q, %q) = %v, want %v", tc.base, tc.other, got, tc.want)
		}
	}
}

func TestAGS(t *testing.T) {
	ctx := context.Background()

	t.Run("T-AGS-01 T-QUIRK-05 scores and results go to the Moodle id path with its query", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 10})
		if err := c.PostScore(ctx, cred, id, Score{UserID: "u1", ScoreGiven: ptr(7.0), ScoreMaximum: ptr(10.0), ActivityProgress: "Completed", GradingProgress: "FullyGraded"}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Results(ctx, cred, id, ResultsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		as.mu.Lock()
		defer as.mu.Unlock()
		if as.scores[0].query != "type_id=4" || as.scores[0].item != 11 {
			t.Fatalf("score went to item %d query %q", as.scores[0].item, as.scores[0].query)
		}
		if len(res.Scores) != 2 {
			t.Fatalf("results %+v", res)
		}
		last := as.methods[len(as.methods)-1]
		if last != "GET /mod/lti/services.php/2/lineitems/11/lineitem/results?type_id=4" {
			t.Fatalf("results request %q", last)
		}
	})

	t.Run("T-AGS-02 a scope the launch did not grant fails before any request", func(t *testing.T) {
		ts, as, cred, c := agsSetup(t)
		cred.LaunchScopes = []string{ltiwire.ScopeLineItemReadOnly, ltiwire.ScopeResultReadOnly}
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 10})
		checks := map[string]error{
			"score":  c.PostScore(ctx, cred, id, Score{UserID: "u", ActivityProgress: "Completed", GradingProgress: "FullyGraded"}),
			"delete": c.DeleteLineItem(ctx, cred, id),
		}
		_, checks["create"] = c.CreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "x", ScoreMaximum: 1})
		_, checks["update"] = c.UpdateLineItem(ctx, cred, id, LineItem{Label: "x", ScoreMaximum: 1})
		_, checks["find"] = c.FindOrCreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "x", ScoreMaximum: 1, Tag: "t"})
		_, checks["memberships"] = c.Memberships(ctx, cred, "https://lms.example/m", MembersQuery{})
		for name, err := range checks {
			if !errors.Is(err, ErrScopeNotGranted) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if ts.requests.Load() != 0 || as.requests.Load() != 0 {
			t.Fatalf("%d token, %d service requests", ts.requests.Load(), as.requests.Load())
		}
		// What was granted works, with the read-only scope.
		if _, err := c.GetLineItem(ctx, cred, id); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("T-AGS-03 score Content-Type is the v1 score media type, body per spec", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 100})
		s := Score{UserID: "5323497", ScoreGiven: ptr(83.0), ScoreMaximum: ptr(100.0), Comment: "This is exceptional work.",
			ActivityProgress: "Completed", GradingProgress: "FullyGraded", ScoringUserID: "4567890",
			Extensions: map[string]json.RawMessage{"https://canvas.instructure.com/lti/submission": json.RawMessage(`{"new_submission":true}`)}}
		if err := c.PostScore(ctx, cred, id, s); err != nil {
			t.Fatal(err)
		}
		as.mu.Lock()
		defer as.mu.Unlock()
		got := as.scores[0]
		if got.contentType != "application/vnd.ims.lis.v1.score+json" {
			t.Fatalf("Content-Type %q", got.contentType)
		}
		for k, want := range map[string]any{"userId": "5323497", "scoreGiven": 83.0, "scoreMaximum": 100.0, "activityProgress": "Completed",
			"gradingProgress": "FullyGraded", "scoringUserId": "4567890", "comment": "This is exceptional work."} {
			if got.body[k] != want {
				t.Errorf("%s = %#v, want %#v", k, got.body[k], want)
			}
		}
		if ext, _ := got.body["https://canvas.instructure.com/lti/submission"].(map[string]any); ext["new_submission"] != true {
			t.Errorf("extension %#v", got.body)
		}
	})

	t.Run("T-AGS-04 any 2xx answer to a score is success", func(t *testing.T) {
		for _, status := range []int{200, 201, 202, 204} {
			_, as, cred, c := agsSetup(t)
			as.scoreStatus = status
			id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 1})
			if err := c.PostScore(ctx, cred, id, Score{UserID: "u", ActivityProgress: "Completed", GradingProgress: "FullyGraded"}); err != nil {
				t.Errorf("HTTP %d: %v", status, err)
			}
		}
		_, as, cred, c := agsSetup(t)
		as.scoreStatus = http.StatusUnprocessableEntity
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 1})
		err := c.PostScore(ctx, cred, id, Score{UserID: "u", ActivityProgress: "Completed", GradingProgress: "FullyGraded"})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 422 || ue.Op != "score" {
			t.Fatalf("422: %#v", err)
		}
	})

	t.Run("T-AGS-05 timestamps: UTC, milliseconds, strictly increasing per line item and user", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		clock := newFakeClock()
		c.now = clock.Now
		as.ts.now = clock.Now
		a := as.add(map[string]any{"label": "A", "scoreMaximum": 1})
		b := as.add(map[string]any{"label": "B", "scoreMaximum": 1})
		post := func(id, user string) {
			t.Helper()
			if err := c.PostScore(ctx, cred, id, Score{UserID: user, ActivityProgress: "Completed", GradingProgress: "FullyGraded", Timestamp: "2001-01-01T00:00:00Z"}); err != nil {
				t.Fatal(err)
			}
		}
		// The clock does not move: same millisecond for every post.
		post(a, "u1")
		post(a, "u1")
		post(a, "u1")
		post(a, "u2")
		post(b, "u1")
		as.mu.Lock()
		var stamps []string
		for _, s := range as.scores {
			stamps = append(stamps, s.body["timestamp"].(string))
		}
		as.mu.Unlock()
		for _, ts := range stamps {
			p, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000Z") {
				t.Fatalf("timestamp %q: %v", ts, err)
			}
			if d := p.Sub(clock.Now()); d < -time.Millisecond || d > 10*time.Millisecond {
				t.Fatalf("timestamp %q is %v from now (the caller's timestamp must be replaced)", ts, d)
			}
		}
		if !(stamps[0] < stamps[1] && stamps[1] < stamps[2]) {
			t.Fatalf("not strictly increasing for one user: %v", stamps[:3])
		}
		if stamps[3] != stamps[0] || stamps[4] != stamps[0] {
			t.Fatalf("other (line item, user) pairs need not be bumped: %v", stamps)
		}
		// The clock going backwards a little does not break the order either.
		clock.Advance(-time.Second)
		post(a, "u1")
		as.mu.Lock()
		last := as.scores[len(as.scores)-1].body["timestamp"].(string)
		as.mu.Unlock()
		if !(last > stamps[2]) {
			t.Fatalf("after a clock step back: %q then %q", stamps[2], last)
		}
	})

	t.Run("T-AGS-05 the timestamp memory is bounded", func(t *testing.T) {
		s := stamper{last: map[string]int64{}}
		now := time.Now()
		for i := range maxStamps + 10 {
			s.next("li", strconv.Itoa(i), now.Add(-2*stampWindow))
		}
		if len(s.last) > maxStamps {
			t.Fatalf("%d entries", len(s.last))
		}
		s.next("li", "late", now)
		if len(s.last) > maxStamps {
			t.Fatalf("%d entries", len(s.last))
		}
		// Concurrent posts for one pair never share a timestamp.
		s = stamper{last: map[string]int64{}}
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				ts := s.next("li", "u", now)
				mu.Lock()
				defer mu.Unlock()
				if seen[ts] {
					t.Errorf("duplicate %s", ts)
				}
				seen[ts] = true
			})
		}
		wg.Wait()
	})

	t.Run("T-AGS-06 scoreMaximum <= 0 is refused before creating", func(t *testing.T) {
		ts, as, cred, c := agsSetup(t)
		for _, m := range []float64{0, -1} {
			_, err := c.CreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "Quiz", ScoreMaximum: m})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "scoreMaximum" {
				t.Fatalf("scoreMaximum %v: %v", m, err)
			}
		}
		if ts.requests.Load() != 0 || as.requests.Load() != 0 {
			t.Fatal("requests were sent")
		}
	})

	t.Run("T-AGS-07 a negative scoreGiven is refused before posting", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 1})
		err := c.PostScore(ctx, cred, id, Score{UserID: "u", ScoreGiven: ptr(-1.0), ScoreMaximum: ptr(1.0), ActivityProgress: "Completed", GradingProgress: "FullyGraded"})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "scoreGiven" {
			t.Fatalf("err %v", err)
		}
		if as.requests.Load() != 0 {
			t.Fatal("a request was sent")
		}
	})

	t.Run("T-AGS-08 find-or-create finds by tag/resourceId/resourceLinkId before creating", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		for i := range 5 {
			as.add(map[string]any{"label": "Other", "scoreMaximum": 1, "tag": "other", "resourceId": "r" + string(rune('0'+i))})
		}
		existing := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 10, "tag": "quiz", "resourceId": "q1", "resourceLinkId": "rl-1"})
		got, err := c.FindOrCreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "Quiz (copy)", ScoreMaximum: 10, Tag: "quiz", ResourceID: "q1"})
		if err != nil || got.ID != existing {
			t.Fatalf("found %+v, %v; want %s", got, err, existing)
		}
		created, err := c.FindOrCreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "New", ScoreMaximum: 5, Tag: "new"})
		if err != nil || created.ID == "" || created.ID == existing || created.Tag != "new" {
			t.Fatalf("created %+v, %v", created, err)
		}
		again, err := c.FindOrCreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "New", ScoreMaximum: 5, Tag: "new"})
		if err != nil || again.ID != created.ID {
			t.Fatalf("second find-or-create made a duplicate: %+v %v", again, err)
		}
		if _, err := c.FindOrCreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "x", ScoreMaximum: 1}); err == nil {
			t.Fatal("no key to find by: no error")
		}
	})

	t.Run("T-AGS-09 an http:// lineitems URL of a self-hosted LMS is used as given", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		if !strings.HasPrefix(as.ContainerURL(), "http://") {
			t.Fatal("the fake should be plain http")
		}
		created, err := c.CreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "Quiz", ScoreMaximum: 10})
		if err != nil || !strings.HasPrefix(created.ID, "http://") {
			t.Fatalf("%+v %v", created, err)
		}
		if err := c.PostScore(ctx, cred, created.ID, Score{UserID: "u", ActivityProgress: "Started", GradingProgress: "NotReady"}); err != nil {
			t.Fatal(err)
		}
		// but an https launch never lets an item id take the token to http.
		cred.ServiceURLs = []string{strings.Replace(as.ContainerURL(), "http://", "https://", 1)}
		if _, err := c.GetLineItem(ctx, cred, created.ID); !errors.Is(err, ErrForeignURL) {
			t.Fatalf("http item under an https launch: %v", err)
		}
	})

	t.Run("T-AGS-10 container paging with next/prev/first/last; filters; next used as is", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		for i := range 5 {
			as.add(map[string]any{"label": "L", "scoreMaximum": 1, "tag": "t", "resourceLinkId": "rl-1", "resourceId": "r" + string(rune('0'+i))})
		}
		as.add(map[string]any{"label": "X", "scoreMaximum": 1, "tag": "other"})
		page, err := c.LineItems(ctx, cred, as.ContainerURL(), LineItemsQuery{Tag: "t", ResourceLinkID: "rl-1", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.LineItems) != 2 || page.Next == "" || page.First == "" || page.Last == "" || page.Prev != "" {
			t.Fatalf("page 1 %+v", page)
		}
		var total = len(page.LineItems)
		for page.Next != "" {
			page, err = c.LineItems(ctx, cred, as.ContainerURL(), LineItemsQuery{URL: page.Next, Tag: "ignored"})
			if err != nil {
				t.Fatal(err)
			}
			if page.Prev == "" {
				t.Fatalf("no prev link on a later page: %+v", page)
			}
			total += len(page.LineItems)
		}
		if total != 5 {
			t.Fatalf("%d items over all pages, want 5", total)
		}
		as.mu.Lock()
		for _, m := range as.methods[1:] {
			if strings.Contains(m, "ignored") {
				t.Errorf("filters re-applied: %s", m)
			}
		}
		as.mu.Unlock()
		empty, err := c.LineItems(ctx, cred, as.ContainerURL(), LineItemsQuery{Tag: "none"})
		if err != nil || empty.LineItems == nil || len(empty.LineItems) != 0 {
			t.Fatalf("no match: %+v %v", empty, err)
		}
		evil := newCountingServer(t)
		if _, err := c.LineItems(ctx, cred, as.ContainerURL(), LineItemsQuery{URL: evil.srv.URL + agsBase + "?type_id=4"}); !errors.Is(err, ErrForeignURL) {
			t.Fatalf("foreign page URL: %v", err)
		}
		if evil.requests.Load() != 0 {
			t.Fatal("the token went to another host")
		}
	})

	t.Run("line item CRUD keeps extensions and the platform's id and resourceLinkId", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		created, err := c.CreateLineItem(ctx, cred, as.ContainerURL(), LineItem{
			ID: "https://evil.example/ignored", Label: "Essay", ScoreMaximum: 50, ResourceLinkID: "rl-9", ResourceID: "essay-1", Tag: "essay",
			StartDateTime: "2026-09-01T08:00:00Z", EndDateTime: "2026-09-30T23:59:59.999+02:00", GradesReleased: ptr(true),
			Extensions: map[string]json.RawMessage{"https://canvas.instructure.com/lti/submission_type": json.RawMessage(`{"type":"external_tool","external_tool_url":"https://tool/x"}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(created.ID, as.srv.URL) || created.ResourceLinkID != "rl-9" || created.GradesReleased == nil || !*created.GradesReleased {
			t.Fatalf("created %+v", created)
		}
		if string(created.Extensions["https://canvas.instructure.com/lti/submission_type"]) == "" {
			t.Fatalf("extension lost on create: %+v", created.Extensions)
		}
		got, err := c.GetLineItem(ctx, cred, created.ID)
		if err != nil || got.Label != "Essay" || got.EndDateTime != "2026-09-30T23:59:59.999+02:00" {
			t.Fatalf("get %+v %v", got, err)
		}
		// The integrator sends a new label and omits the extension and resourceLinkId,
		// and tries to move the item: none of that is lost or changed.
		updated, err := c.UpdateLineItem(ctx, cred, created.ID, LineItem{ID: "https://lms/other", Label: "Essay (final)", ScoreMaximum: 60, ResourceLinkID: "rl-other", Tag: "essay"})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Label != "Essay (final)" || updated.ScoreMaximum != 60 || updated.ID != created.ID || updated.ResourceLinkID != "rl-9" {
			t.Fatalf("updated %+v", updated)
		}
		as.mu.Lock()
		var n int
		for k := range as.items {
			n = k
		}
		as.mu.Unlock()
		stored := as.item(n)
		if string(stored["resourceLinkId"]) != `"rl-9"` || stored["https://canvas.instructure.com/lti/submission_type"] == nil {
			t.Fatalf("stored after PUT: %v", stored)
		}
		if err := c.DeleteLineItem(ctx, cred, created.ID); err != nil {
			t.Fatal(err)
		}
		_, err = c.GetLineItem(ctx, cred, created.ID)
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 404 {
			t.Fatalf("after delete: %v", err)
		}
	})

	t.Run("create answered 201 with only a Location", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		as.emptyCreate = true
		created, err := c.CreateLineItem(ctx, cred, as.ContainerURL(), LineItem{Label: "Quiz", ScoreMaximum: 10})
		if err != nil || created.ID != as.ItemURL(11) || created.Label != "Quiz" {
			t.Fatalf("%+v %v", created, err)
		}
	})

	t.Run("Canvas 401 on deleting its own line item ends as UpstreamError 401", func(t *testing.T) {
		ts, as, cred, c := agsSetup(t)
		as.deleteCode = http.StatusUnauthorized
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 1})
		err := c.DeleteLineItem(ctx, cred, id)
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 401 || ts.requests.Load() != 2 {
			t.Fatalf("err %v, %d token requests", err, ts.requests.Load())
		}
	})

	t.Run("item ids must be on a host of the launch's service URLs", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		evil := newCountingServer(t)
		foreign := evil.srv.URL + agsBase + "/11/lineitem?type_id=4"
		checks := map[string]error{
			"score":  c.PostScore(ctx, cred, foreign, Score{UserID: "u", ActivityProgress: "Completed", GradingProgress: "FullyGraded"}),
			"delete": c.DeleteLineItem(ctx, cred, foreign),
		}
		_, checks["get"] = c.GetLineItem(ctx, cred, foreign)
		_, checks["update"] = c.UpdateLineItem(ctx, cred, foreign, LineItem{Label: "x", ScoreMaximum: 1})
		_, checks["results"] = c.Results(ctx, cred, foreign, ResultsQuery{})
		_, checks["relative"] = c.GetLineItem(ctx, cred, "/mod/lti/services.php/2/lineitems/11/lineitem")
		noURLs := cred
		noURLs.ServiceURLs = nil
		_, checks["no service URLs"] = c.GetLineItem(ctx, noURLs, as.ItemURL(1))
		for name, err := range checks {
			if !errors.Is(err, ErrForeignURL) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if evil.requests.Load() != 0 || as.requests.Load() != 0 {
			t.Fatalf("requests sent: evil %d, lms %d", evil.requests.Load(), as.requests.Load())
		}
	})

	t.Run("results: user_id and limit filters, paging, numeric ids", func(t *testing.T) {
		_, as, cred, c := agsSetup(t)
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 100})
		page, err := c.Results(ctx, cred, id, ResultsQuery{UserID: "42"})
		if err != nil || len(page.Scores) != 1 || page.Scores[0].UserID != "42" || *page.Scores[0].ResultScore != 0.5 {
			t.Fatalf("%+v %v", page, err)
		}
		page, err = c.Results(ctx, cred, id, ResultsQuery{Limit: 1})
		if err != nil || len(page.Scores) != 1 || page.Next == "" || page.Scores[0].ScoreOf != id {
			t.Fatalf("%+v %v", page, err)
		}
		if _, err := c.Results(ctx, cred, id, ResultsQuery{URL: page.Next}); err != nil {
			t.Fatal(err)
		}
		as.mu.Lock()
		last := as.methods[len(as.methods)-1]
		as.mu.Unlock()
		if !strings.HasSuffix(last, "/lineitem/results?type_id=4&page=2") {
			t.Fatalf("next not used as is: %s", last)
		}
	})

	t.Run("error bodies are reduced to their JSON error fields", func(t *testing.T) {
		ts := newTokenServer(t)
		body := atomic.Value{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(body.Load().(string)))
		}))
		defer srv.Close()
		cred := ts.cred()
		cred.ServiceURLs = []string{srv.URL}
		for sent, want := range map[string]string{
			"x" + strings.Repeat("é", 5000): "",
			`{"error":"invalid_request","message":"` + strings.Repeat("é", 5000) + `","trace":"at x"}`: `{"error":"invalid_request","message":"` + strings.Repeat("é", 100) + `"}`,
		} {
			body.Store(sent)
			_, err := newTestClient(nil).GetLineItem(ctx, cred, srv.URL+"/li/1")
			var ue *UpstreamError
			if !errors.As(err, &ue) || ue.Status != 500 || ue.Body != want {
				t.Fatalf("err %v, body %q, want %q", err, ue.Body, want)
			}
			if strings.Contains(ue.Error(), "é") {
				t.Fatal("Error() carries the body")
			}
		}
	})

	t.Run("oversized AGS responses are refused", func(t *testing.T) {
		ts := newTokenServer(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`[{"label":"` + strings.Repeat("x", maxAGSBody) + `"}]`))
		}))
		defer srv.Close()
		_, err := newTestClient(nil).LineItems(ctx, ts.cred(), srv.URL+"/lineitems", LineItemsQuery{})
		var ue *UpstreamError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestLineItemJSON(t *testing.T) {
	in := `{"id":"https://lms/li/1","label":"Quiz","scoreMaximum":"10","resourceId":123,"tag":null,"startDateTime":null,` +
		`"gradesReleased":false,"submissionReview":{"reviewableStatus":["Submitted"]},` +
		`"https://canvas.instructure.com/lti/submission_type":{"type":"none"},"unknownPlainKey":1}`
	var li LineItem
	if err := json.Unmarshal([]byte(in), &li); err != nil {
		t.Fatal(err)
	}
	if li.ScoreMaximum != 10 || li.ResourceID != "123" || li.Tag != "" || li.GradesReleased == nil || *li.GradesReleased {
		t.Fatalf("%+v", li)
	}
	if len(li.Extensions) != 2 || li.Extensions["submissionReview"] == nil || li.Extensions["unknownPlainKey"] != nil {
		t.Fatalf("extensions %v", li.Extensions)
	}
	out, err := json.Marshal(li)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"https://lms/li/1","label":"Quiz","scoreMaximum":10,"resourceId":"123","gradesReleased":false,` +
		`"https://canvas.instructure.com/lti/submission_type":{"type":"none"},"submissionReview":{"reviewableStatus":["Submitted"]}}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	// An extension may not override a field; an invalid one is an error.
	li.Extensions["label"] = json.RawMessage(`"hijack"`)
	if out, _ := json.Marshal(&li); strings.Contains(string(out), "hijack") {
		t.Fatalf("extension overrode a field: %s", out)
	}
	li.Extensions = map[string]json.RawMessage{"https://x/y": json.RawMessage(`{bad`)}
	if _, err := json.Marshal(li); err == nil {
		t.Fatal("invalid extension JSON marshalled")
	}
	var bad LineItem
	if err := json.Unmarshal([]byte(`{"label":"x","scoreMaximum":"ten"}`), &bad); err == nil {
		t.Fatal("non-numeric scoreMaximum accepted")
	}
}

func TestScoreJSON(t *testing.T) {
	var s Score
	in := `{"userId":"u","scoreGiven":0,"scoreMaximum":1,"activityProgress":"Completed","gradingProgress":"FullyGraded",` +
		`"submission":{"startedAt":"2026-01-01T00:00:00Z"},"https://canvas.instructure.com/lti/submission":{"new_submission":false},"junk":1}`
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if s.ScoreGiven == nil || *s.ScoreGiven != 0 || s.Submission == nil || len(s.Extensions) != 1 {
		t.Fatalf("%+v", s)
	}
	out, _ := json.Marshal(s)
	want := `{"userId":"u","scoreGiven":0,"scoreMaximum":1,"activityProgress":"Completed","gradingProgress":"FullyGraded","timestamp":"",` +
		`"submission":{"startedAt":"2026-01-01T00:00:00Z"},"https://canvas.instructure.com/lti/submission":{"new_submission":false}}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	// No scoreGiven: the member is absent (the score is cleared), not null or 0.
	out, _ = json.Marshal(Score{UserID: "u", ActivityProgress: "Initialized", GradingProgress: "NotReady"})
	if strings.Contains(string(out), "scoreGiven") {
		t.Fatalf("%s", out)
	}
}

// ParseNumber is the one reading of numbers platforms write as strings (a line item's
// scoreMaximum here, the scores platform mode is sent).
func TestParseNumber(t *testing.T) {
	for in, want := range map[string]float64{`85`: 85, `"85.00000"`: 85, `" 8.5 "`: 8.5, `null`: 0, `1e2`: 100} {
		if got, err := ParseNumber([]byte(in)); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{`"ten"`, `""`, `true`, `{}`, `"1e400"`} {
		if got, err := ParseNumber([]byte(in)); err == nil {
			t.Errorf("%s: %v, want an error", in, got)
		}
	}
}
