package app

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

// notices builds the Platform Notification Service of tool mode: the webhook signing secret,
// followed in its Secret like the API key, and the sender under the outbound policy.
func notices(ctx context.Context, restCfg *rest.Config, mgr ctrl.Manager, cfg *config.Config, policy outbound.Policy) (toolmode.NoticeOptions, error) {
	n := cfg.Notices
	secret := webhook.NewSecret(n.WebhookSecret, n.WebhookSecretKey)
	c, err := cache.New(restCfg, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", n.WebhookSecret)},
		},
	})
	if err != nil {
		return toolmode.NoticeOptions{}, fmt.Errorf("creating the cache of Secret %s: %w", n.WebhookSecret, err)
	}
	if err := secret.Attach(ctx, c); err != nil {
		return toolmode.NoticeOptions{}, err
	}
	if err := mgr.Add(cacheRunnable{c}); err != nil {
		return toolmode.NoticeOptions{}, err
	}
	policy.Timeout = n.WebhookTimeout.Duration
	return toolmode.NoticeOptions{
		WebhookURL:  n.WebhookURL,
		Webhook:     &webhook.Sender{Client: webhook.NewClient(policy), Key: secret.Key},
		KeyLifetime: n.KeyLifetime.Duration,
		MaxBatch:    n.MaxBatch,
	}, nil
}
