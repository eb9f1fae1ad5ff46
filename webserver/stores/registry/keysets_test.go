package registry

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/test/utils/testcpu"
	"github.com/ltiop/ltiop/webserver/stores/precomputed"
)

// freshJWKS awaits the rebuild of /lti/keys after the changes made so far.
func freshJWKS(t testing.TB, r *Registry) *precomputed.Body {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		set, fresh := r.JWKS()
		if fresh {
			return set
		}
		if time.Now().After(deadline) {
			t.Fatal("/lti/keys was not rebuilt within 10s of a change")
		}
		time.Sleep(time.Millisecond)
	}
}

func withKey(t testing.TB, r *Registry, name string) *Platform {
	t.Helper()
	reg := platformRegistration(name, "https://lms", "client-"+name, time.Now())
	r.Apply(reg)
	r.ApplySecret(noLog, keySecret(t, reg))
	return r.Get(name)
}

func kids(t *testing.T, body []byte) []string {
	t.Helper()
	set, err := jwk.Parse(body)
	if err != nil {
		t.Fatalf("key set %s: %v", body, err)
	}
	var out []string
	for i := range set.Len() {
		k, _ := set.Key(i)
		kid, _ := k.KeyID()
		out = append(out, kid)
	}
	return out
}

// T-JWKS-04: a registration's key set holds its own key only (with kid, alg RS256, use
// sig), small enough that 10,000 tenants do not make every LMS download megabytes.
func TestKeySetHoldsOnlyItsOwnKey(t *testing.T) {
	r := New()
	a, b := withKey(t, r, "a"), withKey(t, r, "b")
	set, found := r.KeySet("a")
	if !found || set == nil {
		t.Fatalf("KeySet(a) = %v, %v", set, found)
	}
	if got := kids(t, set.Bytes()); len(got) != 1 || got[0] != a.Key.KID {
		t.Fatalf("a's key set holds %v, want only %s (not b's %s)", got, a.Key.KID, b.Key.KID)
	}
	if n := len(set.Bytes()); n >= 2048 {
		t.Fatalf("one registration's key set is %d bytes, want < 2 KB", n)
	}
	parsed, _ := jwk.Parse(set.Bytes())
	k, _ := parsed.Key(0)
	if alg, _ := k.Algorithm(); alg.String() != "RS256" {
		t.Fatalf("alg = %v", alg)
	}
	if use, _ := k.KeyUsage(); use != "sig" {
		t.Fatalf("use = %q", use)
	}
	if all := kids(t, freshJWKS(t, r).Bytes()); len(all) != 2 {
		t.Fatalf("/lti/keys holds %v, want both keys", all)
	}

	if set, found := r.KeySet("nobody"); found || set != nil {
		t.Fatal("an unknown id has no key set")
	}
	r.Apply(platformRegistration("pending", "https://lms", "p", time.Now()))
	if set, found := r.KeySet("pending"); !found || set != nil {
		t.Fatalf("a registration whose key is not made yet: %v, %v", set, found)
	}
}

// A re-registered dynamic registration's LMS was told another name: it serves too, and
// never shadows a registration that really has that name.
func TestKeySetAlias(t *testing.T) {
	r := New()
	reg := platformRegistration("a", "https://lms", "c", time.Now())
	reg.Annotations = map[string]string{ltiv1.AnnotationKeySetAlias: "lms-told-this"}
	r.Apply(reg)
	r.ApplySecret(noLog, keySecret(t, reg))
	own, _ := r.KeySet("a")
	if alias, found := r.KeySet("lms-told-this"); !found || alias != own {
		t.Fatal("the alias must serve the registration's key set")
	}

	shadow := platformRegistration("b", "https://lms", "d", time.Now())
	shadow.Annotations = map[string]string{ltiv1.AnnotationKeySetAlias: "a"}
	r.Apply(shadow)
	if got, _ := r.KeySet("a"); got != own {
		t.Fatal("an alias must not shadow a registration's own name")
	}

	r.Forget(reg)
	if _, found := r.KeySet("lms-told-this"); found {
		t.Fatal("a deleted registration's alias must go with it")
	}
}

// A request for /lti/keys never waits: not for a rebuild, not for the registry's lock. The
// test holds the write lock (as a writer would) across a change, and JWKS still answers
// with the last set, marked as not fresh; once the lock is released the rebuild follows.
func TestJWKSNeverWaits(t *testing.T) {
	r := New()
	withKey(t, r, "a")
	before := freshJWKS(t, r)

	reg := platformRegistration("b", "https://lms", "b", time.Now())
	secret := keySecret(t, reg)
	r.Apply(reg)
	r.mu.Lock()
	r.notify() // a change whose rebuild cannot read the registry yet
	answered := make(chan bool)
	go func() {
		set, fresh := r.JWKS()
		answered <- set.ETag() == before.ETag() && !fresh
	}()
	select {
	case ok := <-answered:
		if !ok {
			t.Error("during a rebuild JWKS must answer the previous set, marked not fresh")
		}
	case <-time.After(10 * time.Second):
		t.Error("JWKS waited for the registry lock")
	}
	r.mu.Unlock()
	r.ApplySecret(noLog, secret)
	if got := kids(t, freshJWKS(t, r).Bytes()); len(got) != 2 {
		t.Fatalf("after the change /lti/keys holds %v", got)
	}
}

// Many changes in a burst are rebuilt together, not once each.
func TestJWKSRebuildsCoalesce(t *testing.T) {
	r := New()
	const n = 200
	key := withKey(t, r, "keyed").Key
	for i := range n {
		reg := platformRegistration(fmt.Sprintf("reg-%d", i), "https://lms", fmt.Sprint(i), time.Now())
		r.Apply(reg)
		r.mu.Lock()
		r.keysByUID[reg.UID] = key
		r.setKey(reg.UID, key)
		r.mu.Unlock()
	}
	set := freshJWKS(t, r)
	if got := kids(t, set.Bytes()); len(got) != n+1 {
		t.Fatalf("/lti/keys holds %d keys, want %d", len(got), n+1)
	}
}

// syntheticKey is a key for the 10,000-registration benchmarks: a random 2048-bit public
// modulus, published like a real key. Generating 10,000 real keys would take minutes, and
// serving never looks at the private half.
func syntheticKey(b *testing.B) *ToolKey {
	buf := make([]byte, keys.Bits/8)
	_, _ = rand.Read(buf)
	n := new(big.Int).SetBytes(buf)
	n.SetBit(n, keys.Bits-1, 1)
	n.SetBit(n, 0, 1)
	pub := &rsa.PublicKey{N: n, E: 65537}
	kid, err := keys.KID(pub)
	if err != nil {
		b.Fatal(err)
	}
	k := &ToolKey{KID: kid}
	if err := k.publish([]*rsa.PublicKey{pub}); err != nil {
		b.Fatal(err)
	}
	return k
}

func tenThousand(b *testing.B) *Registry {
	r := New()
	for i := range 10000 {
		reg := platformRegistration(fmt.Sprintf("reg-%05d", i), "https://lms", fmt.Sprint(i), time.Now())
		r.Apply(reg)
		k := syntheticKey(b)
		r.mu.Lock()
		r.keysByUID[reg.UID] = k
		r.setKey(reg.UID, k)
		r.mu.Unlock()
	}
	freshJWKS(b, r)
	return r
}

func serveBench(b *testing.B, set func() *precomputed.Body, header http.Header) {
	req := httptest.NewRequest("GET", "/lti/keys", nil)
	req.Header = header
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		set().Serve(rec, req)
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "body-bytes")
}

// BenchmarkKeySet serves one registration's key set out of 10,000.
func BenchmarkKeySet(b *testing.B) {
	r := tenThousand(b)
	one := func() *precomputed.Body { s, _ := r.KeySet("reg-04711"); return s }
	b.Run("identity", func(b *testing.B) { serveBench(b, one, http.Header{}) })
	b.Run("gzip", func(b *testing.B) { serveBench(b, one, http.Header{"Accept-Encoding": {"gzip"}}) })
	b.Run("not-modified", func(b *testing.B) {
		serveBench(b, one, http.Header{"If-None-Match": {one().ETag()}})
	})
}

// BenchmarkJWKS serves /lti/keys with 10,000 registrations.
func BenchmarkJWKS(b *testing.B) {
	r := tenThousand(b)
	all := func() *precomputed.Body { s, _ := r.JWKS(); return s }
	b.Run("identity", func(b *testing.B) { serveBench(b, all, http.Header{}) })
	b.Run("gzip", func(b *testing.B) { serveBench(b, all, http.Header{"Accept-Encoding": {"gzip"}}) })
	b.Run("not-modified", func(b *testing.B) {
		serveBench(b, all, http.Header{"If-None-Match": {all().ETag()}})
	})
}

// BenchmarkJWKSRebuild is the background rebuild of /lti/keys at 10,000 registrations
// (copy, sort, join, hash, gzip): what a change costs, off the request path.
// "cpu-ms/op" is the process's CPU time per rebuild, which a busy machine does not inflate
// as it does the wall time.
func BenchmarkJWKSRebuild(b *testing.B) {
	r := tenThousand(b)
	for _, fresh := r.JWKS(); !fresh; _, fresh = r.JWKS() {
		runtime.Gosched() // the build the registrations started, not counted
	}
	b.ReportAllocs()
	cpu := testcpu.Process()
	for b.Loop() {
		r.all.rebuild(r)
	}
	b.ReportMetric(float64(testcpu.Process()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkJWKSWhileChanging reads /lti/keys while a registration changes a thousand
// times a second, as when registrations are being created: a read is an atomic load
// whatever the rebuilds in the background are doing.
func BenchmarkJWKSWhileChanging(b *testing.B) {
	r := tenThousand(b)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		reg := platformRegistration("churn", "https://lms", "churn", time.Now())
		tick := time.NewTicker(time.Millisecond) // a thousand changes a second
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			reg.Generation = int64(i)
			r.Apply(reg)
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if set, _ := r.JWKS(); len(set.Bytes()) == 0 {
				b.Fatal("empty")
			}
		}
	})
	b.StopTimer()
	close(stop)
	<-done
}
