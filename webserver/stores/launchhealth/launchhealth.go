// Package launchhealth tells a PlatformRegistration how its launches go: the web server
// records each successful and refused launch in memory (no API-server call on the launch
// path), and a background loop on every replica writes status.launchHealth, only on change
// and only forward in time, and Events on refusals, one per code at most every ten minutes.
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

// Recorder aggregates launch outcomes per registration on one replica. Its memory is one
// small entry per registration that launched (keyed by the registration, never by user),
// plus one counter per distinct refusal code since the last flush: the codes are ltiop's
// fixed set, so a flood of refusals grows nothing.
type Recorder struct {
	opts    Options
	now     func() time.Time
	entries sync.Map // registration name → *entry
}

type entry struct {
	uid        types.UID
	dirty      atomic.Bool
	lastLaunch atomic.Int64 // unix nanoseconds; 0: none seen

	mu      sync.Mutex
	refusal *ltiv1.LaunchRefusal  // the latest one seen by this replica
	counts  map[string]*codeCount // refusals not yet told in an Event, by code
	evented map[string]time.Time  // when the last Event of each code was made
}

type codeCount struct {
	rule string
	n    int
}

// New returns a Recorder; start its loop with Start (a manager Runnable).
func New(opts Options) *Recorder {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.EventInterval <= 0 {
		opts.EventInterval = DefaultEventInterval
	}
	return &Recorder{opts: opts, now: time.Now}
}

func (r *Recorder) entry(p *registry.Platform) *entry {
	if v, ok := r.entries.Load(p.ID); ok {
		if e := v.(*entry); e.uid == p.UID {
			return e
		}
	}
	e := &entry{uid: p.UID}
	v, loaded := r.entries.LoadOrStore(p.ID, e)
	if loaded && v.(*entry).uid == p.UID {
		return v.(*entry)
	}
	if loaded { // a re-created registration inherits nothing of the old one
		r.entries.Store(p.ID, e)
	}
	return e
}

// Launched records a successful launch from p. Called on the launch path: no I/O.
func (r *Recorder) Launched(p *registry.Platform) {
	e := r.entry(p)
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

// Refused records a launch from p refused with the stable code and conformance rule.
// Called on the launch path: no I/O.
func (r *Recorder) Refused(p *registry.Platform, code, rule string) {
	e := r.entry(p)
	now := r.now()
	e.mu.Lock()
	if e.refusal == nil || !now.Before(e.refusal.Time.Time) {
		e.refusal = &ltiv1.LaunchRefusal{Code: code, Rule: rule}
		e.refusal.Time.Time = now
	}
	if e.counts == nil {
		e.counts = map[string]*codeCount{}
	}
	c := e.counts[code]
	if c == nil {
		c = &codeCount{rule: rule}
		e.counts[code] = c
	}
	c.n++
	e.mu.Unlock()
	e.dirty.Store(true)
}

// NeedLeaderElection is false: every replica writes what it saw.
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start flushes every interval until ctx ends, then once more. The first flush comes at a
// random point of the first interval, so replicas started together do not write together.
func (r *Recorder) Start(ctx context.Context) error {
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
// saw something newer than the registration holds, and one Event per refusal code.
func (r *Recorder) Flush(ctx context.Context) {
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

func (r *Recorder) flush(ctx context.Context, name string, e *entry) error {
	reg := &ltiv1.PlatformRegistration{}
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: name}, reg); err != nil {
		if apierrors.IsNotFound(err) {
			r.entries.CompareAndDelete(name, e)
			return nil
		}
		return err
	}
	if reg.UID != e.uid {
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

	patch := newer(reg.Status.LaunchHealth, e.lastLaunch.Load(), refusal)
	if patch == nil {
		return nil // the registration already holds this or something newer
	}
	// The resourceVersion makes the write conditional: a replica whose cache is behind
	// another replica's newer value gets a conflict, not a step back in time.
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": reg.ResourceVersion},
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

// due takes from e the counts of the codes whose Event may be made now; the others wait.
// e.mu is held.
func (r *Recorder) due(e *entry) map[string]*codeCount {
	now := r.now()
	due := map[string]*codeCount{}
	for code, c := range e.counts {
		if last, ok := e.evented[code]; ok && now.Sub(last) < r.opts.EventInterval {
			continue
		}
		due[code] = c
		delete(e.counts, code)
		if e.evented == nil {
			e.evented = map[string]time.Time{}
		}
		e.evented[code] = now
	}
	return due
}

// emit makes one Event per refusal code seen since the last flush. The note says how many,
// the rule and what the LMS administrator can do; it names no user.
func (r *Recorder) emit(reg *ltiv1.PlatformRegistration, counts map[string]*codeCount) {
	if r.opts.Events == nil || len(counts) == 0 {
		return
	}
	codes := make([]string, 0, len(counts))
	for code := range counts {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		c := counts[code]
		rule := c.rule
		if rule == "" {
			rule = "none"
		}
		r.opts.Events.Eventf(reg, nil, corev1.EventTypeWarning, ReasonLaunchRefused, "Launch",
			"%s", truncate(fmt.Sprintf("%d launch(es) refused with %s (rule %s) since the last report. %s",
				c.n, code, rule, Hint(code, reg))))
	}
}

// truncate keeps an Event note under the API server's 1 KiB limit.
func truncate(s string) string {
	if len(s) <= 1000 {
		return s
	}
	return strings.ToValidUTF8(s[:1000], "")
}
