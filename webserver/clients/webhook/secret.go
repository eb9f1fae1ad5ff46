package webhook

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Secret holds the webhook signing key, read from a data key of a Secret and kept current
// by an informer: rotating the Secret takes effect without a restart.
type Secret struct {
	secretName, dataKey string
	key                 atomic.Pointer[[]byte] // nil while the Secret holds no usable key
}

// NewSecret returns the key read from data key dataKey of Secret secretName.
func NewSecret(secretName, dataKey string) *Secret {
	return &Secret{secretName: secretName, dataKey: dataKey}
}

// Key returns the current key, nil when none is usable. It is a webhook.Key.
func (s *Secret) Key() []byte {
	if k := s.key.Load(); k != nil {
		return *k
	}
	return nil
}

// Set sets the key from its whsec_ form (tests and embedded use).
func (s *Secret) Set(secret string) error {
	k, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	s.key.Store(&k)
	return nil
}

// Attach follows the Secret through the informer of c, a cache that should hold only it.
func (s *Secret) Attach(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("webhook secret informer: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.update(obj) },
		UpdateFunc: func(_, obj any) { s.update(obj) },
		DeleteFunc: func(obj any) {
			if sec, ok := obj.(*corev1.Secret); !ok || sec.Name == s.secretName {
				s.key.Store(nil)
			}
		},
	})
	return err
}

func (s *Secret) update(obj any) {
	sec, ok := obj.(*corev1.Secret)
	if !ok || sec.Name != s.secretName {
		return
	}
	raw, present := sec.Data[s.dataKey]
	if !present {
		s.key.Store(nil)
		return
	}
	if err := s.Set(string(raw)); err != nil {
		// The error says what is wrong with the value, never the value.
		log.Log.WithName("webhook").Info("ignoring the webhook secret: notices are refused until it is fixed",
			"secret", s.secretName, "key", s.dataKey, "reason", err.Error())
		s.key.Store(nil)
	}
}
