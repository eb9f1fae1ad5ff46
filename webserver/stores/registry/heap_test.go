package registry

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/test/utils/testheap"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

// keyedRegistration is a registration and its key Secret as the informer cache holds them:
// each with its own copy of the bytes, and the status the controller writes.
func keyedRegistration(t testing.TB, i int, pems [][]byte) (*ltiv1.PlatformRegistration, *corev1.Secret) {
	reg := platformRegistration(fmt.Sprintf("lms-%05d-heap-example", i), fmt.Sprintf("https://lms-%05d.heap.example", i), fmt.Sprint(i), time.Now())
	secret := keySecret0(reg, bytes.Clone(pems[i%len(pems)]))
	k, err := newToolKey(secret.Data[ltiv1.SecretKeyPrivateKey])
	if err != nil {
		t.Fatal(err)
	}
	private, err := keys.ParsePrivateKey(secret.Data[ltiv1.SecretKeyPrivateKey])
	if err != nil {
		t.Fatal(err)
	}
	publicPEM, err := keys.PublicKeyPEM(&private.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	reg.Status.KID, reg.Status.PublicKey = k.KID, strings.Clone(publicPEM)
	return reg, secret
}

// The registry's own memory per registration, beside what the informer cache holds: its
// snapshot, indexes, key set and share of /lti/keys. A parsed private key (~4.5 KB of
// precomputed values) or a second copy of the public key PEM per registration is over
// the bound; at 10,000 registrations each KB here is 10 MB of heap.
func TestRegistryHeapPerRegistration(t *testing.T) {
	const n = 400
	pems := [][]byte{testkeys.RSAKeyPEM(t, 0), testkeys.RSAKeyPEM(t, 1), testkeys.RSAKeyPEM(t, 2)}
	regs := make([]*ltiv1.PlatformRegistration, n)
	secrets := make([]*corev1.Secret, n)
	for i := range n {
		regs[i], secrets[i] = keyedRegistration(t, i, pems)
	}
	r := New()
	freshJWKS(t, r)
	before := testheap.Live()
	for i := range n {
		r.Apply(regs[i])
		r.ApplySecret(noLog, secrets[i])
	}
	freshJWKS(t, r)
	for _, p := range r.List(nil) { // what GET /api/platforms reads
		if p.Key == nil || p.PublicKeyPEM() == "" {
			t.Fatalf("registration %s has no key", p.ID)
		}
	}
	per := (testheap.Live() - before) / n
	runtime.KeepAlive(regs) // the informer cache's objects
	runtime.KeepAlive(secrets)
	runtime.KeepAlive(r)
	t.Logf("the registry holds %d bytes per registration", per)
	if per > 2560 {
		t.Errorf("the registry holds %d bytes per registration, want at most 2.5 KiB", per)
	}
}

// The tool key signs with its private key, parsed when first used; its signatures verify
// with the key it publishes.
func TestToolKeySignsWithTheSecretsKey(t *testing.T) {
	private := testkeys.RSAKey(t, 1)
	k, err := newToolKey(testkeys.RSAKeyPEM(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if pub, ok := k.Public().(*rsa.PublicKey); !ok || !pub.Equal(&private.PublicKey) {
		t.Fatalf("Public() = %v, want the Secret's public key", k.Public())
	}
	digest := sha256.Sum256([]byte("client assertion"))
	sig, err := k.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPKCS1v15(&private.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
		t.Fatalf("the signature does not verify with the Secret's key: %v", err)
	}
	if !strings.Contains(string(k.set.Bytes()), `"kid":"`+k.KID+`"`) || !bytes.HasPrefix(k.jwk(), []byte(`{`)) || !bytes.HasSuffix(k.jwk(), []byte(`}`)) {
		t.Fatalf("key set %s, JWK %s", k.set.Bytes(), k.jwk())
	}
}

// Parsed private keys are bounded: signing with more keys than maxParsedKeys keeps only
// the last used parsed, and a key dropped from the cache signs again when asked.
func TestParsedKeysAreBounded(t *testing.T) {
	c := newParsedKeyCache(4)
	pems := [][]byte{testkeys.RSAKeyPEM(t, 0), testkeys.RSAKeyPEM(t, 1), testkeys.RSAKeyPEM(t, 2)}
	var ks []*ToolKey
	for i := range 10 {
		k, err := newToolKey(bytes.Clone(pems[i%len(pems)]))
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	for _, k := range ks {
		if _, err := c.get(k); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.len(); got != 4 {
		t.Fatalf("%d keys parsed after 10 uses of a cache of 4", got)
	}
	first, err := c.get(ks[0]) // dropped, parsed again
	if err != nil || !first.PublicKey.Equal(&testkeys.RSAKey(t, 0).PublicKey) {
		t.Fatalf("the first key again: %v, %v", first, err)
	}
	if got := c.len(); got != 4 {
		t.Fatalf("%d keys parsed, want the bound 4", got)
	}
	if _, err := c.get(&ToolKey{KID: "public-only"}); err == nil {
		t.Fatal("a key without a private half must not sign")
	}
}

// BenchmarkToolKeySign is a client assertion's signature with a parsed key (hit) and
// with one parsed first (a key not used among the last maxParsedKeys).
func BenchmarkToolKeySign(b *testing.B) {
	k, err := newToolKey(testkeys.RSAKeyPEM(b, 0))
	if err != nil {
		b.Fatal(err)
	}
	digest := sha256.Sum256([]byte("client assertion"))
	b.Run("parsed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			parsedKeys.mu.Lock()
			if e, ok := parsedKeys.byKey[k]; ok {
				parsedKeys.order.Remove(e)
				delete(parsedKeys.byKey, k)
			}
			parsedKeys.mu.Unlock()
			if _, err := k.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
				b.Fatal(err)
			}
		}
	})
}
