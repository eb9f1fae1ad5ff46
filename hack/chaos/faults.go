package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/test/utils/testredis"
)

// fault is one failure injected under load.
type fault struct {
	key, name string
	// inject does the failure, and what Kubernetes would do about it (a killed replica is
	// started again and put back in the Service once it serves).
	inject func(ctx context.Context) error
	// healed says when the failure is over: a leader again, a master promoted, a key rotated.
	healed func(ctx context.Context) bool
	// mayFail says which failed launches the failure may cause; any other is a defect.
	mayFail func(reason string) bool
}

// result is what one fault did to the load.
type result struct {
	name                      string
	attempted, ok, failed     int
	reasons                   string
	unexpected                []string // failures mayFail does not allow
	refusedClosed             int      // launches refused with 503 REPLAY_STORE_UNAVAILABLE
	replaysAccepted, replayed int64    // during the window, and of the launches before it replayed after it
	recovery                  time.Duration
	failing                   time.Duration // from the first failed launch's start to the last one's end
	failovers                 int           // Sentinel failovers during the window (its epoch's rise)
	before, after             usage
}

const storeUnavailable = "503 REPLAY_STORE_UNAVAILABLE"

func none(string) bool { return false }

// killedInFlight allows what a killed process causes: requests that got no answer.
func killedInFlight(reason string) bool { return isTransport(reason) }

// failClosed allows only the replay store's refusal: no master, so nothing is accepted.
func failClosed(reason string) bool { return strings.HasSuffix(reason, storeUnavailable) }

// faults are every failure the run knows, in the order they run; apiOutage is how long the
// API server stays cut off.
func (c *cluster) faults(apiOutage time.Duration) []fault {
	var toolKeyWas, toolKeyAsked, platformKeyAsked string
	restart := func(ctx context.Context, r *replica, sig func()) error {
		sig()
		r.inService.Store(false)
		if err := r.start(c); err != nil {
			return err
		}
		return c.awaitServing(ctx, r, 2*time.Minute)
	}
	hasLeader := func(ctx context.Context) bool { return c.leader(ctx) != nil }
	killMaster := func(ctx context.Context, m *testredis.Server) error {
		c.strike()
		m.Stop()
		if err := await(ctx, time.Minute, "Sentinel promotes a replica", func() bool {
			n := c.redis.Master()
			return n != nil && n != m
		}); err != nil {
			return err
		}
		// Restarted empty after a while, as Kubernetes would, and started as a replica of
		// the master the sentinels name, as a Redis pod's start script does.
		select { // the pod's restart: nothing to await
		case <-time.After(c.s.rejoin):
		case <-ctx.Done():
			return ctx.Err()
		}
		return c.redis.Rejoin(m)
	}
	return []fault{
		{key: "tool-key", name: "tool key rotated (annotation)", mayFail: none,
			inject: func(ctx context.Context) error {
				reg := &ltiv1.PlatformRegistration{}
				if err := c.k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: regName}, reg); err != nil {
					return err
				}
				toolKeyWas, toolKeyAsked = reg.Status.KID, "chaos-"+strconv.FormatInt(time.Now().UnixNano(), 36)
				return c.annotate(ctx, reg, ltiv1.AnnotationRotateKey, toolKeyAsked)
			},
			healed: func(ctx context.Context) bool {
				reg := &ltiv1.PlatformRegistration{}
				if c.k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: regName}, reg) != nil {
					return false
				}
				k := reg.Status.KeyRotation
				return k != nil && k.LastRequest == toolKeyAsked && reg.Status.KID != toolKeyWas && k.Next == nil
			}},
		{key: "platform-key", name: "platform signing key rotated (annotation)", mayFail: none,
			inject: func(ctx context.Context) error {
				s := &corev1.Secret{}
				if err := c.k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ltiv1.DefaultServiceSecretName}, s); err != nil {
					return err
				}
				platformKeyAsked = "chaos-" + strconv.FormatInt(time.Now().UnixNano(), 36)
				return c.annotate(ctx, s, ltiv1.AnnotationRotatePlatformKey, platformKeyAsked)
			},
			healed: func(ctx context.Context) bool {
				s := &corev1.Secret{}
				return c.k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ltiv1.DefaultServiceSecretName}, s) == nil &&
					s.Annotations[ltiv1.AnnotationRotatedPlatformKey] == platformKeyAsked
			}},
		{key: "apiserver", name: "API server cut off for " + apiOutage.String(), mayFail: none,
			inject: func(ctx context.Context) error {
				c.link.Cut()
				defer c.link.Restore()
				select { // the outage itself: nothing to await
				case <-time.After(apiOutage):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			},
			healed: hasLeader},
		{key: "redis", name: "Redis master SIGKILL (Sentinel failover)", mayFail: failClosed,
			inject: func(ctx context.Context) error {
				m := c.redis.Master()
				if m == nil {
					return fmt.Errorf("no Redis master to kill")
				}
				return killMaster(ctx, m)
			},
			// The set-up is whole again (every replica streaming from the new master), so
			// that the next failover has as many replicas to promote.
			healed: func(context.Context) bool { return c.redis.Healthy() }},
		// A partition first: the master keeps answering clients, but no replica gets what
		// it acknowledges, and then it dies. Without WAIT every use of that second is lost in
		// the failover, and the launches of that second can be replayed after it.
		{key: "redis-partition", name: "Redis master cut off from its replicas for 1 s, then SIGKILL", mayFail: failClosed,
			inject: func(ctx context.Context) error {
				m := c.redis.Master()
				if m == nil {
					return fmt.Errorf("no Redis master to cut off")
				}
				if err := c.redis.CutOff(m); err != nil {
					return err
				}
				select { // the partition: launches go on meanwhile
				case <-time.After(time.Second):
				case <-ctx.Done():
					return ctx.Err()
				}
				return killMaster(ctx, m)
			},
			healed: func(context.Context) bool { return c.redis.Healthy() }},
		{key: "follower", name: "follower replica SIGKILL", mayFail: killedInFlight,
			inject: func(ctx context.Context) error {
				l := c.leader(ctx)
				for _, r := range c.list {
					if r != l {
						return restart(ctx, r, r.kill)
					}
				}
				return fmt.Errorf("no follower: one replica only")
			},
			healed: hasLeader},
		{key: "leader", name: "leader replica SIGKILL", mayFail: killedInFlight,
			inject: func(ctx context.Context) error {
				l := c.leader(ctx)
				if l == nil {
					return fmt.Errorf("no leader to kill")
				}
				return restart(ctx, l, l.kill)
			},
			healed: hasLeader},
		// A terminating replica closes its idle keep-alive connections: a request sent on
		// one at that instant gets a reset, as it would from a pod that is terminating.
		{key: "rolling", name: "rolling restart (SIGTERM, one replica after another)", mayFail: killedInFlight,
			inject: func(ctx context.Context) error {
				for _, r := range c.list {
					// The endpoint goes first, as it does for a pod that is terminating.
					if err := restart(ctx, r, func() { r.inService.Store(false); r.terminate() }); err != nil {
						return err
					}
				}
				return nil
			},
			healed: hasLeader},
	}
}

// annotate sets one annotation on obj.
func (c *cluster) annotate(ctx context.Context, obj client.Object, key, value string) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
	return c.k8s.Patch(ctx, obj, patch)
}

// usage sums what the running replicas use.
func (c *cluster) usage(ctx context.Context) usage {
	var u usage
	for _, r := range c.list {
		u = u.add(r.usage(ctx))
	}
	return u
}

// inject runs f under l's load. The window it reports runs from the injection until a
// launch started after the failure healed has succeeded, and at least minWindow.
func (c *cluster) inject(ctx context.Context, l *load, f fault, minWindow, limit time.Duration) (result, error) {
	res := result{name: f.name, before: c.usage(ctx)}
	epoch := c.redis.Epoch()
	acceptedBefore := l.replaysAccepted.Load()
	var before []launched
	c.strike = func() { before = l.lastLaunches() }
	c.strike() // at once, unless the fault says when
	t0 := time.Now()
	if err := f.inject(ctx); err != nil {
		return res, fmt.Errorf("%s: %w", f.name, err)
	}
	if err := await(ctx, limit, f.name+": healed", func() bool { return f.healed(ctx) }); err != nil {
		return res, err
	}
	healed := time.Now()
	var recovered time.Time
	if err := await(ctx, limit, f.name+": a launch succeeds after it healed", func() bool {
		var ok bool
		recovered, ok = l.succeededAfter(healed)
		return ok
	}); err != nil {
		return res, err
	}
	res.recovery = recovered.Sub(t0)
	end := recovered
	if e := t0.Add(minWindow); e.After(end) {
		select { // the rest of a fixed-length window
		case <-time.After(time.Until(e)):
		case <-ctx.Done():
			return res, ctx.Err()
		}
		end = e
	}
	var firstFail, lastFail time.Time
	for _, o := range l.between(t0, end) {
		res.attempted++
		if o.reason == "" {
			res.ok++
			continue
		}
		res.failed++
		if firstFail.IsZero() || o.start.Before(firstFail) {
			firstFail = o.start
		}
		if o.end.After(lastFail) {
			lastFail = o.end
		}
		if failClosed(o.reason) {
			res.refusedClosed++
		}
		if !f.mayFail(o.reason) {
			res.unexpected = append(res.unexpected, o.reason)
		}
	}
	if res.failed > 0 {
		res.failing = lastFail.Sub(firstFail)
	}
	res.reasons = reasons(l.between(t0, end))
	l.replayAll(before, "after "+f.name)
	res.replayed = int64(len(before))
	res.replaysAccepted = l.replaysAccepted.Load() - acceptedBefore
	res.after = c.usage(ctx)
	res.failovers = c.redis.Epoch() - epoch
	return res, nil
}
