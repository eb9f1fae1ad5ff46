package launchhealth

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// ReasonServiceCallFailed is the reason of the Events on failed calls to an LMS's services
// (NRPS, AGS, groups, EULA, and the token request before them).
const ReasonServiceCallFailed = "ServiceCallFailed"

// ServiceCalls tells a PlatformRegistration that calls to its LMS's services fail: the
// integrator's calls are counted in memory (no API-server call on the request path) and a
// loop on every replica makes one Warning Event per failure code per registration per
// EventInterval, counting the failures in between. Its memory is one counter per
// registration and code (ltiop's three upstream codes).
type ServiceCalls struct {
	opts Options
	now  func() time.Time

	mu       sync.Mutex
	failures map[serviceKey]*serviceFailure // not yet told in an Event
	evented  map[serviceKey]time.Time       // when the last Event of each was made
}

type serviceKey struct {
	name string
	uid  types.UID
	code string
}

type serviceFailure struct {
	n          int
	lastStatus int // the LMS's HTTP status of the last one; 0: none (timeout, refused URL)
}

// NewServiceCalls returns a ServiceCalls; start its loop with Start (a manager Runnable).
// It reads opts' Namespace, Reader, Events, Interval and EventInterval.
func NewServiceCalls(opts Options) *ServiceCalls {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.EventInterval <= 0 {
		opts.EventInterval = DefaultEventInterval
	}
	return &ServiceCalls{opts: opts, now: time.Now, failures: map[serviceKey]*serviceFailure{}, evented: map[serviceKey]time.Time{}}
}

// ServiceFailed records a call to p's LMS that failed with code (httpapi's upstream codes)
// and the LMS's HTTP status (0 if none). Called on the request path: no I/O.
func (s *ServiceCalls) ServiceFailed(p *registry.Platform, code string, status int) {
	k := serviceKey{name: p.ID, uid: p.UID, code: code}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failures[k]
	if f == nil {
		f = &serviceFailure{}
		s.failures[k] = f
	}
	f.n++
	f.lastStatus = status
}

// NeedLeaderElection is false: every replica tells what it saw.
func (s *ServiceCalls) NeedLeaderElection() bool { return false }

// Start flushes every interval until ctx ends, the first time at a random point of the
// first interval.
func (s *ServiceCalls) Start(ctx context.Context) error {
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(s.opts.Interval)))) //nolint:gosec // jitter, not a secret
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			s.Flush(ctx)
			timer.Reset(s.opts.Interval)
		}
	}
}

// Flush makes the Events that are due: one per registration and code whose last Event is
// older than EventInterval. The others wait, counting.
func (s *ServiceCalls) Flush(ctx context.Context) {
	now := s.now()
	due := map[serviceKey]serviceFailure{}
	s.mu.Lock()
	for k, f := range s.failures {
		if last, ok := s.evented[k]; ok && now.Sub(last) < s.opts.EventInterval {
			continue
		}
		due[k] = *f
		delete(s.failures, k)
		s.evented[k] = now
	}
	for k, last := range s.evented { // forget what can no longer hold an Event back
		if _, pending := s.failures[k]; !pending && now.Sub(last) >= s.opts.EventInterval {
			delete(s.evented, k)
		}
	}
	s.mu.Unlock()

	keys := make([]serviceKey, 0, len(due))
	for k := range due {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].name+keys[i].code < keys[j].name+keys[j].code })
	for _, k := range keys {
		reg := &ltiv1.PlatformRegistration{}
		if err := s.opts.Reader.Get(ctx, client.ObjectKey{Namespace: s.opts.Namespace, Name: k.name}, reg); err != nil || reg.UID != k.uid {
			if err != nil && client.IgnoreNotFound(err) != nil {
				log.FromContext(ctx).WithName("launchhealth").Info("reading a registration for its service Events", "platform", k.name, "error", err.Error())
			}
			continue
		}
		f := due[k]
		if s.opts.Events != nil {
			s.opts.Events.Eventf(reg, nil, corev1.EventTypeWarning, ReasonServiceCallFailed, "CallService", "%s",
				truncate(fmt.Sprintf("%d call(s) to the LMS's services failed with %s since the last report. %s", f.n, k.code, ServiceHint(k.code, f.lastStatus))))
		}
	}
}

// ServiceHint is the one-line advice for a failed service call: what the LMS
// administrator or the operator can do.
func ServiceHint(code string, status int) string {
	switch {
	case code == httpapi.CodeUpstreamTimeout:
		return "The LMS did not answer in time: check the LMS's health and the network path from ltiop to it."
	case code == httpapi.CodeURLNotAllowed:
		return "The LMS's service or token URL leads where ltiop's outbound policy does not connect (a private, loopback or plain-http address): if the LMS is inside your network, list its range in outboundAllowCidrs."
	case status == 401 || status == 403:
		return fmt.Sprintf("The LMS answered HTTP %d: it refused ltiop's client assertion or access token. Check that the LMS has the registration's key set URL (status.jwksUrl) or public key, and that the tool was granted the service's scopes.", status)
	case status == 400:
		return "The LMS answered HTTP 400: usually its token endpoint refusing ltiop's client assertion (invalid_client). Check spec.clientId, and that the LMS has the registration's key set URL (status.jwksUrl) or public key."
	case status >= 500:
		return fmt.Sprintf("The LMS answered HTTP %d: a fault on the LMS's side; retry later or ask its operator.", status)
	case status != 0:
		return fmt.Sprintf("The LMS answered HTTP %d.", status)
	}
	return "The LMS could not be reached: check the network path from ltiop to it (POST /api/platforms/{id}/check)."
}
