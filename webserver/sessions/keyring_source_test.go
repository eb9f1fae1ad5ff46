package sessions

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
)

func serviceSecret(t *testing.T, name string, keys ...Key) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ltiop-system", Name: name, ResourceVersion: "1"},
		Type:       SecretType,
		Data:       map[string][]byte{},
	}
	if len(keys) > 0 {
		data, err := EncodeKeyring(keys)
		if err != nil {
			t.Fatal(err)
		}
		s.Data[SecretKeyKeyring] = data
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
	reg, err := k.Attach(ctx, informers, "ltiop-system", DefaultSecretName)
	if err != nil || reg == nil {
		t.Fatalf("Attach: %v, %v", reg, err)
	}
	fake, err := informers.FakeInformerFor(ctx, &corev1.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func() []string { return k.IDs() }

	a, b := mustKey(t, t0, 0), mustKey(t, t0, time.Minute)
	first := serviceSecret(t, DefaultSecretName, a)
	fake.Add(first)
	if !k.Ready() || !slices.Equal(ids(), []string{a.ID}) {
		t.Fatalf("after add: %v", ids())
	}
	tok, err := k.Seal(PurposeLTIK, []byte(`{}`), time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// Other Secrets, in this namespace or another, and a Secret of another type are ignored.
	fake.Add(serviceSecret(t, "some-tool-key", b))
	other := serviceSecret(t, DefaultSecretName, b)
	other.Namespace = "elsewhere"
	fake.Add(other)
	wrongType := serviceSecret(t, DefaultSecretName, b)
	wrongType.Type = corev1.SecretTypeOpaque
	fake.Update(first, wrongType)
	if !slices.Equal(ids(), []string{a.ID}) {
		t.Fatalf("another Secret changed the keys: %v", ids())
	}

	// Rotation: both keys.
	rotated := serviceSecret(t, DefaultSecretName, a, b)
	rotated.ResourceVersion = "2"
	fake.Update(first, rotated)
	if !slices.Equal(ids(), []string{a.ID, b.ID}) {
		t.Fatalf("after rotation: %v", ids())
	}

	// Damaged data keeps the last good keys.
	for _, data := range [][]byte{nil, []byte("garbage"), []byte("[]")} {
		damaged := serviceSecret(t, DefaultSecretName)
		damaged.ResourceVersion = "3"
		if data != nil {
			damaged.Data[SecretKeyKeyring] = data
		}
		fake.Update(rotated, damaged)
		if !slices.Equal(ids(), []string{a.ID, b.ID}) {
			t.Fatalf("damaged keyring %q changed the keys: %v", data, ids())
		}
	}

	// Deletion keeps them too: tokens keep opening while the controller recreates the Secret.
	fake.Delete(rotated)
	if _, _, err := k.Open(PurposeLTIK, tok, time.Now()); err != nil {
		t.Errorf("a token stopped opening when the Secret was deleted: %v", err)
	}
	recreated := serviceSecret(t, DefaultSecretName, b)
	fake.Add(recreated)
	if !slices.Equal(ids(), []string{b.ID}) {
		t.Errorf("after recreation: %v", ids())
	}
}
