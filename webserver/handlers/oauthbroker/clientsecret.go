package oauthbroker

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// oauth2ClientTTL bounds how long a resolved OAuth2 client Secret is reused: the Secret is
// the integrator's (not labelled, not cached), and OAuth2 flows are not a hot path.
const oauth2ClientTTL = 30 * time.Second

// SecretClients resolves a registration's OAuth2 client (spec.oauth2) from the Secret it
// names, read from the API server and kept for a short while. Its Resolve is the broker's
// Resolver in production.
type SecretClients struct {
	reader    client.Reader
	namespace string

	mu    sync.Mutex
	cache map[string]cachedClient
}

type cachedClient struct {
	id, secret string
	at         time.Time
}

// NewSecretClients reads client Secrets in namespace through reader.
func NewSecretClients(reader client.Reader, namespace string) *SecretClients {
	return &SecretClients{reader: reader, namespace: namespace, cache: map[string]cachedClient{}}
}

// Resolve is a Resolver.
func (o *SecretClients) Resolve(ctx context.Context, p *registry.Platform) (*ClientConfig, error) {
	oc := p.Spec.OAuth2
	if oc == nil {
		return nil, fmt.Errorf("registration %s has no spec.oauth2: %w", p.ID, ErrNotConfigured)
	}
	authorize, token, ok := oc.Endpoints(string(p.Spec.URL))
	if !ok {
		return nil, fmt.Errorf("registration %s: set spec.oauth2.authorizeUrl and tokenUrl: %w", p.ID, ErrNotConfigured)
	}
	id, secret, err := o.secret(ctx, oc.SecretName)
	if err != nil {
		return nil, err
	}
	return &ClientConfig{ClientID: id, ClientSecret: secret, AuthorizeURL: authorize, TokenURL: token, Scopes: oc.Scopes}, nil
}

func (o *SecretClients) secret(ctx context.Context, name string) (string, string, error) {
	o.mu.Lock()
	c, ok := o.cache[name]
	o.mu.Unlock()
	if ok && time.Since(c.at) < oauth2ClientTTL {
		return c.id, c.secret, nil
	}
	s := &corev1.Secret{}
	err := o.reader.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return "", "", fmt.Errorf("secret %s does not exist: %w", name, ErrNotConfigured)
	case err != nil:
		return "", "", err
	}
	id, secret := string(s.Data[ltiv1.OAuth2SecretClientID]), string(s.Data[ltiv1.OAuth2SecretClientSecret])
	if id == "" || secret == "" {
		return "", "", fmt.Errorf("secret %s lacks client_id or client_secret: %w", name, ErrNotConfigured)
	}
	o.mu.Lock()
	if len(o.cache) > 1000 {
		o.cache = map[string]cachedClient{}
	}
	o.cache[name] = cachedClient{id: id, secret: secret, at: time.Now()}
	o.mu.Unlock()
	return id, secret, nil
}
