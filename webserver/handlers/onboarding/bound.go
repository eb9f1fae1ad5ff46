package onboarding

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// CodeTooManyPending is the error code of /lti/register refusing to write one more
// registration awaiting activation, because maxPending of them exist.
const CodeTooManyPending = "TOO_MANY_PENDING_REGISTRATIONS"

// unseenFor bounds how long a registration written here counts before the registry shows
// it; informers deliver in well under a second, and one deleted at once is never shown.
const unseenFor = time.Minute

// pendingBound keeps /lti/register (a request without credential) from writing more than
// max registrations that await activation. It counts the registry's view, which lags the
// API server by the informer's delay, plus what this replica is writing now and has written
// but not yet seen, so concurrent requests to one replica cannot all slip under the bound.
// Replicas do not share their in-flight counts: n replicas may overshoot by their
// concurrent writes, never by more (docs/dynamic-registration.md).
type pendingBound struct {
	max      int // 0: no bound
	registry *registry.Registry
	now      func() time.Time

	mu       sync.Mutex
	inflight int
	unseen   map[string]time.Time // written here, not yet in the registry
}

// reserve takes a place under the bound for one registration about to be written; call
// done with the id written ("" when nothing was). It fails when the bound is reached.
func (b *pendingBound) reserve() (done func(id string), herr *httpapi.Error) {
	if b.max <= 0 {
		return func(string) {}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for id, at := range b.unseen {
		if b.registry.Get(id) != nil || now.Sub(at) > unseenFor {
			delete(b.unseen, id)
		}
	}
	if b.registry.AwaitingActivation()+b.inflight+len(b.unseen) >= b.max {
		return nil, httpapi.Errorf(http.StatusTooManyRequests, CodeTooManyPending,
			"ltiop already holds "+strconv.Itoa(b.max)+" dynamic registrations awaiting activation; "+
				"its operator must activate or delete some before another platform can register.")
	}
	b.inflight++
	return func(id string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.inflight--
		if id != "" && b.registry.Get(id) == nil {
			b.unseen[id] = b.now()
		}
	}, nil
}
