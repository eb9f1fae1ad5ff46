// Package launchhealth tells a registration how its launches go: a PlatformRegistration
// its tool-mode launches, a ToolRegistration its platform-mode requests (authorization,
// token, deep-linking response, service call). The web server records each success and
// refusal in memory (no API-server call on the request path), and a background loop on
// every replica writes status.launchHealth, only on change and only forward in time, and
// Events on refusals, one per step and code at most every ten minutes.
package launchhealth

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/writes"
)

// DefaultInterval is how often a replica writes what it saw.
const DefaultInterval = time.Minute

// DefaultEventInterval bounds the Events of a flood: one per code per replica per this.
const DefaultEventInterval = 10 * time.Minute

// ReasonLaunchRefused is the reason of the Events on refused launches.
const ReasonLaunchRefused = "LaunchRefused"

// ReasonTokenRequestRefused is the reason of the Events on a tool's refused token requests.
const ReasonTokenRequestRefused = "TokenRequestRefused"

// ReasonServiceCallRefused is the reason of the Events on a tool's refused calls to the
// services ltiop serves it (NRPS, AGS).
const ReasonServiceCallRefused = "ServiceCallRefused"

// Step is the request a refusal answered.
type Step string

// The steps of a refusal: tool mode's login and launch, and platform mode's four requests
// of a tool.
const (
	// StepLogin is tool mode's login: not signed, anyone can send one naming a registration.
	StepLogin       Step = "login"
	StepLaunch      Step = "launch"
	StepAuthorize   Step = "authorize"
	StepToken       Step = "token"
	StepDeepLinking Step = "deep_linking"
	StepService     Step = "service"
)

// maxSent bounds the refused value kept for an Event. The value comes from a signed
// id_token (a deployment id, at most 255 bytes by T-TOK-19): clipped all the same.
const maxSent = 128

// Options configure a Recorder.
type Options struct {
	Namespace string
	// Reader reads registrations (the manager's cache: no API-server call); Writer patches
	// their status.
	Reader client.Reader
	Writer client.StatusClient
	Events events.EventRecorder
	// Interval between flushes; zero is DefaultInterval.
	Interval time.Duration
	// EventInterval is the least time between two Events of one refusal code on one
	// registration from one replica; zero is DefaultEventInterval. Refusals in between
	// are counted into the next one.
	EventInterval time.Duration
}

// Recorder aggregates the launches of PlatformRegistrations on one replica.
type Recorder struct{ core }

// ToolRecorder aggregates the launches, token requests, deep-linking responses and
// service calls of ToolRegistrations (platform mode) on one replica.
type ToolRecorder struct{ core }

// core is what both Recorders are. Its memory is one small entry per registration that
// launched (keyed by the registration, never by user), plus one counter per distinct
// step and refusal code since the last Event: the codes are ltiop's fixed set, so a flood
// of refusals grows nothing.
type core struct {
	opts    Options
	kind    kind
	now     func() time.Time
	entries sync.Map // registration name → *entry
}

// kind is what a Recorder writes to: the registration type, where its launch health is,
// and the advice for a refusal code.
type kind struct {
	object func() client.Object
	health func(client.Object) *ltiv1.LaunchHealth
	hint   func(step Step, code, sent string, reg client.Object) string
}

var platforms = kind{
	object: func() client.Object { return &ltiv1.PlatformRegistration{} },
	health: func(o client.Object) *ltiv1.LaunchHealth { return o.(*ltiv1.PlatformRegistration).Status.LaunchHealth },
	hint: func(step Step, code, sent string, o client.Object) string {
		if step == StepLogin {
			return LoginHint(code, o.(*ltiv1.PlatformRegistration))
		}
		return Hint(code, sent, o.(*ltiv1.PlatformRegistration))
	},
}

var tools = kind{
	object: func() client.Object { return &ltiv1.ToolRegistration{} },
	health: func(o client.Object) *ltiv1.LaunchHealth { return o.(*ltiv1.ToolRegistration).Status.LaunchHealth },
	hint:   func(_ Step, code, _ string, _ client.Object) string { return ToolHint(code) },
}

type entry struct {
	uid        types.UID
	dirty      atomic.Bool
	lastLaunch atomic.Int64 // unix nanoseconds; 0: none seen

	mu      sync.Mutex
	refusal *ltiv1.LaunchRefusal      // the latest one seen by this replica
	counts  map[refusalKey]*codeCount // refusals not yet told in an Event
	evented map[refusalKey]time.Time  // when the last Event of each was made
}

type refusalKey struct {
	step Step
	code string
}

type codeCount struct {
	rule string
	n    int
	sent string // the refused value of the latest one, if it carried one
}

// New returns the Recorder of PlatformRegistrations; start its loop with Start (a manager
// Runnable).
func New(opts Options) *Recorder { return &Recorder{newCore(opts, platforms)} }

// NewTools returns the Recorder of ToolRegistrations; start its loop with Start.
func NewTools(opts Options) *ToolRecorder { return &ToolRecorder{newCore(opts, tools)} }

func newCore(opts Options, k kind) core {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.EventInterval <= 0 {
		opts.EventInterval = DefaultEventInterval
	}
	return core{opts: opts, kind: k, now: time.Now}
}

// Launched records a successful launch from p. Called on the launch path: no I/O.
func (r *Recorder) Launched(p *registry.Platform) { r.launched(p.ID, p.UID) }

// Refused records a launch from p refused with the stable code and conformance rule;
// sent is the refused value the Event may name (apierr.Error.Sent: only what a verified
// id_token said), or "". Called on the launch path: no I/O.
func (r *Recorder) Refused(p *registry.Platform, code, rule, sent string) {
	r.refused(p.ID, p.UID, StepLaunch, code, rule, sent)
}

// RefusedLogin records a login naming p refused with the stable code and conformance rule.
// A login is not signed: anyone can send one naming any registration, so nothing it sent
// is kept, and its Event says what a login request claimed, not what the LMS did. Called
// on the login path: no I/O.
func (r *Recorder) RefusedLogin(p *registry.Platform, code, rule string) {
	r.refused(p.ID, p.UID, StepLogin, code, rule, "")
}

// Launched records an authorization request of t that ltiop answered with a launch.
// Called on the request path: no I/O.
func (r *ToolRecorder) Launched(t *registry.Tool) { r.launched(t.ID, t.UID) }

// Refused records a request of t refused at step with the stable code and conformance
// rule. Called on the request path: no I/O.
func (r *ToolRecorder) Refused(t *registry.Tool, step Step, code, rule string) {
	r.refused(t.ID, t.UID, step, code, rule, "")
}

func (r *core) entry(name string, uid types.UID) *entry {
	if v, ok := r.entries.Load(name); ok {
		if e := v.(*entry); e.uid == uid {
			return e
		}
	}
	e := &entry{uid: uid}
	v, loaded := r.entries.LoadOrStore(name, e)
	if loaded && v.(*entry).uid == uid {
		return v.(*entry)
	}
	if loaded { // a re-created registration inherits nothing of the old one
		r.entries.Store(name, e)
	}
	return e
}

func (r *core) launched(name string, uid types.UID) {
	e := r.entry(name, uid)
	now := r.now().UnixNano()
	for {
		old := e.lastLaunch.Load()
		if old >= now || e.lastLaunch.CompareAndSwap(old, now) {
			break
		}
	}
	if !e.dirty.Load() {
		e.dirty.Store(true)
	}
}

func (r *core) refused(name string, uid types.UID, step Step, code, rule, sent string) {
	e := r.entry(name, uid)
	now := r.now()
	k := refusalKey{step: step, code: code}
	e.mu.Lock()
	if e.refusal == nil || !now.Before(e.refusal.Time.Time) {
		e.refusal = &ltiv1.LaunchRefusal{Code: code, Rule: rule}
		e.refusal.Time.Time = now
	}
	if e.counts == nil {
		e.counts = map[refusalKey]*codeCount{}
	}
	c := e.counts[k]
	if c == nil {
		c = &codeCount{rule: rule}
		e.counts[k] = c
	}
	c.n++
	if sent != "" && sent != c.sent {
		c.sent = clip(sent)
	}
	e.mu.Unlock()
	e.dirty.Store(true)
}

// clip keeps at most maxSent bytes of s, printable: it goes into an Event note.
func clip(s string) string {
	if len(s) > maxSent {
		s = s[:maxSent] + "…"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, strings.ToValidUTF8(s, "?"))
}

// NeedLeaderElection is false: every replica writes what it saw.
func (r *core) NeedLeaderElection() bool { return false }

// Start flushes every interval until ctx ends, then once more. The first flush comes at a
// random point of the first interval, so replicas started together do not write together.
func (r *core) Start(ctx context.Context) error {
	first := time.Duration(rand.Int64N(int64(r.opts.Interval))) //nolint:gosec // jitter, not a secret
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.Flush(final)
			cancel()
			return nil
		case <-timer.C:
			r.Flush(ctx)
			timer.Reset(r.opts.Interval)
		}
	}
}

// Flush writes what changed since the last flush: status.launchHealth where this replica
// saw something newer than the registration holds, and one Event per step and refusal code.
func (r *core) Flush(ctx context.Context) {
	r.entries.Range(func(k, v any) bool {
		name, e := k.(string), v.(*entry)
		if !e.dirty.Swap(false) {
			return true
		}
		if err := r.flush(ctx, name, e); err != nil {
			e.dirty.Store(true) // try again next time
			log.FromContext(ctx).WithName("launchhealth").Info("writing launch health", "platform", name, "error", err.Error())
		}
		return true
	})
}

func (r *core) flush(ctx context.Context, name string, e *entry) error {
	reg := r.kind.object()
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: name}, reg); err != nil {
		if apierrors.IsNotFound(err) {
			r.entries.CompareAndDelete(name, e)
			return nil
		}
		return err
	}
	if reg.GetUID() != e.uid {
		r.entries.CompareAndDelete(name, e)
		return nil
	}

	e.mu.Lock()
	var refusal *ltiv1.LaunchRefusal
	if e.refusal != nil {
		refusal = e.refusal.DeepCopy()
	}
	due := r.due(e)
	e.mu.Unlock()
	r.emit(reg, due)

	patch := newer(r.kind.health(reg), e.lastLaunch.Load(), refusal)
	if patch == nil {
		return nil // the registration already holds this or something newer
	}
	// The resourceVersion makes the write conditional: a replica whose cache is behind
	// another replica's newer value gets a conflict, not a step back in time.
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": reg.GetResourceVersion()},
		"status":   map[string]any{"launchHealth": patch},
	})
	if err != nil {
		return err
	}
	return writes.MergePatchStatus(ctx, r.opts.Writer, reg, body, writes.ManagerLaunchHealth)
}

// newer is the merge patch of status.launchHealth moving cur forward to what this replica
// saw, or nil when cur is as new. Times are compared at the second, as they are stored.
func newer(cur *ltiv1.LaunchHealth, lastLaunch int64, refusal *ltiv1.LaunchRefusal) map[string]any {
	if cur == nil {
		cur = &ltiv1.LaunchHealth{}
	}
	patch := map[string]any{}
	if lastLaunch != 0 {
		t := time.Unix(0, lastLaunch).UTC().Truncate(time.Second)
		if cur.LastLaunchTime == nil || t.After(cur.LastLaunchTime.Time) {
			patch["lastLaunchTime"] = t.Format(time.RFC3339)
		}
	}
	if refusal != nil {
		t := refusal.Time.UTC().Truncate(time.Second)
		if c := cur.LastRefusal; c == nil || t.After(c.Time.Time) || (t.Equal(c.Time.Time) && (c.Code != refusal.Code || c.Rule != refusal.Rule)) {
			var rule any // null removes a rule the previous refusal had
			if refusal.Rule != "" {
				rule = refusal.Rule
			}
			patch["lastRefusal"] = map[string]any{"time": t.Format(time.RFC3339), "code": refusal.Code, "rule": rule}
		}
	}
	if len(patch) == 0 {
		return nil
	}
	return patch
}

// due takes from e the counts of the step and codes whose Event may be made now; the
// others wait. e.mu is held.
func (r *core) due(e *entry) map[refusalKey]*codeCount {
	now := r.now()
	due := map[refusalKey]*codeCount{}
	for k, c := range e.counts {
		if last, ok := e.evented[k]; ok && now.Sub(last) < r.opts.EventInterval {
			continue
		}
		due[k] = c
		delete(e.counts, k)
		if e.evented == nil {
			e.evented = map[refusalKey]time.Time{}
		}
		e.evented[k] = now
	}
	return due
}

// emit makes one Event per step and refusal code seen since the last flush. The note says
// how many, the rule and what the administrator can do; it names no user.
func (r *core) emit(reg client.Object, counts map[refusalKey]*codeCount) {
	if r.opts.Events == nil || len(counts) == 0 {
		return
	}
	keys := make([]refusalKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].step != keys[j].step {
			return keys[i].step < keys[j].step
		}
		return keys[i].code < keys[j].code
	})
	for _, k := range keys {
		what := stepNames[k.step]
		r.opts.Events.Eventf(reg, nil, corev1.EventTypeWarning, what.reason, what.action, "%s", r.note(k, counts[k], reg))
	}
}

// note is the Event note of the refusals c of one step and code on reg.
func (r *core) note(k refusalKey, c *codeCount, reg client.Object) string {
	rule := c.rule
	if rule == "" {
		rule = "none"
	}
	return truncate(fmt.Sprintf("%d %s refused with %s (rule %s) since the last report. %s",
		c.n, stepNames[k.step].noun, k.code, rule, r.kind.hint(k.step, k.code, c.sent, reg)))
}

// stepNames are the Event reason, action and note noun of each step.
var stepNames = map[Step]struct{ reason, action, noun string }{
	StepLogin:       {ReasonLaunchRefused, "Login", "login request(s)"},
	StepLaunch:      {ReasonLaunchRefused, "Launch", "launch(es)"},
	StepAuthorize:   {ReasonLaunchRefused, "Authorize", "authorization request(s)"},
	StepDeepLinking: {ReasonLaunchRefused, "DeepLinkingReturn", "deep-linking response(s)"},
	StepToken:       {ReasonTokenRequestRefused, "Token", "token request(s)"},
	StepService:     {ReasonServiceCallRefused, "ServiceCall", "service call(s)"},
}

// truncate keeps an Event note under the API server's 1 KiB limit.
func truncate(s string) string {
	if len(s) <= 1000 {
		return s
	}
	return strings.ToValidUTF8(s[:1000], "")
}
