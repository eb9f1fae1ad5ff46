package sessions

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Attach makes the keyring follow the service Secret namespace/secretName through the
// cache's Secret informer (the Secret is labelled as ltiop's, so the manager cache holds it).
// Every add or update of that Secret replaces the keys; a Secret whose keyring does not
// decode is logged and ignored, keeping the last good keys; a deletion changes nothing, so
// tokens keep opening while the controller recreates the Secret.
//
// Call it before the manager starts, so the informer is part of its initial sync; the
// returned registration's HasSynced tells when the Secret (if it exists) has been read.
func (k *Keyring) Attach(ctx context.Context, c cache.Cache, namespace, secretName string) (toolscache.ResourceEventHandlerRegistration, error) {
	informer, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, fmt.Errorf("secret informer: %w", err)
	}
	logger := log.FromContext(ctx).WithName("sessions").WithValues("secret", namespace+"/"+secretName)
	var (
		mu   sync.Mutex
		last []byte // the keyring data last applied, to skip resyncs and unrelated updates
	)
	apply := func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok || secret.Namespace != namespace || secret.Name != secretName {
			return
		}
		if secret.Type != SecretType {
			logger.Error(nil, "ignoring the service Secret: wrong type", "type", secret.Type, "want", SecretType)
			return
		}
		data := secret.Data[SecretKeyKeyring]
		mu.Lock()
		defer mu.Unlock()
		if last != nil && bytes.Equal(data, last) {
			return
		}
		keys, err := DecodeKeyring(data)
		if err == nil {
			err = k.Replace(keys)
		}
		if err != nil {
			logger.Error(err, "ignoring an unreadable sealing keyring; keeping the keys already loaded",
				"resourceVersion", secret.ResourceVersion, "keys", len(k.load().keys))
			return
		}
		last = bytes.Clone(data)
		logger.Info("sealing keyring loaded", "resourceVersion", secret.ResourceVersion, "kids", k.IDs())
	}
	return informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { apply(obj) },
		UpdateFunc: func(_, obj any) { apply(obj) },
		// No DeleteFunc: a deleted Secret is recreated by the controller, and the tokens
		// sealed until then must keep opening.
	})
}
