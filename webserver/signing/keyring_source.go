package signing

import (
	"context"
	"fmt"

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
	logger := log.FromContext(ctx).WithName("signing").WithValues("secret", namespace+"/"+secretName)
	return sessions.FollowServiceSecret(ctx, c, namespace, secretName, SecretKeyPlatformKeys, logger, func(data []byte) error {
		keys, err := DecodeKeys(data)
		if err == nil {
			err = k.Replace(keys)
		}
		if err != nil {
			return fmt.Errorf("ignoring unreadable platform signing keys; keeping the %d keys already loaded: %w", len(k.load().keys), err)
		}
		logger.Info("platform signing keys loaded", "kids", k.KIDs())
		return nil
	})
}
