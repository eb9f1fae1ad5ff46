package main

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/keys"
)

// directKeys is how many distinct keys -direct cycles through: their JWKs are then further
// apart in /lti/keys than gzip's 32 KiB window, so repeats do not make it compress better.
const directKeys = 128

// createDirect writes registrations from..to-1 and their key Secrets straight to the API
// server while ltiop is stopped, the way the controller would have left them (a key each,
// directKeys distinct keys in turn); ltiop, started next, adopts the keys and writes the
// statuses. It measures a replica holding many registrations without waiting for the RSA
// keys of each, which dominate the time to create them through the API.
func createDirect(ctx context.Context, restCfg *rest.Config, from, to, parallel int) ([]created, error) {
	cfg := rest.CopyConfig(restCfg)
	cfg.QPS, cfg.Burst = 500, 1000
	k8s, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	say("generating %d keys", directKeys)
	pems := make([]keyData, directKeys)
	var wg sync.WaitGroup
	errs := make([]error, directKeys)
	for i := range pems {
		wg.Go(func() {
			k, err := keys.Generate()
			if err == nil {
				pems[i].pem, err = keys.EncodePrivateKey(k)
			}
			if err == nil {
				pems[i].kid, err = keys.KID(&k.PublicKey)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	out, _, err := fanOut(ctx, from, to, parallel, "written", func(ctx context.Context, i int) (created, error) {
		return createPair(ctx, k8s, i, pems[i%len(pems)])
	})
	return out, err
}

// keyData is a key as its Secret holds it.
type keyData struct {
	pem []byte
	kid string
}

// createPair writes registration i, as platformBody describes it, and its key Secret.
func createPair(ctx context.Context, k8s client.Client, i int, key keyData) (created, error) {
	body := platformBody(i)
	lms := body["url"].(string)
	reg := &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("lms-%05d", i)},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL(lms), ClientID: body["clientId"].(string), Name: body["name"].(string),
			AuthenticationEndpoint: ltiv1.EndpointURL(body["authenticationEndpoint"].(string)),
			AccesstokenEndpoint:    ltiv1.EndpointURL(body["accesstokenEndpoint"].(string)),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms + "/jwks"},
		},
	}
	countOwn("POST platformregistrations")
	if err := k8s.Create(ctx, reg); err != nil {
		return created{}, fmt.Errorf("creating registration %s: %w", reg.Name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: controllers.KeySecretName(reg.Name),
			Labels: map[string]string{ltiv1.LabelManagedBy: ltiv1.ManagedByValue, ltiv1.LabelPlatformRegistration: reg.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ltiv1.GroupVersion.String(), Kind: "PlatformRegistration",
				Name: reg.Name, UID: reg.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey,
		Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: key.pem, ltiv1.SecretKeyKID: []byte(key.kid)},
	}
	countOwn("POST secrets")
	if err := k8s.Create(ctx, secret); err != nil {
		return created{}, fmt.Errorf("creating Secret %s: %w", secret.Name, err)
	}
	return created{ID: reg.Name, URL: lms, ClientID: reg.Spec.ClientID}, nil
}
