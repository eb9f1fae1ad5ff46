package lmssim_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// appendPath inserts a path ending before the query, as a tool must (T-AGS-01).
func appendPath(u, ending string) string {
	path, query, _ := strings.Cut(u, "?")
	return path + ending + "?" + query
}

func dropQuery(u string) string {
	path, _, _ := strings.Cut(u, "?")
	return path
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func scoreBody(user string, at time.Time, given float64) string {
	b, _ := json.Marshal(map[string]any{
		"userId": user, "scoreGiven": given, "scoreMaximum": 10, "comment": "well done",
		"activityProgress": "Completed", "gradingProgress": "FullyGraded", "timestamp": ts(at),
	})
	return string(b)
}

func agsClaim(r *rig) map[string]any {
	return r.lms.Claims("user-1", "n", "https://tool.example/launch")["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"].(map[string]any)
}

func TestAGSNeedsTypeID(t *testing.T) {
	r := newRig(t)
	tok := r.token(t)
	claim := agsClaim(r)
	item := claim["lineitem"].(string)
	for _, c := range []struct {
		method, url, header, body string
		status                    int
	}{
		{"GET", dropQuery(claim["lineitems"].(string)), "Accept: " + lmssim.MediaLineItemContainer, "", 404},
		{"POST", dropQuery(claim["lineitems"].(string)), "Content-Type: " + lmssim.MediaLineItem, `{"label":"x","scoreMaximum":1}`, 404},
		{"GET", dropQuery(item), "Accept: " + lmssim.MediaLineItem, "", 404},
		{"PUT", dropQuery(item), "Content-Type: " + lmssim.MediaLineItem, `{"label":"x","scoreMaximum":1,"resourceLinkId":"resource-link-1"}`, 404},
		{"DELETE", dropQuery(item), "", "", 404},
		{"POST", dropQuery(item) + "/scores", "Content-Type: " + lmssim.MediaScore, scoreBody("user-2", time.Now(), 1), 404},
		{"GET", dropQuery(item) + "/results", "Accept: " + lmssim.MediaResultContainer, "", 404},
		{"POST", item + "/scores", "Content-Type: " + lmssim.MediaScore, scoreBody("user-2", time.Now(), 1), 405}, // appended after the query: the line item URL
		{"GET", strings.Replace(item, "type_id=4", "type_id=5", 1), "Accept: " + lmssim.MediaLineItem, "", 404},
	} {
		h := map[string]string{}
		if k, v, ok := strings.Cut(c.header, ": "); ok {
			h[k] = v
		}
		if res := call(t, c.method, c.url, tok, h, c.body); res.Status != c.status {
			t.Errorf("%s %s: HTTP %d, want %d", c.method, c.url, res.Status, c.status)
		}
	}
	if len(r.lms.LineItemIDs()) != 1 || len(r.lms.Scores(item)) != 0 {
		t.Error("a refused request changed something")
	}
}

func TestAGSLineItems(t *testing.T) {
	r := newRig(t)
	tok := r.token(t)
	container := agsClaim(r)["lineitems"].(string)
	accept := map[string]string{"Accept": lmssim.MediaLineItemContainer}
	ctype := map[string]string{"Content-Type": lmssim.MediaLineItem}

	res := call(t, "GET", container, tok, accept, "")
	if res.Status != 200 || res.Header.Get("Content-Type") != lmssim.MediaLineItemContainer {
		t.Fatalf("HTTP %d %s: %s", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
	items := res.list(t)
	if len(items) != 1 || items[0]["label"] != "Week 1 quiz" || items[0]["scoreMaximum"] != float64(100) ||
		items[0]["resourceLinkId"] != "resource-link-1" || items[0]["id"] != agsClaim(r)["lineitem"] {
		t.Errorf("seeded line items %v", items)
	}
	if res := call(t, "GET", container, tok, map[string]string{"Accept": "application/json"}, ""); res.Status != 406 {
		t.Errorf("Accept application/json: HTTP %d", res.Status)
	}

	// Creation.
	for _, c := range []struct {
		header map[string]string
		body   string
		status int
	}{
		{map[string]string{"Content-Type": "application/json"}, `{"label":"x","scoreMaximum":1}`, 415},
		{map[string]string{"Content-Type": lmssim.MediaLineItemContainer}, `{"label":"x","scoreMaximum":1}`, 415},
		{ctype, `{"scoreMaximum":1}`, 400},
		{ctype, `{"label":"  ","scoreMaximum":1}`, 400},
		{ctype, `{"label":"x"}`, 400},
		{ctype, `{"label":"x","scoreMaximum":0}`, 400},
		{ctype, `{"label":"x","scoreMaximum":-5}`, 400},
		{ctype, `{"label":"x","scoreMaximum":"10"}`, 400},
		{ctype, `{"label":"x","scoreMaximum":1,"startDateTime":"tomorrow"}`, 400},
		{ctype, `{"label":"x","scoreMaximum":1,"tag":7}`, 400},
		{ctype, `[{"label":"x","scoreMaximum":1}]`, 400},
		{ctype, `{"label":"x","scoreMaximum":1} {}`, 400},
		{ctype, `{"label":"x","scoreMaximum":1,"resourceLinkId":"no-such-link"}`, 404},
	} {
		if res := call(t, "POST", container, tok, c.header, c.body); res.Status != c.status {
			t.Errorf("POST %v %s: HTTP %d, want %d: %s", c.header, c.body, res.Status, c.status, res.Body)
		}
	}
	if n := len(r.lms.LineItemIDs()); n != 1 {
		t.Fatalf("%d line items after refused creations", n)
	}
	created := []map[string]any{}
	for i, body := range []string{
		`{"label":"Essay","scoreMaximum":20,"tag":"essay","resourceId":"r-1","resourceLinkId":"resource-link-1","startDateTime":"2025-01-01T00:00:00Z","id":"mine"}`,
		`{"label":"Lab","scoreMaximum":5.5,"tag":"lab","resourceId":"r-2","gradesReleased":true}`,
		`{"label":"Essay 2","scoreMaximum":20,"tag":"essay","resourceId":"r-3"}`,
	} {
		res := call(t, "POST", container, tok, ctype, body)
		if res.Status != 201 || res.Header.Get("Content-Type") != lmssim.MediaLineItem {
			t.Fatalf("create: HTTP %d: %s", res.Status, res.Body)
		}
		li := res.json(t)
		want := fmt.Sprintf("%s/mod/lti/services.php/2/lineitems/%d/lineitem?type_id=4", r.lms.Issuer, i+2)
		if li["id"] != want || res.Header.Get("Location") != want {
			t.Errorf("id %v, Location %q, want %s", li["id"], res.Header.Get("Location"), want)
		}
		created = append(created, li)
	}
	if ids := r.lms.LineItemIDs(); len(ids) != 4 || ids[1] != created[0]["id"] {
		t.Errorf("LineItemIDs %v", ids)
	}
	get := call(t, "GET", created[1]["id"].(string), tok, map[string]string{"Accept": lmssim.MediaLineItem}, "")
	if get.Status != 200 || get.json(t)["label"] != "Lab" || get.json(t)["gradesReleased"] != true {
		t.Errorf("GET: HTTP %d: %s", get.Status, get.Body)
	}
	if res := call(t, "GET", created[1]["id"].(string), tok, map[string]string{"Accept": lmssim.MediaLineItemContainer}, ""); res.Status != 406 {
		t.Errorf("GET item with the container media type: HTTP %d", res.Status)
	}

	// Filters and paging.
	labels := func(u string) []string {
		var out []string
		for u != "" {
			res := call(t, "GET", u, tok, accept, "")
			if res.Status != 200 {
				t.Fatalf("GET %s: HTTP %d: %s", u, res.Status, res.Body)
			}
			for _, li := range res.list(t) {
				out = append(out, li["label"].(string))
			}
			u = nextLink(t, res.Header)
		}
		return out
	}
	for query, want := range map[string][]string{
		"":                                  {"Week 1 quiz", "Essay", "Lab", "Essay 2"},
		"&limit=1":                          {"Week 1 quiz", "Essay", "Lab", "Essay 2"},
		"&limit=3":                          {"Week 1 quiz", "Essay", "Lab", "Essay 2"},
		"&tag=essay":                        {"Essay", "Essay 2"},
		"&tag=essay&limit=1":                {"Essay", "Essay 2"},
		"&resource_id=r-2":                  {"Lab"},
		"&resource_link_id=resource-link-1": {"Week 1 quiz", "Essay"},
		"&resource_link_id=resource-link-1&tag=essay": {"Essay"},
		"&tag=none": nil,
	} {
		if got := labels(container + query); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", query, got, want)
		}
	}
	res = call(t, "GET", container+"&tag=none", tok, accept, "")
	if res.Body != "[]\n" {
		t.Errorf("no match must be [], not %q", res.Body)
	}

	// Update.
	essay := created[0]["id"].(string)
	put := func(body map[string]any) int {
		b, _ := json.Marshal(body)
		return call(t, "PUT", essay, tok, ctype, string(b)).Status
	}
	update := map[string]any{"id": essay, "label": "Essay (revised)", "scoreMaximum": 25, "resourceLinkId": "resource-link-1", "tag": "essay"}
	if s := put(map[string]any{"id": essay + "x", "label": "a", "scoreMaximum": 1, "resourceLinkId": "resource-link-1"}); s != 400 {
		t.Errorf("PUT changing id: HTTP %d", s)
	}
	if s := put(map[string]any{"label": "a", "scoreMaximum": 1, "resourceLinkId": "resource-link-2"}); s != 400 {
		t.Errorf("PUT changing resourceLinkId: HTTP %d", s)
	}
	if s := put(map[string]any{"label": "a", "scoreMaximum": 1}); s != 400 {
		t.Errorf("PUT dropping resourceLinkId: HTTP %d", s)
	}
	if s := put(map[string]any{"id": essay, "scoreMaximum": 1, "resourceLinkId": "resource-link-1"}); s != 400 {
		t.Errorf("PUT without label: HTTP %d", s)
	}
	if res := call(t, "PUT", essay, tok, map[string]string{"Content-Type": "application/json"}, `{}`); res.Status != 415 {
		t.Errorf("PUT as application/json: HTTP %d", res.Status)
	}
	b, _ := json.Marshal(update)
	res = call(t, "PUT", essay, tok, ctype, string(b))
	if res.Status != 200 || res.json(t)["label"] != "Essay (revised)" || res.json(t)["id"] != essay {
		t.Errorf("PUT: HTTP %d: %s", res.Status, res.Body)
	}
	if li := r.lms.LineItem(essay); li["scoreMaximum"] != float64(25) || li["resourceId"] != nil {
		t.Errorf("PUT replaces the whole item: %v", li)
	}
	if res := call(t, "PUT", r.lms.Issuer+lmssim.LineItemsPath+"/99/lineitem?type_id=4", tok, ctype, string(b)); res.Status != 404 {
		t.Errorf("PUT unknown item: HTTP %d", res.Status)
	}

	// Deletion.
	if res := call(t, "DELETE", essay, tok, nil, ""); res.Status != 204 {
		t.Errorf("DELETE: HTTP %d", res.Status)
	}
	if res := call(t, "GET", essay, tok, map[string]string{"Accept": lmssim.MediaLineItem}, ""); res.Status != 404 {
		t.Errorf("GET deleted: HTTP %d", res.Status)
	}
	if res := call(t, "DELETE", essay, tok, nil, ""); res.Status != 404 {
		t.Errorf("DELETE again: HTTP %d", res.Status)
	}
	if slices.Contains(r.lms.LineItemIDs(), essay) {
		t.Error("deleted item still listed")
	}
}

func TestAGSScoresAndResults(t *testing.T) {
	r := newRig(t)
	tok := r.token(t)
	item := agsClaim(r)["lineitem"].(string)
	scores, results := appendPath(item, "/scores"), appendPath(item, "/results")
	ctype := map[string]string{"Content-Type": lmssim.MediaScore}
	t0 := time.Now().Add(-time.Hour)

	bad := func(mutate func(s map[string]any)) string {
		s := map[string]any{"userId": "user-2", "scoreGiven": 7, "scoreMaximum": 10,
			"activityProgress": "Completed", "gradingProgress": "FullyGraded", "timestamp": ts(t0)}
		mutate(s)
		b, _ := json.Marshal(s)
		return string(b)
	}
	for name, c := range map[string]struct {
		header map[string]string
		body   string
		status int
	}{
		"application/json":       {map[string]string{"Content-Type": "application/json"}, scoreBody("user-2", t0, 1), 415},
		"v2 score media type":    {map[string]string{"Content-Type": "application/vnd.ims.lis.v2.score+json"}, scoreBody("user-2", t0, 1), 415},
		"no Content-Type":        {nil, scoreBody("user-2", t0, 1), 415},
		"no userId":              {ctype, bad(func(s map[string]any) { delete(s, "userId") }), 400},
		"no timestamp":           {ctype, bad(func(s map[string]any) { delete(s, "timestamp") }), 400},
		"timestamp without ms":   {ctype, bad(func(s map[string]any) { s["timestamp"] = t0.UTC().Format(time.RFC3339) }), 400},
		"timestamp without zone": {ctype, bad(func(s map[string]any) { s["timestamp"] = t0.UTC().Format("2006-01-02T15:04:05.000") }), 400},
		"timestamp as a number":  {ctype, bad(func(s map[string]any) { s["timestamp"] = t0.Unix() }), 400},
		"no activityProgress":    {ctype, bad(func(s map[string]any) { delete(s, "activityProgress") }), 400},
		"bad activityProgress":   {ctype, bad(func(s map[string]any) { s["activityProgress"] = "Done" }), 400},
		"no gradingProgress":     {ctype, bad(func(s map[string]any) { delete(s, "gradingProgress") }), 400},
		"negative scoreGiven":    {ctype, bad(func(s map[string]any) { s["scoreGiven"] = -1 }), 400},
		"scoreGiven without max": {ctype, bad(func(s map[string]any) { delete(s, "scoreMaximum") }), 400},
		"scoreMaximum 0":         {ctype, bad(func(s map[string]any) { s["scoreMaximum"] = 0 }), 400},
		"scoreGiven as a string": {ctype, bad(func(s map[string]any) { s["scoreGiven"] = "7" }), 400},
		"submittedAt before start": {ctype, bad(func(s map[string]any) {
			s["submission"] = map[string]any{"startedAt": ts(t0), "submittedAt": ts(t0.Add(-time.Second))}
		}), 400},
		"not JSON":          {ctype, "userId=user-2", 400},
		"unknown line item": {ctype, scoreBody("user-2", t0, 1), 404},
	} {
		u := scores
		if name == "unknown line item" {
			u = r.lms.Issuer + lmssim.LineItemsPath + "/42/lineitem/scores?type_id=4"
		}
		if res := call(t, "POST", u, tok, c.header, c.body); res.Status != c.status {
			t.Errorf("%s: HTTP %d, want %d: %s", name, res.Status, c.status, res.Body)
		}
	}
	if n := len(r.lms.Scores(item)); n != 0 {
		t.Fatalf("%d scores stored after refusals", n)
	}

	// Accepted scores; timestamps strictly increase per (line item, user).
	post := func(body string) int { return call(t, "POST", scores, tok, ctype, body).Status }
	if s := post(scoreBody("user-2", t0, 7)); s != 204 {
		t.Fatalf("score: HTTP %d", s)
	}
	if s := post(scoreBody("user-2", t0, 8)); s != 400 {
		t.Errorf("same timestamp: HTTP %d, want 400", s)
	}
	if s := post(scoreBody("user-2", t0.Add(-time.Millisecond), 8)); s != 400 {
		t.Errorf("older timestamp: HTTP %d, want 400", s)
	}
	if s := post(scoreBody("user-3", t0, 3)); s != 204 {
		t.Errorf("another user at the same time: HTTP %d", s)
	}
	if s := post(scoreBody("user-2", t0.Add(time.Millisecond), 9)); s != 204 {
		t.Errorf("a later score: HTTP %d", s)
	}
	// A score without scoreGiven clears the result; offsets and nanoseconds are fine.
	cleared := `{"userId":"user-4","activityProgress":"Initialized","gradingProgress":"NotReady","timestamp":"2030-01-01T10:00:00.123456789+02:00"}`
	if s := post(cleared); s != 204 {
		t.Errorf("score without scoreGiven: HTTP %d", s)
	}
	got := r.lms.Scores(item)
	if len(got) != 4 || got[0]["scoreGiven"] != float64(7) || got[2]["scoreGiven"] != float64(9) {
		t.Errorf("Scores %v", got)
	}
	if s := r.lms.Scores("1"); len(s) != 4 {
		t.Errorf("Scores by number: %d", len(s))
	}

	// Results.
	accept := map[string]string{"Accept": lmssim.MediaResultContainer}
	if res := call(t, "GET", results, tok, map[string]string{"Accept": "application/json"}, ""); res.Status != 406 {
		t.Errorf("results with Accept application/json: HTTP %d", res.Status)
	}
	res := call(t, "GET", results, tok, accept, "")
	if res.Status != 200 || res.Header.Get("Content-Type") != lmssim.MediaResultContainer {
		t.Fatalf("results: HTTP %d: %s", res.Status, res.Body)
	}
	list := res.list(t)
	if len(list) != 3 {
		t.Fatalf("results %v", list)
	}
	first := list[0]
	if first["userId"] != "user-2" || first["scoreOf"] != item || first["resultScore"] != float64(90) ||
		first["resultMaximum"] != float64(100) || first["comment"] != "well done" || first["timestamp"] != ts(t0.Add(time.Millisecond)) {
		t.Errorf("result %v: the latest score, scaled to the line item's maximum", first)
	}
	if !strings.HasPrefix(first["id"].(string), r.lms.Issuer+lmssim.LineItemsPath+"/1/lineitem/results?type_id=4") {
		t.Errorf("result id %v", first["id"])
	}
	if _, ok := list[2]["resultScore"]; ok || list[2]["userId"] != "user-4" {
		t.Errorf("cleared result %v", list[2])
	}
	one := call(t, "GET", results+"&user_id=user-3", tok, accept, "").list(t)
	if len(one) != 1 || one[0]["resultScore"] != float64(30) {
		t.Errorf("user_id filter: %v", one)
	}
	if byID := call(t, "GET", first["id"].(string), tok, accept, "").list(t); len(byID) != 1 || byID[0]["userId"] != "user-2" {
		t.Errorf("GET result id: %v", byID)
	}
	var users []string
	for u := results + "&limit=1"; u != ""; {
		res := call(t, "GET", u, tok, accept, "")
		for _, x := range res.list(t) {
			users = append(users, x["userId"].(string))
		}
		u = nextLink(t, res.Header)
	}
	if !slices.Equal(users, []string{"user-2", "user-3", "user-4"}) {
		t.Errorf("paged results %v", users)
	}

	// Scopes: scores need score, results need result.readonly.
	scoreOnly := r.token(t, lmssim.ScopeScore)
	if res := call(t, "GET", results, scoreOnly, accept, ""); res.Status != 403 {
		t.Errorf("results with the score scope: HTTP %d", res.Status)
	}
	readOnly := r.token(t, lmssim.ScopeResultReadOnly, lmssim.ScopeLineItem)
	if res := call(t, "POST", scores, readOnly, ctype, scoreBody("user-5", t0, 1)); res.Status != 403 {
		t.Errorf("score without the score scope: HTTP %d", res.Status)
	}
}

func TestAGSConcurrentScores(t *testing.T) {
	r := newRig(t)
	item := agsClaim(r)["lineitem"].(string)
	scores := appendPath(item, "/scores")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			tok := r.token(t, lmssim.ScopeScore, lmssim.ScopeResultReadOnly)
			at := time.Now()
			for i := range 10 {
				body := scoreBody(fmt.Sprintf("user-%d", g), at.Add(time.Duration(i)*time.Millisecond), float64(i))
				if res := call(t, "POST", scores, tok, map[string]string{"Content-Type": lmssim.MediaScore}, body); res.Status != 204 {
					t.Errorf("HTTP %d: %s", res.Status, res.Body)
				}
			}
			call(t, "GET", appendPath(item, "/results"), tok, map[string]string{"Accept": lmssim.MediaResultContainer}, "")
		})
	}
	wg.Wait()
	if n := len(r.lms.Scores(item)); n != 80 {
		t.Errorf("%d scores", n)
	}
	if n := r.lms.TokenRequests(); n != 8 {
		t.Errorf("TokenRequests %d", n)
	}
}
