package signing

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	"github.com/ltiop/ltiop/webserver/sessions"
)

func serviceSecret(t *testing.T, name string, ks ...Key) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ltiop-system", Name: name, ResourceVersion: "1"},
		Type:       sessions.SecretType,
		Data:       map[string][]byte{sessions.SecretKeyKeyring: []byte("the sealing keyring, not ours")},
	}
	if len(ks) > 0 {
		data, err := EncodeKeys(ks)
		if err != nil {
			t.Fatal(err)
		}
		s.Data[SecretKeyPlatformKeys] = data
	}
	return s
}

func TestAttachFollowsTheServiceSecret(t *testing.T) {
	ctx := context.Background()
	informers := &informertest.FakeInformers{}
	k, err := NewKeyring(nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := k.Attach(ctx, informers, "ltiop-system", sessions.DefaultSecretName)
	if err != nil || reg == nil {
		t.Fatalf("Attach: %v, %v", reg, err)
	}
	fake, err := informers.FakeInformerFor(ctx, &corev1.Secret{})
	if err != nil {
		t.Fatal(err)
	}

	a, b := fixtureKey(t, 0, t0), fixtureKey(t, 1, t0.Add(10*time.Minute))
	first := serviceSecret(t, sessions.DefaultSecretName, a)
	fake.Add(first)
	if !k.Ready() || !slices.Equal(k.KIDs(), []string{a.ID}) {
		t.Fatalf("after add: %v", k.KIDs())
	}
	jwks := k.JWKS()

	// Other Secrets, in this namespace or another, and a Secret of another type are ignored.
	fake.Add(serviceSecret(t, "some-tool-key", b))
	other := serviceSecret(t, sessions.DefaultSecretName, b)
	other.Namespace = "elsewhere"
	fake.Add(other)
	wrongType := serviceSecret(t, sessions.DefaultSecretName, b)
	wrongType.Type = corev1.SecretTypeOpaque
	fake.Update(first, wrongType)
	if !slices.Equal(k.KIDs(), []string{a.ID}) {
		t.Fatalf("another Secret changed the keys: %v", k.KIDs())
	}

	// An update that leaves the platform keys alone (a sealing-key rotation) changes nothing.
	sealingRotated := serviceSecret(t, sessions.DefaultSecretName, a)
	sealingRotated.Data[sessions.SecretKeyKeyring] = []byte("another sealing keyring")
	sealingRotated.ResourceVersion = "2"
	fake.Update(first, sealingRotated)
	if got := k.JWKS(); &got[0] != &jwks[0] {
		t.Error("an unrelated update rebuilt the key set")
	}

	// Rotation: both keys.
	rotated := serviceSecret(t, sessions.DefaultSecretName, a, b)
	rotated.ResourceVersion = "3"
	fake.Update(sealingRotated, rotated)
	if !slices.Equal(k.KIDs(), []string{a.ID, b.ID}) {
		t.Fatalf("after rotation: %v", k.KIDs())
	}

	// A Secret without readable platform keys keeps the last good ones.
	for _, data := range [][]byte{nil, []byte("garbage"), []byte("[]")} {
		damaged := serviceSecret(t, sessions.DefaultSecretName)
		damaged.ResourceVersion = "4"
		if data != nil {
			damaged.Data[SecretKeyPlatformKeys] = data
		}
		fake.Update(rotated, damaged)
		if !slices.Equal(k.KIDs(), []string{a.ID, b.ID}) {
			t.Fatalf("damaged keys %q changed the keyring: %v", data, k.KIDs())
		}
	}

	// Deletion keeps them too: ltiop keeps signing while the controller recreates the Secret.
	fake.Delete(rotated)
	if !k.Ready() || len(k.KIDs()) != 2 {
		t.Errorf("the keys went with the Secret: %v", k.KIDs())
	}
	recreated := serviceSecret(t, sessions.DefaultSecretName, b)
	fake.Add(recreated)
	if !slices.Equal(k.KIDs(), []string{b.ID}) {
		t.Errorf("after recreation: %v", k.KIDs())
	}
}
