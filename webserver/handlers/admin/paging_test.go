package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// put shows a registration in the registry, as the informer would.
func (h *harness) put(name, issuer, clientID string) *ltiv1.PlatformRegistration {
	pr := &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("uid-" + name), Generation: 1},
		Spec: ltiv1.PlatformRegistrationSpec{URL: ltiv1.EndpointURL(issuer), ClientID: clientID, Name: name,
			AuthenticationEndpoint: "https://lms.example/auth", AccesstokenEndpoint: "https://lms.example/token",
			AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://lms.example/jwks"}},
	}
	h.reg.Apply(pr)
	return pr
}

type listPage struct {
	Platforms []struct {
		ID string `json:"id"`
	} `json:"platforms"`
	Next string `json:"next"`
}

// page GETs target (a path, or a next URL as given) and checks the answer's shape: next
// and the Link header agree, and nothing but platforms and next is in the body.
func (h *harness) page(target string) listPage {
	h.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = h.api.URL + target
	}
	res := testhttp.Do(h.t, http.DefaultClient, testhttp.NewRequest(h.t, "GET", target, nil))
	if res.Status != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", target, res.Status, res.Body)
	}
	var p listPage
	if err := json.Unmarshal([]byte(res.Body), &p); err != nil {
		h.t.Fatal(err)
	}
	for key := range res.JSON(h.t) {
		if key != "platforms" && key != "next" {
			h.t.Fatalf("unexpected field %q in %s", key, res.Body)
		}
	}
	wantLink := ""
	if p.Next != "" {
		wantLink = "<" + p.Next + `>; rel="next"`
	}
	if got := res.Header.Get("Link"); got != wantLink {
		h.t.Fatalf("Link %q, want %q", got, wantLink)
	}
	return p
}

func (p listPage) ids() []string {
	out := make([]string, len(p.Platforms))
	for i, q := range p.Platforms {
		out[i] = q.ID
	}
	return out
}

// Without limit and cursor the answer is the whole list, exactly as before paging:
// {"platforms":[...]} and no Link header, however many registrations there are.
func TestListWithoutPagingIsUnchanged(t *testing.T) {
	h := newHarness(t)
	for i := range 1500 {
		h.put(fmt.Sprintf("lms-%04d", i), "https://lms.example", fmt.Sprint(i))
	}
	res := h.call("GET", "/api/platforms", nil)
	if res.Status != http.StatusOK || res.Header.Get("Link") != "" {
		t.Fatalf("%d, Link %q", res.Status, res.Header.Get("Link"))
	}
	want := `{"platforms":[{"id":"lms-0000","url":"https://lms.example","clientId":"0","name":"lms-0000",` +
		`"authenticationEndpoint":"https://lms.example/auth","accesstokenEndpoint":"https://lms.example/token",` +
		`"authConfig":{"key":"https://lms.example/jwks","method":"JWK_SET"},"publicKey":"","active":true},{"id":"lms-0001",`
	if !strings.HasPrefix(res.Body, want) || !strings.HasSuffix(res.Body, `"active":true}]}`) {
		t.Fatalf("body starts %.300s", res.Body)
	}
	if got := len(h.page("/api/platforms").Platforms); got != 1500 {
		t.Fatalf("%d platforms, want all 1500", got)
	}

	// The streamed body is byte for byte what httpapi.WriteJSON makes of the same list,
	// escaping included.
	odd := h.put("zz-odd", "https://lms.example/?a=1&b=<x>", "\u00e9t\u00e9 \"q\" \u2028")
	odd.Spec.Name = "<script>&amp;</script>"
	h.reg.Apply(odd)
	res = h.call("GET", "/api/platforms", nil)
	var decoded struct {
		Platforms []admin.Platform `json:"platforms"`
	}
	if err := json.Unmarshal([]byte(res.Body), &decoded); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	httpapi.WriteJSON(rec, http.StatusOK, decoded)
	if rec.Body.String() != res.Body {
		t.Fatalf("the streamed list differs from WriteJSON's; ends %q", res.Body[len(res.Body)-300:])
	}
	for _, name := range []string{"Content-Type", "X-Content-Type-Options", "Cache-Control"} {
		if got, want := res.Header.Get(name), rec.Header().Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// Paging with limit walks the list in ID order; next (also in Link) keeps the filters and
// the limit, and the last page has none.
func TestListPages(t *testing.T) {
	h := newHarness(t)
	var want []string
	for i := range 23 {
		name := fmt.Sprintf("lms-%02d", i)
		h.put(name, "https://lms.example", fmt.Sprint(i))
		want = append(want, name)
	}
	h.put("other", "https://other.example", "x")

	var got []string
	pages := 0
	for target := "/api/platforms?limit=5&url=" + url.QueryEscape("https://lms.example"); target != ""; pages++ {
		p := h.page(target)
		if len(p.Platforms) > 5 {
			t.Fatalf("page of %d for limit 5", len(p.Platforms))
		}
		if p.Next != "" {
			next, err := url.Parse(p.Next)
			if err != nil || next.Path != "/api/platforms" || next.Query().Get("limit") != "5" ||
				next.Query().Get("url") != "https://lms.example" || next.Query().Get("cursor") == "" {
				t.Fatalf("next %q", p.Next)
			}
			if strings.Contains(p.Next, "lms-") {
				t.Fatalf("the cursor shows what it holds: %q", p.Next)
			}
		}
		got = append(got, p.ids()...)
		target = p.Next
	}
	if !slices.Equal(got, want) || pages != 5 {
		t.Fatalf("%d pages, ids %v", pages, got)
	}
	// A limit the list fits in gives one page and no next; the alias pages too.
	if p := h.page("/api/platforms?limit=1000"); len(p.Platforms) != 24 || p.Next != "" {
		t.Fatalf("limit 1000: %d, next %q", len(p.Platforms), p.Next)
	}
	if p := h.page("/admin/platforms?limit=20"); !strings.HasPrefix(p.Next, h.api.URL+"/admin/platforms?") {
		t.Fatalf("alias next %q", p.Next)
	}
	// A cursor alone keeps the limit it was issued with; limit given again replaces it.
	first := h.page("/api/platforms?limit=3")
	cursor := mustQuery(t, first.Next).Get("cursor")
	if p := h.page("/api/platforms?cursor=" + url.QueryEscape(cursor)); !slices.Equal(p.ids(), want[3:6]) {
		t.Fatalf("cursor alone: %v", p.ids())
	}
	if p := h.page("/api/platforms?limit=1&cursor=" + url.QueryEscape(cursor)); !slices.Equal(p.ids(), want[3:4]) {
		t.Fatalf("cursor with limit 1: %v", p.ids())
	}
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// Registrations added and deleted between pages: every registration present throughout
// is seen exactly once, one deleted before its page comes is not seen, one added ahead of
// the cursor is, one added behind it is not (it sorts before what was already served).
func TestListPagesWhileRegistrationsChange(t *testing.T) {
	h := newHarness(t)
	regs := map[string]*ltiv1.PlatformRegistration{}
	for i := range 30 {
		name := fmt.Sprintf("lms-%02d", i*2) // even numbers: room to add between them
		regs[name] = h.put(name, "https://lms.example", name)
	}
	seen := map[string]int{}
	p := h.page("/api/platforms?limit=4")
	for _, id := range p.ids() {
		seen[id]++
	}
	// Served so far: lms-00..lms-06.
	h.reg.Forget(regs["lms-02"])                     // already served
	h.reg.Forget(regs["lms-20"])                     // not served yet
	h.put("lms-01", "https://lms.example", "lms-01") // behind the cursor
	h.put("lms-07", "https://lms.example", "lms-07") // just ahead of it
	h.put("lms-99", "https://lms.example", "lms-99") // at the end
	for p.Next != "" {
		p = h.page(p.Next)
		for _, id := range p.ids() {
			seen[id]++
		}
		// Change something on every page: rename-free updates must not disturb the order.
		h.put("lms-40", "https://lms.example", "lms-40-"+fmt.Sprint(len(seen)))
	}
	for name := range regs {
		if name == "lms-20" {
			continue
		}
		if seen[name] != 1 {
			t.Errorf("%s seen %d times, want once", name, seen[name])
		}
	}
	for name, want := range map[string]int{"lms-20": 0, "lms-01": 0, "lms-07": 1, "lms-99": 1} {
		if seen[name] != want {
			t.Errorf("%s seen %d times, want %d", name, seen[name], want)
		}
	}
}

// Every bad limit or cursor is 400 INVALID_PARAMETERS naming the parameter: forged,
// edited, of another purpose, of another list, or expired.
func TestListPagingRefusals(t *testing.T) {
	h := newHarness(t)
	for i := range 5 {
		h.put(fmt.Sprintf("lms-%d", i), "https://lms.example", fmt.Sprint(i))
	}
	first := h.page("/api/platforms?limit=2&clientId=1")
	if first.Next != "" {
		t.Fatalf("one match, yet next %q", first.Next)
	}
	good := mustQuery(t, h.page("/api/platforms?limit=2").Next).Get("cursor")

	// A cursor sealed by another keyring (another installation), and an ltik sealed by
	// this one: both well-formed tokens, neither a cursor of this list.
	otherKey, err := keyring.Sealing.NewKey(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sessions.NewKeyring([]keyring.SealingKey{otherKey})
	if err != nil {
		t.Fatal(err)
	}
	forged, err := other.Seal(sessions.PurposeListCursor, []byte(`{"a":"lms-0","l":2}`), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ltik, err := h.cursors.Seal(sessions.PurposeLTIK, []byte(`{"a":"lms-0","l":2}`), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A cursor of ours whose payload is not one (a zero limit).
	hollow, err := h.cursors.Seal(sessions.PurposeListCursor, []byte(`{"a":"lms-0","l":0}`), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	edited := []byte(good)
	edited[len(edited)-5] ^= 1

	for query, param := range map[string]string{
		"limit=0": "limit", "limit=1001": "limit", "limit=-1": "limit", "limit=ten": "limit", "limit=1.5": "limit",
		"limit=": "limit", "limit=2&limit=3": "limit", "limit=99999999999999999999": "limit",
		"cursor=": "cursor", "cursor=abc": "cursor", "cursor=" + url.QueryEscape(forged): "cursor",
		"cursor=" + url.QueryEscape(ltik): "cursor", "cursor=" + url.QueryEscape(string(edited)): "cursor",
		"cursor=" + url.QueryEscape(hollow):                                    "cursor",
		"cursor=" + url.QueryEscape(good) + "&cursor=" + url.QueryEscape(good): "cursor",
		"cursor=" + url.QueryEscape(good) + "&clientId=1":                      "cursor", // other filters
		"limit=2&cursor=" + url.QueryEscape(strings.Repeat("A", 70000)):        "cursor",
	} {
		res := h.call("GET", "/api/platforms?"+query, nil)
		desc := testhttp.WantError(t, res, http.StatusBadRequest, "INVALID_PARAMETERS")
		if !strings.HasPrefix(desc, param+": ") {
			t.Errorf("%.80s: description %q does not name %s", query, desc, param)
		}
	}
	if h.writes.Passed() != 0 {
		t.Fatal("a list wrote")
	}

	// The good cursor still works, and one that expires is refused as expired.
	if p := h.page("/api/platforms?cursor=" + url.QueryEscape(good)); !slices.Equal(p.ids(), []string{"lms-2", "lms-3"}) {
		t.Fatalf("good cursor: %v", p.ids())
	}
	short, err := h.cursors.Seal(sessions.PurposeListCursor, []byte(`{"a":"lms-0","l":2}`), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := h.call("GET", "/api/platforms?cursor="+url.QueryEscape(short), nil)
		if res.Status == http.StatusBadRequest {
			if desc := testhttp.WantError(t, res, 400, "INVALID_PARAMETERS"); !strings.Contains(desc, "expired") {
				t.Fatalf("expired cursor: %q", desc)
			}
			break
		}
		if res.Status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("a cursor sealed for one second: %d %s", res.Status, res.Body)
		}
		time.Sleep(100 * time.Millisecond) // polling: the cursor's expiry is the condition
	}
}
