package registry

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
)

// Attach makes pk follow the annotation lti.ltiop.dev/refresh-key-set of PlatformRegistrations
// and ToolRegistrations through the cache's informers. The cache of key sets is per replica;
// so is the informer, and every replica's informer sees the annotation change, so each one
// drops its own copy. Call it before the manager starts.
func (pk *PeerKeys) Attach(ctx context.Context, c cache.Cache) error {
	logger := log.FromContext(ctx).WithName("peer-keys")
	for _, kind := range []client.Object{&ltiv1.PlatformRegistration{}, &ltiv1.ToolRegistration{}} {
		inf, err := c.GetInformer(ctx, kind)
		if err != nil {
			return fmt.Errorf("%T informer: %w", kind, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, cur any) { pk.refreshOnRequest(logger.Info, old, cur) },
		}); err != nil {
			return err
		}
	}
	return nil
}

// refreshOnRequest drops the key set of a registration whose refresh annotation took a new
// value between old and cur (an informer's update); logf reports what was dropped. A status
// write, or any other change, drops nothing; nor does removing the annotation.
func (pk *PeerKeys) refreshOnRequest(logf func(string, ...any), old, cur any) {
	before, ok1 := old.(client.Object)
	after, ok2 := cur.(client.Object)
	if !ok1 || !ok2 {
		return
	}
	request := after.GetAnnotations()[ltiv1.AnnotationRefreshKeySet]
	if request == "" || request == before.GetAnnotations()[ltiv1.AnnotationRefreshKeySet] {
		return
	}
	// The URL before the update too: a spec changed in the same write must not keep the
	// old set cached under the old URL.
	for _, obj := range []client.Object{before, after} {
		kind, ac := authConfigOf(obj)
		if ac != nil && ac.Method == ltiv1.AuthMethodJWKSet && pk.Forget(ac.Key) {
			logf("dropped a cached key set on request", "kind", kind, "name", after.GetName(),
				"request", request, "keySet", outbound.RedactURL(ac.Key))
		}
	}
}

// authConfigOf is the peer's key of a registration of either kind, nil for another object.
func authConfigOf(obj client.Object) (kind string, ac *ltiv1.AuthConfig) {
	switch o := obj.(type) {
	case *ltiv1.PlatformRegistration:
		return "PlatformRegistration", &o.Spec.AuthConfig
	case *ltiv1.ToolRegistration:
		return "ToolRegistration", &o.Spec.AuthConfig
	}
	return "", nil
}

// Forget drops the cached key set at url, if there is one (under every source's policy it
// was fetched with), and reports whether there was: the next lookup fetches it again, and
// the keys it held are never used again, not even as the last good keys while that fetch
// fails (stale-if-error). A fetch under way fills the dropped set, not the next one. It
// scans the cache: a request by an operator, not a lookup.
func (pk *PeerKeys) Forget(url string) bool {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	found := false
	for key, set := range pk.sets {
		if key.url == url {
			pk.lru.Remove(set.elem)
			delete(pk.sets, key)
			found = true
		}
	}
	return found
}
