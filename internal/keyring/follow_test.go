package keyring_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
)

func TestFollowTheServiceSecret(t *testing.T) {
	t.Run("sealing", func(t *testing.T) {
		keys := sealingKeys(t)
		testFollow(t, keyring.Sealing, keys[1], keys[2], ltiv1.SecretKeyPlatformKeys)
	})
	t.Run("signing", func(t *testing.T) {
		keys := signingKeys(t)
		testFollow(t, keyring.Signing, keys[1], keys[2], ltiv1.SecretKeySealingKeyring)
	})
}

// testFollow follows a Secret that holds keys of kind and, under otherKey, the other kind's.
func testFollow[K keyring.Key](t *testing.T, kind keyring.Kind[K], a, b K, otherKey string) {
	ctx := context.Background()
	secret := func(name, version string, keys ...K) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ltiop-system", Name: name, ResourceVersion: version},
			Type:       ltiv1.SecretTypeService,
			Data:       map[string][]byte{otherKey: []byte("the other key set, not ours")},
		}
		if len(keys) > 0 {
			data, err := kind.Encode(keys)
			if err != nil {
				t.Fatal(err)
			}
			s.Data[kind.DataKey()] = data
		}
		return s
	}
	informers := &informertest.FakeInformers{}
	var r keyring.Ring[K, []string]
	reg, err := r.Follow(ctx, informers, "ltiop-system", ltiv1.DefaultServiceSecretName, kind, ids[K])
	if err != nil || reg == nil {
		t.Fatalf("Follow: %v, %v", reg, err)
	}
	fake, err := informers.FakeInformerFor(ctx, &corev1.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	idA, idB := a.Info().ID, b.Info().ID
	expect := func(when string, want ...string) {
		t.Helper()
		if got := r.Load().IDs(); !slices.Equal(got, want) || !slices.Equal(r.Load().Data(), want) {
			t.Fatalf("%s: keys %v, prepared %v; want %v", when, got, r.Load().Data(), want)
		}
	}

	first := secret(ltiv1.DefaultServiceSecretName, "1", a)
	fake.Add(first)
	expect("after add", idA)
	loaded := r.Load()

	// Other Secrets, in this namespace or another, and a Secret of another type are ignored.
	fake.Add(secret("some-tool-key", "1", b))
	other := secret(ltiv1.DefaultServiceSecretName, "1", b)
	other.Namespace = "elsewhere"
	fake.Add(other)
	wrongType := secret(ltiv1.DefaultServiceSecretName, "2", b)
	wrongType.Type = corev1.SecretTypeOpaque
	fake.Update(first, wrongType)
	expect("after other Secrets", idA)

	// An update that leaves these keys alone (the other kind rotated) changes nothing.
	otherRotated := secret(ltiv1.DefaultServiceSecretName, "3", a)
	otherRotated.Data[otherKey] = []byte("the other key set, rotated")
	fake.Update(first, otherRotated)
	if r.Load() != loaded {
		t.Error("an unrelated update rebuilt the key set")
	}

	// Rotation: both keys.
	rotated := secret(ltiv1.DefaultServiceSecretName, "4", a, b)
	fake.Update(otherRotated, rotated)
	expect("after rotation", idA, idB)

	// Missing or damaged data keeps the last good keys.
	for _, data := range [][]byte{nil, []byte("garbage"), []byte("[]")} {
		damaged := secret(ltiv1.DefaultServiceSecretName, "5")
		if data != nil {
			damaged.Data[kind.DataKey()] = data
		}
		fake.Update(rotated, damaged)
		expect("after damaged data "+string(data), idA, idB)
	}

	// Deletion keeps them too: they stay in use while the controller recreates the Secret.
	fake.Delete(rotated)
	expect("after deletion", idA, idB)
	fake.Add(secret(ltiv1.DefaultServiceSecretName, "6", b))
	expect("after recreation", idB)
}
