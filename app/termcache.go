package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// termCache is the serving manager's cache as one term's controllers see it. Both
// managers were built from the same cache options, so the controllers read the same
// objects; sharing the informers keeps one copy of every registration and key Secret in
// memory instead of two (at 10,000 registrations, some 45 MB) and one watch of each kind.
// What a term adds it takes back when the term ends: its event handlers are removed (no
// handler outlives its controller), and it never removes an informer the web server
// reads. Field indexes, which cannot be removed, are added once per process (indexes).
type termCache struct {
	cache.Cache // the serving manager's, started with it
	indexes     *sharedIndexes

	mu       sync.Mutex
	handlers []termHandler // added by this term, removed when it ends
	ended    bool
}

type termHandler struct {
	informer     cache.Informer
	registration toolscache.ResourceEventHandlerRegistration
}

// sharedIndexes records the field indexes added to the serving cache, across terms.
type sharedIndexes struct {
	mu    sync.Mutex
	added map[string]bool
}

// newCacheFunc makes each term's manager use shared through a termCache.
func (i *sharedIndexes) newCacheFunc(shared cache.Cache) cache.NewCacheFunc {
	return func(*rest.Config, cache.Options) (cache.Cache, error) {
		return &termCache{Cache: shared, indexes: i}, nil
	}
}

// Start runs while the term does; when it ends, the term's handlers are removed.
func (c *termCache) Start(ctx context.Context) error {
	<-ctx.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	for _, h := range c.handlers {
		_ = h.informer.RemoveEventHandler(h.registration) // fails only for a stopped informer
	}
	c.handlers = nil
	return nil
}

// GetInformer returns the shared informer, recording the handlers added through it.
func (c *termCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: inf, term: c}, nil
}

// GetInformerForKind is GetInformer by kind.
func (c *termCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: inf, term: c}, nil
}

// RemoveInformer does nothing: the web server reads the shared informers.
func (c *termCache) RemoveInformer(context.Context, client.Object) error { return nil }

// IndexField adds the index to the shared cache the first time any term asks for it.
// Its keys are namespaced only: controller-runtime's own IndexField also keys every value
// for lists across namespaces, which ltiop (one namespace, and every list by field names
// it) never makes; with a distinct value per registration, each key is a set of its own
// in the index (at 10,000 registrations, some 4 MB). The index name and key format are
// controller-runtime's (fieldIndexName, namespacedKey), which its cache reader looks up.
func (c *termCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	key := fmt.Sprintf("%T/%s", obj, field)
	c.indexes.mu.Lock()
	defer c.indexes.mu.Unlock()
	if c.indexes.added[key] {
		return nil
	}
	inf, err := c.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	if err := inf.AddIndexers(toolscache.Indexers{fieldIndexName(field): namespacedIndex(extract)}); err != nil {
		return err
	}
	if c.indexes.added == nil {
		c.indexes.added = map[string]bool{}
	}
	c.indexes.added[key] = true
	return nil
}

// fieldIndexName and namespacedKey are how controller-runtime's cache reader names a
// field index and keys it for a list in one namespace.
func fieldIndexName(field string) string    { return "field:" + field }
func namespacedKey(ns, value string) string { return ns + "/" + value }

// namespacedIndex keys each value of extract by its object's namespace.
func namespacedIndex(extract client.IndexerFunc) toolscache.IndexFunc {
	return func(raw any) ([]string, error) {
		obj, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		values := extract(obj)
		keys := make([]string, len(values))
		for i, v := range values {
			keys[i] = namespacedKey(obj.GetNamespace(), v)
		}
		return keys, nil
	}
}

// record keeps a handler for removal at the end of the term, or removes it at once if
// the term has ended.
func (c *termCache) record(inf cache.Informer, reg toolscache.ResourceEventHandlerRegistration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		_ = inf.RemoveEventHandler(reg)
		return
	}
	c.handlers = append(c.handlers, termHandler{inf, reg})
}

// termInformer is a shared informer whose handlers are recorded by their term.
type termInformer struct {
	cache.Informer
	term *termCache
}

func (i *termInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (i *termInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (i *termInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandlerWithOptions(h, opts)
	if err != nil {
		return nil, err
	}
	i.term.record(i.Informer, reg)
	return reg, nil
}
