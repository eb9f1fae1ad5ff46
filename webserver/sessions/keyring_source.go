package sessions

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
	logger := log.FromContext(ctx).WithName("sessions").WithValues("secret", namespace+"/"+secretName)
	return FollowServiceSecret(ctx, c, namespace, secretName, SecretKeyKeyring, logger, func(data []byte) error {
		keys, err := DecodeKeyring(data)
		if err == nil {
			err = k.Replace(keys)
		}
		if err != nil {
			return fmt.Errorf("ignoring an unreadable sealing keyring; keeping the %d keys already loaded: %w", len(k.load().keys), err)
		}
		logger.Info("sealing keyring loaded", "kids", k.IDs())
		return nil
	})
}

// FollowServiceSecret calls load with the data under dataKey of the service Secret
// namespace/name whenever the Secret is added or changes that data. A failing load is
// logged and the data is tried again at its next change; a deletion changes nothing (the
// controller recreates the Secret, and what was loaded stays in force until then).
func FollowServiceSecret(ctx context.Context, c cache.Cache, namespace, name, dataKey string, logger logr.Logger,
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
		if secret.Type != SecretType {
			logger.Error(nil, "ignoring the service Secret: wrong type", "type", secret.Type, "want", SecretType)
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
