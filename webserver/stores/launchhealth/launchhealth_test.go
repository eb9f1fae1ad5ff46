package launchhealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

func at(s int64) time.Time { return time.Unix(s, 0).UTC() }

// A replica never moves a field back in time: what it saw is written only when newer
// than what the registration holds (another replica may have written a later one).
func TestNewerOnlyMovesForward(t *testing.T) {
	held := &ltiv1.LaunchHealth{
		LastLaunchTime: &metav1.Time{Time: at(1000)},
		LastRefusal:    &ltiv1.LaunchRefusal{Time: metav1.Time{Time: at(1000)}, Code: "UNKNOWN_KID", Rule: "T-TOK-08"},
	}
	refusal := func(s int64, code, rule string) *ltiv1.LaunchRefusal {
		return &ltiv1.LaunchRefusal{Time: metav1.Time{Time: at(s)}, Code: code, Rule: rule}
	}
	if p := newer(held, at(999).UnixNano(), refusal(999, "AUDIENCE_MISMATCH", "T-TOK-12")); p != nil {
		t.Fatalf("older values patched: %v", p)
	}
	if p := newer(held, at(1000).UnixNano()+int64(500*time.Millisecond), refusal(1000, "UNKNOWN_KID", "T-TOK-08")); p != nil {
		t.Fatalf("the same values (to the second) patched: %v", p)
	}
	p := newer(held, at(1001).UnixNano(), nil)
	if len(p) != 1 || p["lastLaunchTime"] != "1970-01-01T00:16:41Z" {
		t.Fatalf("a newer launch: %v", p)
	}
	p = newer(held, 0, refusal(1001, "STATE_ALREADY_USED", ""))
	r, _ := p["lastRefusal"].(map[string]any)
	if len(p) != 1 || r["code"] != "STATE_ALREADY_USED" || r["rule"] != nil || r["time"] != "1970-01-01T00:16:41Z" {
		t.Fatalf("a newer refusal, whose null rule removes the old one: %v", p)
	}
	if p := newer(nil, at(5).UnixNano(), refusal(5, "X", "R")); len(p) != 2 {
		t.Fatalf("a first write: %v", p)
	}
}

// A flood grows nothing: one entry per registration, one counter per code.
func TestRecorderIsBoundedByRegistrationsAndCodes(t *testing.T) {
	r := New(Options{})
	p := &registry.Platform{ID: "lms", UID: types.UID("u1")}
	for i := range 10_000 {
		r.Refused(p, fmt.Sprintf("CODE_%d", i%3), "", "")
		r.Launched(p)
	}
	n := 0
	r.entries.Range(func(_, v any) bool {
		n++
		if c := len(v.(*entry).counts); c != 3 {
			t.Errorf("counters: %d, want 3", c)
		}
		return true
	})
	if n != 1 {
		t.Fatalf("entries: %d, want 1", n)
	}
	// A re-created registration (new UID) inherits nothing.
	r.Refused(&registry.Platform{ID: "lms", UID: types.UID("u2")}, "CODE_9", "", "")
	v, _ := r.entries.Load("lms")
	if e := v.(*entry); e.uid != "u2" || len(e.counts) != 1 || e.lastLaunch.Load() != 0 {
		t.Fatalf("re-created registration kept the old entry: %+v", e)
	}
}

// Events of one code are at most one per EventInterval; the refusals between are counted
// into the next.
func TestEventsAreThrottledPerCode(t *testing.T) {
	now := at(0)
	r := New(Options{EventInterval: 10 * time.Minute})
	r.now = func() time.Time { return now }
	a := refusalKey{step: StepLaunch, code: "A"}
	e := &entry{}
	e.counts = map[refusalKey]*codeCount{a: {n: 100}}
	if d := r.due(e); d[a] == nil || d[a].n != 100 {
		t.Fatalf("first: %v", d)
	}
	e.counts[a] = &codeCount{n: 5}
	now = now.Add(9 * time.Minute)
	if d := r.due(e); len(d) != 0 {
		t.Fatalf("within the interval: %v", d)
	}
	e.counts[a].n += 2
	now = now.Add(2 * time.Minute)
	if d := r.due(e); d[a] == nil || d[a].n != 7 {
		t.Fatalf("after the interval: %v", d)
	}
}

// The hooks the launch path calls. go test -run x -bench . ./webserver/stores/launchhealth/
func BenchmarkRefused(b *testing.B) {
	r := New(Options{})
	p := &registry.Platform{ID: "lms", UID: "u"}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Refused(p, "AUDIENCE_MISMATCH", "T-TOK-12", "")
		}
	})
}

func BenchmarkLaunched(b *testing.B) {
	r := New(Options{})
	ps := make([]*registry.Platform, 1000)
	for i := range ps {
		ps[i] = &registry.Platform{ID: fmt.Sprint("lms-", i), UID: types.UID(fmt.Sprint(i))}
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Launched(ps[i%len(ps)])
			i++
		}
	})
}

// T-TOK-19: the UNKNOWN_DEPLOYMENT hint of a launch names the deployment the LMS sent (in
// the id_token, whose signature verified) and the ones registered, quoted, so the
// administrator sees a stray space or a wrong id.
func TestUnknownDeploymentHintNamesSentAndRegistered(t *testing.T) {
	reg := &ltiv1.PlatformRegistration{Spec: ltiv1.PlatformRegistrationSpec{DeploymentIDs: []string{"1", "2", "3", "4", "5", "6"}}}
	h := Hint("UNKNOWN_DEPLOYMENT", "7 ", reg)
	for _, want := range []string{`The LMS sent "7 ".`, `Registered: "1", "2", "3", "4", "5", ….`} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	if h := Hint("AUDIENCE_MISMATCH", "7", reg); strings.Contains(h, `"7"`) {
		t.Errorf("another code's hint names the sent value: %q", h)
	}
}

// T-LOGIN-04, T-LOGIN-05 (issue #34): a login is not signed, anyone can send one naming a
// registration. Its refusal keeps the code and rule, and its Event says what a login
// request claimed, never that the LMS sent it; it has no value to quote.
func TestLoginRefusalIsWordedAsAClaim(t *testing.T) {
	r := New(Options{})
	p := &registry.Platform{ID: "lms", UID: "u"}
	reg := &ltiv1.PlatformRegistration{Spec: ltiv1.PlatformRegistrationSpec{DeploymentIDs: []string{"1", "2"}}}
	r.RefusedLogin(p, "UNKNOWN_DEPLOYMENT", "T-LOGIN-04")
	r.RefusedLogin(p, "UNKNOWN_DEPLOYMENT", "T-LOGIN-04")
	r.RefusedLogin(p, "INVALID_TARGET_LINK_URI", "T-LOGIN-05")
	r.Refused(p, "UNKNOWN_DEPLOYMENT", "T-TOK-19", "3")

	v, _ := r.entries.Load("lms")
	e := v.(*entry)
	if e.refusal.Code != "UNKNOWN_DEPLOYMENT" || e.refusal.Rule != "T-TOK-19" {
		t.Fatalf("last refusal %+v", e.refusal)
	}
	login := refusalKey{StepLogin, "UNKNOWN_DEPLOYMENT"}
	note := r.note(login, e.counts[login], reg)
	if want := `2 login request(s) refused with UNKNOWN_DEPLOYMENT (rule T-LOGIN-04) since the last report. A login request named a deployment`; !strings.HasPrefix(note, want) {
		t.Errorf("note %q, want prefix %q", note, want)
	}
	if !strings.HasSuffix(note, `Registered: "1", "2".`) || strings.Contains(note, "The LMS sent") {
		t.Errorf("note %q", note)
	}
	target := refusalKey{StepLogin, "INVALID_TARGET_LINK_URI"}
	if note := r.note(target, e.counts[target], reg); !strings.Contains(note, "A login request named a target_link_uri") || strings.Contains(note, "The LMS's") {
		t.Errorf("note %q", note)
	}
	launch := refusalKey{StepLaunch, "UNKNOWN_DEPLOYMENT"}
	if note := r.note(launch, e.counts[launch], reg); !strings.HasPrefix(note, "1 launch(es) refused with UNKNOWN_DEPLOYMENT (rule T-TOK-19)") ||
		!strings.Contains(note, `The LMS sent "3". Registered: "1", "2".`) {
		t.Errorf("the verified launch's note %q", note)
	}
	if h := LoginHint("SOME_FUTURE_CODE", reg); strings.Contains(h, "LMS") {
		t.Errorf("a login code without a hint of its own: %q", h)
	}
}

// A refused value goes into an Event note: it is clipped and its control characters
// replaced, whatever the id_token said.
func TestSentValueIsClippedAndPrintable(t *testing.T) {
	r := New(Options{})
	p := &registry.Platform{ID: "lms", UID: "u"}
	r.Refused(p, "UNKNOWN_DEPLOYMENT", "T-TOK-19", "dep\r\nX-Injected: 1"+strings.Repeat("d", 500)+"\xff")
	v, _ := r.entries.Load("lms")
	c := v.(*entry).counts[refusalKey{StepLaunch, "UNKNOWN_DEPLOYMENT"}]
	if strings.ContainsAny(c.sent, "\r\n") || len(c.sent) > maxSent+len("…") || !strings.HasPrefix(c.sent, "dep??X-Injected") {
		t.Fatalf("sent kept as %q", c.sent)
	}
}

// Platform mode: one counter per step and code, so the token endpoint's refusals and the
// authorization endpoint's of the same code make separate Events.
func TestToolRecorderCountsPerStepAndCode(t *testing.T) {
	r := NewTools(Options{})
	tool := &registry.Tool{ID: "quiz", UID: "u"}
	for range 1000 {
		r.Refused(tool, StepToken, "UNKNOWN_KID", "P-TOK-08")
		r.Refused(tool, StepDeepLinking, "UNKNOWN_KID", "P-DLR-01")
	}
	r.Launched(tool)
	v, _ := r.entries.Load("quiz")
	e := v.(*entry)
	if len(e.counts) != 2 || e.counts[refusalKey{StepToken, "UNKNOWN_KID"}].n != 1000 || e.lastLaunch.Load() == 0 {
		t.Fatalf("counts %v, last launch %d", e.counts, e.lastLaunch.Load())
	}
	if e.refusal.Rule != "P-DLR-01" {
		t.Fatalf("last refusal: %+v", e.refusal)
	}
	if h := ToolHint("UNKNOWN_KID"); !strings.Contains(h, "spec.authConfig") {
		t.Fatalf("tool hint: %q", h)
	}
}
