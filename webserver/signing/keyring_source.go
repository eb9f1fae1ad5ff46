package signing

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/webserver/sessions"
)

// Attach makes the keyring follow the service Secret namespace/secretName through the
// cache's Secret informer (the Secret is labelled as ltiop's, so the manager cache holds it).
// Every add or update of that Secret replaces the keys; a Secret without a readable
// platform-keys.json is logged and ignored, keeping the last good keys; a deletion changes
// nothing, so ltiop keeps signing (and its JWKS keeps the keys tools know) while the
// controller recreates the Secret.
//
// Call it before the manager starts, so the informer is part of its initial sync; the
// returned registration's HasSynced tells when the Secret (if it exists) has been read.
func (k *Keyring) Attach(ctx context.Context, c cache.Cache, namespace, secretName string) (toolscache.ResourceEventHandlerRegistration, error) {
	informer, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, fmt.Errorf("secret informer: %w", err)
	}
	logger := log.FromContext(ctx).WithName("signing").WithValues("secret", namespace+"/"+secretName)
	var (
		mu   sync.Mutex
		last []byte // the data last applied, to skip resyncs and unrelated updates
	)
	apply := func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok || secret.Namespace != namespace || secret.Name != secretName {
			return
		}
		if secret.Type != sessions.SecretType {
			logger.Error(nil, "ignoring the service Secret: wrong type", "type", secret.Type, "want", sessions.SecretType)
			return
		}
		data := secret.Data[SecretKeyPlatformKeys]
		mu.Lock()
		defer mu.Unlock()
		if last != nil && bytes.Equal(data, last) {
			return
		}
		keys, err := DecodeKeys(data)
		if err == nil {
			err = k.Replace(keys)
		}
		if err != nil {
			logger.Error(err, "ignoring unreadable platform signing keys; keeping the keys already loaded",
				"resourceVersion", secret.ResourceVersion, "keys", len(k.load().keys))
			return
		}
		last = bytes.Clone(data)
		logger.Info("platform signing keys loaded", "resourceVersion", secret.ResourceVersion, "kids", k.KIDs())
	}
	return informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { apply(obj) },
		UpdateFunc: func(_, obj any) { apply(obj) },
		// No DeleteFunc: a deleted Secret is recreated by the controller, and until then
		// tokens keep being signed with keys tools already trust.
	})
}
