package platformcheck

import (
	"context"
	"github.com/ltiop/ltiop/webserver/stores/writes"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// DefaultProbeInterval is how often each active registration's LMS is probed.
const DefaultProbeInterval = 15 * time.Minute

// DefaultProbeConcurrency bounds the registrations probed at once.
const DefaultProbeConcurrency = 8

// checksTotal counts the probe's checks by outcome: alerts read the failing ones.
var checksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ltiop_reachability_checks_total",
	Help: "Checks of the periodic reachability probe (leader only), by check (keySet, authenticationEndpoint, accesstokenEndpoint) and reason (OK, StaticKey, or the failure).",
}, []string{"check", "reason"})

// failingRegistrations is how many registrations failed their last probe, by check (keySet,
// endpoints): what an alert fires on. The elected replica reports it; the others, 0.
var failingRegistrations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "ltiop_reachability_failing_registrations",
	Help: "Registrations whose last reachability probe failed, by check (keySet, endpoints); reported by the elected replica.",
}, []string{"check"})

func init() { metrics.Registry.MustRegister(checksTotal, failingRegistrations) }

// Bits of Prober.failing.
const (
	failingKeySet uint8 = 1 << iota
	failingEndpoints
)

// ProberOptions configure a Prober.
type ProberOptions struct {
	Namespace string
	// Registry lists the registrations to probe (in memory: no API-server call).
	Registry *registry.Registry
	Checker  *Checker
	// Reader reads the registration to update (the manager's cache); Writer patches its status.
	Reader client.Reader
	Writer client.StatusClient
	Events events.EventRecorder
	// Interval is the time one round over every registration takes; zero is
	// DefaultProbeInterval. Concurrency bounds the probes at once; zero is
	// DefaultProbeConcurrency.
	Interval    time.Duration
	Concurrency int
}

// Prober probes every active registration's LMS once per interval, the registrations
// spread evenly over it in a random order (no burst after a restart or a change of
// leader, no two replicas' worth), at most Concurrency at once, and records the result
// as the KeySetReachable and EndpointsReachable conditions, with an Event when one
// changes. It runs on the elected replica only (app adds it to the controllers' manager).
// Within a round a URL is checked once, however many registrations name it: thousands of
// registrations of one cloud LMS share one key set.
type Prober struct {
	opts ProberOptions

	running atomic.Bool // Start is running: this replica leads

	mu      sync.Mutex
	failing map[string]uint8 // registration → failing bits of its last probe; one byte each
}

// NewProber returns a Prober; run it with Start.
func NewProber(opts ProberOptions) *Prober {
	if opts.Interval <= 0 {
		opts.Interval = DefaultProbeInterval
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultProbeConcurrency
	}
	return &Prober{opts: opts, failing: map[string]uint8{}}
}

// NeedLeaderElection is true: one replica probes.
func (p *Prober) NeedLeaderElection() bool { return true }

// Start runs rounds until ctx ends.
func (p *Prober) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("reachability"))
	p.running.Store(true)
	defer p.running.Store(false)
	defer p.forgetAll() // another replica probes from now on
	for ctx.Err() == nil {
		p.Round(ctx, p.opts.Interval)
	}
	return nil
}

// Running says whether the probe runs on this replica now (it runs on the elected one).
func (p *Prober) Running() bool { return p.running.Load() }

// setFailing records the failing bits of registration id's last probe.
func (p *Prober) setFailing(id string, bits uint8) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.failing[id]
	if bits == 0 {
		delete(p.failing, id)
	} else {
		p.failing[id] = bits
	}
	adjustFailing(old, bits)
}

func adjustFailing(old, bits uint8) {
	for _, c := range []struct {
		bit   uint8
		check string
	}{{failingKeySet, "keySet"}, {failingEndpoints, "endpoints"}} {
		switch {
		case old&c.bit == 0 && bits&c.bit != 0:
			failingRegistrations.WithLabelValues(c.check).Inc()
		case old&c.bit != 0 && bits&c.bit == 0:
			failingRegistrations.WithLabelValues(c.check).Dec()
		}
	}
}

// keepFailing forgets the registrations no longer probed (deleted, inactive).
func (p *Prober) keepFailing(probed []*registry.Platform) {
	keep := make(map[string]bool, len(probed))
	for _, pl := range probed {
		keep[pl.ID] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, bits := range p.failing {
		if !keep[id] {
			delete(p.failing, id)
			adjustFailing(bits, 0)
		}
	}
}

func (p *Prober) forgetAll() { p.keepFailing(nil) }

// probeable says whether p is probed: active registrations only (an inactive one may be
// half set up, and nobody launches from it).
func probeable(p *registry.Platform) bool { return p.Spec.IsActive() && !p.AwaitingActivation }

// Round probes every probeable registration once, spread over span, and returns when
// span has passed (or ctx ended) and every probe has finished.
func (p *Prober) Round(ctx context.Context, span time.Duration) {
	start := time.Now()
	platforms := p.opts.Registry.List(probeable)
	p.keepFailing(platforms)
	if len(platforms) == 0 { // none yet: look again soon, not a whole span later
		sleepUntil(ctx, start.Add(min(span, time.Minute)))
		return
	}
	rand.Shuffle(len(platforms), func(i, j int) { platforms[i], platforms[j] = platforms[j], platforms[i] }) //nolint:gosec // an order, not a secret
	memo := &memo{}
	sem := make(chan struct{}, p.opts.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, offset := range schedule(len(platforms), span) {
		pl := platforms[i]
		if !sleepUntil(ctx, start.Add(offset)) {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.probe(ctx, pl, memo)
		}()
	}
	sleepUntil(ctx, start.Add(span))
}

// schedule is when, from the start of a round of span, each of n probes starts: the
// round cut in n equal slots, each probe at a random point of its own slot. So probes
// are spread evenly whatever n is (10,000 registrations in 15 minutes: one every 90 ms),
// and jittered.
func schedule(n int, span time.Duration) []time.Duration {
	if n == 0 {
		return nil
	}
	slot := span / time.Duration(n)
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i)*slot + rand.N(slot+1) //nolint:gosec // jitter, not a secret
	}
	return out
}

// ProbeNow probes registration id at once and records the outcome, as a round would;
// false if there is no such registration.
func (p *Prober) ProbeNow(ctx context.Context, id string) bool {
	pl := p.opts.Registry.Get(id)
	if pl == nil {
		return false
	}
	p.probe(ctx, pl, &memo{})
	return true
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// memo runs each check of one URL once per round.
type memo struct{ m sync.Map } // key → *memoEntry

type memoEntry struct {
	once  sync.Once
	probe Probe
}

func (m *memo) do(key string, check func() Probe) Probe {
	v, _ := m.m.LoadOrStore(key, &memoEntry{})
	e := v.(*memoEntry)
	e.once.Do(func() { e.probe = check() })
	return e.probe
}

// probe checks one registration and records the outcome.
func (p *Prober) probe(ctx context.Context, pl *registry.Platform, m *memo) {
	reg := &ltiv1.PlatformRegistration{}
	if err := p.opts.Reader.Get(ctx, client.ObjectKey{Namespace: p.opts.Namespace, Name: pl.ID}, reg); err != nil || reg.UID != pl.UID {
		return // deleted (or re-created) since the round began: the next round sees it
	}
	var conds []metav1.Condition
	if reg.Annotations[ltiv1.AnnotationReachabilityProbe] != "off" {
		res := p.check(ctx, registry.SourceOf(reg), reg.Spec, m)
		if ctx.Err() != nil {
			return // the term ended mid-check: a timeout of ours, not the LMS's
		}
		conds = Conditions(res, reg.Generation)
	}
	var bits uint8
	for _, c := range conds {
		if c.Status != metav1.ConditionFalse {
			continue
		}
		if c.Type == ltiv1.ConditionKeySetReachable {
			bits |= failingKeySet
		} else {
			bits |= failingEndpoints
		}
	}
	p.setFailing(pl.ID, bits)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := &ltiv1.PlatformRegistration{}
		if err := p.opts.Reader.Get(ctx, client.ObjectKeyFromObject(reg), cur); err != nil {
			return err
		}
		if cur.UID != reg.UID {
			return nil
		}
		next := cur.DeepCopy()
		if conds == nil {
			meta.RemoveStatusCondition(&next.Status.Conditions, ltiv1.ConditionKeySetReachable)
			meta.RemoveStatusCondition(&next.Status.Conditions, ltiv1.ConditionEndpointsReachable)
		}
		for _, c := range conds {
			meta.SetStatusCondition(&next.Status.Conditions, c)
		}
		if equality.Semantic.DeepEqual(cur.Status, next.Status) {
			return nil
		}
		if err := writes.PatchStatusFrom(ctx, p.opts.Writer, cur, next, writes.ManagerReachability); err != nil {
			return err
		}
		p.transitions(cur, conds)
		return nil
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		log.FromContext(ctx).Info("writing reachability", "platform", pl.ID, "error", err.Error())
	}
}

// check runs the three checks of spec, of a registration of source, each URL once per
// round and source (a URL one source's policy refuses may be another's to reach).
func (p *Prober) check(ctx context.Context, source outbound.Source, spec ltiv1.PlatformRegistrationSpec, m *memo) Result {
	key := func(s string) string { return source.String() + " " + s }
	var res Result
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		ac := spec.AuthConfig
		res.KeySet = m.do(key("keySet "+string(ac.Method)+" "+ac.Key), func() Probe { return p.opts.Checker.keySet(ctx, source, ac) })
	}()
	go func() {
		defer wg.Done()
		u := string(spec.AuthenticationEndpoint)
		res.AuthenticationEndpoint = m.do(key("GET "+u), func() Probe { return p.opts.Checker.endpoint(ctx, source, "GET", u) })
	}()
	go func() {
		defer wg.Done()
		u := string(spec.AccesstokenEndpoint)
		res.AccesstokenEndpoint = m.do(key("POST "+u), func() Probe { return p.opts.Checker.endpoint(ctx, source, "POST", u) })
	}()
	wg.Wait()
	checksTotal.WithLabelValues("keySet", res.KeySet.Reason).Inc()
	checksTotal.WithLabelValues("authenticationEndpoint", res.AuthenticationEndpoint.Reason).Inc()
	checksTotal.WithLabelValues("accesstokenEndpoint", res.AccesstokenEndpoint.Reason).Inc()
	return res
}

// Conditions are the KeySetReachable and EndpointsReachable conditions of res.
func Conditions(res Result, generation int64) []metav1.Condition {
	keySet := condition(ltiv1.ConditionKeySetReachable, res.KeySet, generation)
	endpoints := condition(ltiv1.ConditionEndpointsReachable, res.AuthenticationEndpoint, generation)
	endpoints.Message = "Authentication endpoint: " + res.AuthenticationEndpoint.Detail + " Token endpoint: " + res.AccesstokenEndpoint.Detail
	if endpoints.Status == metav1.ConditionTrue && !res.AccesstokenEndpoint.OK {
		endpoints.Status, endpoints.Reason = metav1.ConditionFalse, res.AccesstokenEndpoint.Reason
	}
	return []metav1.Condition{keySet, endpoints}
}

func condition(typ string, pr Probe, generation int64) metav1.Condition {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: pr.Reason, Message: pr.Detail, ObservedGeneration: generation}
	if pr.OK {
		c.Status = metav1.ConditionTrue
		if pr.Reason == ReasonOK {
			c.Reason = ltiv1.ReasonReachable
		}
	}
	return c
}

// transitions makes an Event for each condition that changed status or, while False,
// reason: a Warning when a check starts failing, a Normal one when it passes again. A
// standing failure makes no more Events; its first probe after a restart none either,
// when the condition already says it.
func (p *Prober) transitions(before *ltiv1.PlatformRegistration, conds []metav1.Condition) {
	if p.opts.Events == nil {
		return
	}
	for _, c := range conds {
		old := meta.FindStatusCondition(before.Status.Conditions, c.Type)
		switch {
		case c.Status == metav1.ConditionFalse && (old == nil || old.Status != metav1.ConditionFalse || old.Reason != c.Reason):
			p.opts.Events.Eventf(before, nil, corev1.EventTypeWarning, c.Reason, "Probe", "%s is False: %s", c.Type, truncate(c.Message))
		case c.Status == metav1.ConditionTrue && old != nil && old.Status == metav1.ConditionFalse:
			p.opts.Events.Eventf(before, nil, corev1.EventTypeNormal, c.Reason, "Probe", "%s is True again: %s", c.Type, truncate(c.Message))
		}
	}
}

// truncate keeps an Event note under the API server's 1 KiB limit.
func truncate(s string) string {
	if len(s) <= 900 {
		return s
	}
	return strings.ToValidUTF8(s[:900], "")
}
