package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
)

func platformRegistration(name, issuer, clientID string, created time.Time) *ltiv1.PlatformRegistration {
	return &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(created), Generation: 1,
		},
		Spec: ltiv1.PlatformRegistrationSpec{URL: ltiv1.EndpointURL(issuer), ClientID: clientID, Name: name},
	}
}

func keySecret(t testing.TB, owner *ltiv1.PlatformRegistration) *corev1.Secret {
	private, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := keys.EncodePrivateKey(private)
	if err != nil {
		t.Fatal(err)
	}
	return keySecret0(owner, pemBytes)
}

// keySecret0 is owner's key Secret holding pemBytes.
func keySecret0(owner *ltiv1.PlatformRegistration, pemBytes []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: owner.Name + "-tool-key", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: ltiv1.GroupVersion.String(), Kind: "PlatformRegistration", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
		}}},
		Type: ltiv1.SecretTypeToolKey,
		Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pemBytes},
	}
}

func noLog(string, ...any) {}

// T-QUIRK-01: registrations are keyed by (issuer, client_id), never by issuer alone.
func TestLookupByIssuerAndClient(t *testing.T) {
	r := New()
	now := time.Now()
	r.Apply(platformRegistration("a", "https://canvas.instructure.com", "1", now))
	r.Apply(platformRegistration("b", "https://canvas.instructure.com", "2", now))
	if p := r.Lookup("https://canvas.instructure.com", "2"); p == nil || p.ID != "b" {
		t.Fatalf("Lookup(canvas, 2) = %v, want b", p)
	}
	if p := r.Lookup("https://canvas.instructure.com", "3"); p != nil {
		t.Fatalf("Lookup of an unknown client = %v, want nil", p.ID)
	}
	if p := r.Lookup("https://canvas.instructure.com/", "1"); p != nil {
		t.Fatal("the issuer is compared byte for byte")
	}
}

func TestDuplicatesResolveToTheOldest(t *testing.T) {
	r := New()
	now := time.Now()
	r.Apply(platformRegistration("newer", "https://lms", "c", now))
	r.Apply(platformRegistration("older", "https://lms", "c", now.Add(-time.Hour)))
	if p := r.Lookup("https://lms", "c"); p.ID != "older" {
		t.Fatalf("Lookup = %s, want older", p.ID)
	}
	r.Forget(platformRegistration("older", "https://lms", "c", now.Add(-time.Hour)))
	if p := r.Lookup("https://lms", "c"); p == nil || p.ID != "newer" {
		t.Fatalf("after deleting the older one, Lookup = %v, want newer", p)
	}
	// Changing the client of a registration moves it in the index.
	moved := platformRegistration("newer", "https://lms", "d", now)
	r.Apply(moved)
	if r.Lookup("https://lms", "c") != nil || r.Lookup("https://lms", "d") == nil {
		t.Fatal("an updated registration must be found under its new key only")
	}
}

func TestKeysJoinByOwnerUIDAndJWKSFollowsChanges(t *testing.T) {
	r := New()
	reg := platformRegistration("a", "https://lms", "c", time.Now())
	secret := keySecret(t, reg)
	r.ApplySecret(noLog, secret) // the Secret may arrive before its registration
	if got := freshJWKS(t, r); string(got.Bytes()) != `{"keys":[]}` {
		t.Fatalf("JWKS without registrations = %s", got.Bytes())
	}
	r.Apply(reg)
	p := r.Get("a")
	if p.Key == nil || p.PublicKeyPEM() == "" || p.Key.KID == "" {
		t.Fatal("the registration must carry its key")
	}
	first := freshJWKS(t, r)
	if !strings.Contains(string(first.Bytes()), p.Key.KID) {
		t.Fatalf("JWKS %s lacks the key %s", first.Bytes(), p.Key.KID)
	}
	if got, fresh := r.JWKS(); got != first || !fresh {
		t.Fatal("an unchanged JWKS must be served from memory, not rebuilt")
	}

	// A Secret owned by an earlier registration of the same name is not this one's key.
	stale := platformRegistration("a", "https://lms", "c", time.Now())
	stale.UID = "another-uid"
	r.Apply(stale)
	if r.Get("a").Key != nil {
		t.Fatal("keys join by owner UID, not by name")
	}
	r.Apply(reg)
	r.ForgetSecret(secret)
	if got := freshJWKS(t, r); r.Get("a").Key != nil || string(got.Bytes()) != `{"keys":[]}` {
		t.Fatalf("a deleted Secret takes its key out of the JWKS: %s", got.Bytes())
	}
}

func TestWaitForWakesOnChange(t *testing.T) {
	r := New()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(20 * time.Millisecond)
		r.Apply(platformRegistration("late", "https://lms", "c", time.Now()))
	}()
	p, ok := r.WaitFor(ctx, "late", func(p *Platform) bool { return p != nil })
	if !ok || p.ID != "late" {
		t.Fatalf("WaitFor = %v, %v", p, ok)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if _, ok := r.WaitFor(short, "never", func(p *Platform) bool { return p != nil }); ok {
		t.Fatal("WaitFor must give up when its context ends")
	}
}

// BenchmarkLookup looks registrations up by (url, clientId) with 10,000 loaded. The lookup
// is a map read: constant time, no copy of the list.
func BenchmarkLookup(b *testing.B) {
	r := New()
	now := time.Now()
	const n = 10000
	for i := range n {
		r.Apply(platformRegistration(fmt.Sprintf("reg-%d", i), fmt.Sprintf("https://lms-%d.example", i%100), fmt.Sprintf("client-%d", i), now))
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		k := i % n
		if r.Lookup(fmt.Sprintf("https://lms-%d.example", k%100), "client-"+fmt.Sprint(k)) == nil {
			b.Fatal("not found")
		}
		i++
	}
}

// BenchmarkLookupHit measures the lookup alone, with the key strings prepared.
func BenchmarkLookupHit(b *testing.B) {
	r := New()
	now := time.Now()
	const n = 10000
	issuers, clients := make([]string, n), make([]string, n)
	for i := range n {
		issuers[i], clients[i] = fmt.Sprintf("https://lms-%d.example", i%100), fmt.Sprintf("client-%d", i)
		r.Apply(platformRegistration(fmt.Sprintf("reg-%d", i), issuers[i], clients[i], now))
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if r.Lookup(issuers[i%n], clients[i%n]) == nil {
			b.Fatal("not found")
		}
		i++
	}
}

// T-LOGIN-03: logins without client_id find the registrations of their issuer only.
func TestByIssuer(t *testing.T) {
	r := New()
	now := time.Now()
	r.Apply(platformRegistration("a", "https://lms-1", "1", now))
	r.Apply(platformRegistration("b", "https://lms-1", "2", now))
	r.Apply(platformRegistration("c", "https://lms-2", "1", now))
	r.Apply(platformRegistration("dup", "https://lms-1", "2", now.Add(time.Hour))) // newer duplicate of b
	ids := func(ps []*Platform) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := ids(r.ByIssuer("https://lms-1")); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("ByIssuer(lms-1) = %v, want [a b] (the duplicate is not in use)", got)
	}
	r.Forget(platformRegistration("a", "https://lms-1", "1", now))
	r.Forget(platformRegistration("b", "https://lms-1", "2", now))
	if got := ids(r.ByIssuer("https://lms-1")); !slices.Equal(got, []string{"dup"}) {
		t.Fatalf("after deletions ByIssuer(lms-1) = %v, want [dup]", got)
	}
	r.Forget(platformRegistration("dup", "https://lms-1", "2", now.Add(time.Hour)))
	if got := r.ByIssuer("https://lms-1"); len(got) != 0 {
		t.Fatalf("ByIssuer of a gone issuer = %v", got)
	}
}

// T-LOGIN-03: a login without client_id finds every client of its issuer, whether the
// issuer has one client (the usual case) or hundreds (Canvas cloud's issuer), as they
// come and go.
func TestByIssuerFollowsClients(t *testing.T) {
	r := New()
	now := time.Now()
	ids := func() []string {
		var out []string
		for _, p := range r.ByIssuer("https://canvas.instructure.com") {
			out = append(out, p.Spec.ClientID)
		}
		slices.Sort(out)
		return out
	}
	var want []string
	for i := range 20 {
		id := fmt.Sprintf("client-%02d", i)
		r.Apply(platformRegistration("reg-"+id, "https://canvas.instructure.com", id, now))
		want = append(want, id)
		if got := ids(); !slices.Equal(got, want) {
			t.Fatalf("after adding %s: %v, want %v", id, got, want)
		}
	}
	r.Apply(platformRegistration("other", "https://moodle.example", "client-00", now))
	for i := range 18 {
		id := fmt.Sprintf("client-%02d", i)
		r.Forget(platformRegistration("reg-"+id, "https://canvas.instructure.com", id, now))
	}
	if got := ids(); !slices.Equal(got, []string{"client-18", "client-19"}) {
		t.Fatalf("after removals: %v", got)
	}
	if got := r.ByIssuer("https://moodle.example"); len(got) != 1 || got[0].ID != "other" {
		t.Fatalf("another issuer's clients: %v", got)
	}
	r.Forget(platformRegistration("reg-client-18", "https://canvas.instructure.com", "client-18", now))
	r.Forget(platformRegistration("reg-client-19", "https://canvas.instructure.com", "client-19", now))
	if got := ids(); len(got) != 0 || len(r.clients) != 1 {
		t.Fatalf("no clients left: %v, %d issuers indexed", got, len(r.clients))
	}
}
