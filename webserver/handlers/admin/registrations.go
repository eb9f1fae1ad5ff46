package admin

import (
	"context"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/writes"
)

// registrations is what the platform and tool handlers share: a registration named by the
// path's {id}, read from a registry, shown, deleted or (de)activated with its UID as
// precondition, and the registry awaited after the write. R is registry.Platform or
// registry.Tool.
type registrations[R any] struct {
	noun   string // "platform" or "tool", in logs
	client client.Client
	find   func(*http.Request) (*R, *httpapi.Error)
	show   func(*R) any
	// object is a new object naming the registration (namespace, name and UID), to write.
	object   func(*R) client.Object
	apiError func(context.Context, error) *httpapi.Error
	// waitFor is the registry's WaitFor; keyWait bounds it.
	waitFor func(ctx context.Context, id string, cond func(*R) bool) (*R, bool)
	keyWait time.Duration
	// written answers a write of cur once the registry shows it; obj is what the API
	// server answered.
	written func(w http.ResponseWriter, r *http.Request, cur *R, obj client.Object)
}

// wait waits (bounded by keyWait) for cond on the registry's view of id.
func (k *registrations[R]) wait(ctx context.Context, id string, cond func(*R) bool) (*R, bool) {
	ctx, cancel := context.WithTimeout(ctx, k.keyWait)
	defer cancel()
	return k.waitFor(ctx, id, cond)
}

// get answers GET …/{id}.
func (k *registrations[R]) get(w http.ResponseWriter, r *http.Request) {
	cur, herr := k.find(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, k.show(cur))
}

// delete answers DELETE …/{id}: 204. It waits (bounded) until the registry no longer shows
// the registration, so that a list right after the 204 does not either.
func (k *registrations[R]) delete(w http.ResponseWriter, r *http.Request) {
	cur, herr := k.find(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	obj := k.object(cur)
	if err := writes.Delete(r.Context(), k.client, obj); err != nil {
		httpapi.WriteError(w, k.apiError(r.Context(), err))
		return
	}
	log.FromContext(r.Context()).Info(k.noun+" registration deleted", k.noun, obj.GetName())
	k.wait(r.Context(), obj.GetName(), func(q *R) bool { return q == nil || k.object(q).GetUID() != obj.GetUID() })
	w.WriteHeader(http.StatusNoContent)
}

// setActive answers POST …/{id}/activate and …/{id}/deactivate.
func (k *registrations[R]) setActive(w http.ResponseWriter, r *http.Request, active bool) {
	cur, herr := k.find(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	obj := k.object(cur)
	if err := writes.SetActive(r.Context(), k.client, obj, active); err != nil {
		httpapi.WriteError(w, k.apiError(r.Context(), err))
		return
	}
	k.written(w, r, cur, obj)
}
