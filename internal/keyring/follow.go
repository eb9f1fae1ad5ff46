package keyring

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// Follow makes r follow the keys of kind in the service Secret namespace/name through the
// cache's Secret informer (the Secret is labelled as ltiop's, so the manager cache holds it).
// Every add of that Secret, and every update that changes those keys, replaces the set
// (prepared with prepare, as Replace does); keys that do not decode or are refused are
// logged and ignored, keeping the last good set; a deletion changes nothing, so the keys stay
// in use while the controller recreates the Secret. The logger is the one of ctx.
//
// Call it before the manager starts, so the informer is part of its initial sync; the
// returned registration's HasSynced tells when the Secret (if it exists) has been read.
func (r *Ring[K, D]) Follow(ctx context.Context, c cache.Cache, namespace, name string, kind Kind[K],
	prepare func(sorted []K) (D, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	logger := log.FromContext(ctx).WithValues("secret", namespace+"/"+name)
	return followServiceSecret(ctx, c, namespace, name, kind.DataKey(), logger, func(data []byte) error {
		keys, err := kind.Decode(data)
		if err == nil {
			err = r.Replace(keys, prepare)
		}
		if err != nil {
			return fmt.Errorf("ignoring unreadable %s; keeping the %d keys already loaded: %w", kind, r.Load().Len(), err)
		}
		logger.Info(kind.String()+" loaded", "kids", r.Load().IDs())
		return nil
	})
}

// followServiceSecret calls load with the data under dataKey of the service Secret
// namespace/name whenever the Secret is added or changes that data. A failing load is
// logged and the data is tried again at its next change; a deletion changes nothing (the
// controller recreates the Secret, and what was loaded stays in force until then).
func followServiceSecret(ctx context.Context, c cache.Cache, namespace, name, dataKey string, logger logr.Logger,
	load func(data []byte) error) (toolscache.ResourceEventHandlerRegistration, error) {
	informer, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, fmt.Errorf("secret informer: %w", err)
	}
	var (
		mu   sync.Mutex
		last []byte // the data last loaded, to skip resyncs and unrelated updates
	)
	apply := func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok || secret.Namespace != namespace || secret.Name != name {
			return
		}
		if secret.Type != ltiv1.SecretTypeService {
			logger.Error(nil, "ignoring the service Secret: wrong type", "type", secret.Type, "want", ltiv1.SecretTypeService)
			return
		}
		data := secret.Data[dataKey]
		mu.Lock()
		defer mu.Unlock()
		if last != nil && bytes.Equal(data, last) {
			return
		}
		if err := load(data); err != nil {
			logger.Error(err, "service Secret data not loaded", "key", dataKey, "resourceVersion", secret.ResourceVersion)
			return
		}
		last = bytes.Clone(data)
	}
	return informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { apply(obj) },
		UpdateFunc: func(_, obj any) { apply(obj) },
	})
}
