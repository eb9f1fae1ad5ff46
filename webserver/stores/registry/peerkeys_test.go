package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// jwkMap renders a public key as a JWK with the given extra members.
func jwkMap(t testing.TB, pub any, members map[string]string) map[string]any {
	t.Helper()
	k, err := jwk.Import(pub)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(k)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for name, v := range members {
		m[name] = v
	}
	return m
}

// platformJWKS is an LMS key-set endpoint whose content and headers a test can change.
type platformJWKS struct {
	keys         atomic.Value // []map[string]any
	cacheControl atomic.Value // string
	fail         atomic.Bool
	delay        atomic.Int64 // time.Duration before answering
	hits         atomic.Int32
	srv          *httptest.Server
}

func newPlatformJWKS(t testing.TB, keys ...map[string]any) *platformJWKS {
	p := &platformJWKS{}
	p.keys.Store(keys)
	p.cacheControl.Store("max-age=600")
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		if r.Header.Get("User-Agent") == "" {
			t.Error("key set fetched without a User-Agent")
		}
		if d := time.Duration(p.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		if p.fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Cache-Control", p.cacheControl.Load().(string))
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": p.keys.Load()})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func jwksPlatform(url string) *Platform {
	return &Platform{ID: "p", Spec: ltiv1.PlatformRegistrationSpec{AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: url}}}
}

func TestKeySetIsCachedAndUnknownKidRefetchedOnceRateLimited(t *testing.T) {
	k1, k2 := testkeys.RSAKey(t, 0), testkeys.RSAKey(t, 1)
	lms := newPlatformJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1", "alg": "RS256", "use": "sig"}))
	pk := NewPeerKeys(loopbackClient())
	clock := time.Now()
	pk.now = func() time.Time { return clock }
	p := jwksPlatform(lms.srv.URL)
	ctx := context.Background()

	got, err := pk.PlatformKey(ctx, p, "k1")
	if err != nil || !got.Equal(&k1.PublicKey) {
		t.Fatalf("Key(k1) = %v, %v", got, err)
	}
	if _, err := pk.PlatformKey(ctx, p, "k1"); err != nil || lms.hits.Load() != 1 {
		t.Fatalf("T-JWKS-01: a cached key set is not fetched again (hits %d, err %v)", lms.hits.Load(), err)
	}

	// The platform rotates: k2 appears. The unknown kid triggers one refetch (T-JWKS-02).
	lms.keys.Store([]map[string]any{
		jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}),
		jwkMap(t, &k2.PublicKey, map[string]string{"kid": "k2"}),
	})
	clock = clock.Add(refetchInterval)
	if got, err := pk.PlatformKey(ctx, p, "k2"); err != nil || !got.Equal(&k2.PublicKey) {
		t.Fatalf("T-JWKS-02: new kid after refetch = %v, %v", got, err)
	}
	hits := lms.hits.Load()
	for range 5 {
		if _, err := pk.PlatformKey(ctx, p, "nope"); !errors.Is(err, lti.ErrUnknownKey) {
			t.Fatalf("T-TOK-08: an unknown kid is ErrUnknownKey, got %v", err)
		}
	}
	if lms.hits.Load() != hits {
		t.Fatalf("T-JWKS-02: refetches of an unknown kid are rate-limited (%d extra fetches)", lms.hits.Load()-hits)
	}
}

func TestKeySetHonoursMaxAgeWithinBounds(t *testing.T) {
	for header, want := range map[string]time.Duration{
		"":                             defaultKeySetTTL,
		"max-age=120":                  2 * time.Minute,
		"public, max-age=1":            minKeySetTTL,
		"max-age=999999999":            maxKeySetTTL,
		"no-cache":                     minKeySetTTL,
		"private, max-age=\"900\"":     15 * time.Minute,
		"max-age=abc, must-revalidate": defaultKeySetTTL,
	} {
		if got := cacheTTL(header); got != want {
			t.Errorf("cacheTTL(%q) = %s, want %s", header, got, want)
		}
	}
}

func TestKeySetOutageIsNotAnUnknownKey(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	lms := newPlatformJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	lms.cacheControl.Store("max-age=60")
	pk := NewPeerKeys(loopbackClient())
	clock := time.Now()
	pk.now = func() time.Time { return clock }
	p := jwksPlatform(lms.srv.URL)
	ctx := context.Background()

	lms.fail.Store(true)
	if _, err := pk.PlatformKey(ctx, p, "k1"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
		t.Fatalf("T-JWKS-03: a key set that cannot be fetched is an outage, got %v", err)
	}
	lms.fail.Store(false)
	clock = clock.Add(failureTTL + failureJitter) // past the failure memory
	if _, err := pk.PlatformKey(ctx, p, "k1"); err != nil {
		t.Fatal(err)
	}
	// Expired cache and the platform down: the known key keeps working.
	lms.fail.Store(true)
	clock = clock.Add(2 * time.Minute)
	if _, err := pk.PlatformKey(ctx, p, "k1"); err != nil {
		t.Fatalf("a cached key is served while the platform is down: %v", err)
	}
}

// A failing key set does not sink the replica: its failure is remembered, so a burst of
// lookups costs at most one more fetch, and each lookup is an outage, never an unknown key.
func TestKeySetFailureIsRemembered(t *testing.T) {
	lms := newPlatformJWKS(t)
	lms.fail.Store(true)
	pk := NewPeerKeys(loopbackClient())
	clock := time.Now()
	pk.now = func() time.Time { return clock }
	p := jwksPlatform(lms.srv.URL)
	for i := range 25 {
		if _, err := pk.PlatformKey(context.Background(), p, "k1"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
			t.Fatalf("T-JWKS-03: lookup %d during an outage = %v, want an outage", i, err)
		}
		clock = clock.Add(200 * time.Millisecond) // 25 lookups over 5 s: inside the failure memory
	}
	if hits := lms.hits.Load(); hits > 2 {
		t.Fatalf("25 lookups against a failing key set made %d fetches, want at most 2", hits)
	}
}

// Concurrent lookups share one fetch instead of queueing one fetch each behind the other.
func TestKeySetConcurrentLookupsShareOneFetch(t *testing.T) {
	lms := newPlatformJWKS(t)
	lms.fail.Store(true)
	lms.delay.Store(int64(time.Second))
	pk := NewPeerKeys(loopbackClient())
	p := jwksPlatform(lms.srv.URL)
	start := time.Now()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := pk.PlatformKey(context.Background(), p, "k1"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
				t.Errorf("T-JWKS-03: a slow failing key set is an outage, got %v", err)
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("5 concurrent lookups against a 1 s key set took %s (%d fetches), want about 1 s", took, lms.hits.Load())
	}
}

// gatedJWKS is a key-set endpoint that answers only once release is closed; arrived
// receives each request as it comes in.
func gatedJWKS(t *testing.T, key map[string]any) (url string, arrived chan struct{}, release chan struct{}, hits *atomic.Int32) {
	arrived, release, hits = make(chan struct{}, 100), make(chan struct{}), &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		arrived <- struct{}{}
		<-release
		if r.Context().Err() != nil {
			t.Error("the key-set fetch was cancelled with the caller that started it")
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{key}})
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return srv.URL, arrived, release, hits
}

// A caller whose request ends leaves at once with an outage; the fetch it started goes on,
// detached, and serves the next caller.
func TestKeySetCallerLeavingDoesNotCancelTheFetch(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	url, arrived, release, hits := gatedJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	pk := NewPeerKeys(loopbackClient())
	p := jwksPlatform(url)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := pk.PlatformKey(ctx, p, "k1")
		errc <- err
	}()
	<-arrived
	cancel()
	err := <-errc // returns while the server still holds the fetch
	if !errors.Is(err, context.Canceled) || errors.Is(err, lti.ErrUnknownKey) {
		t.Fatalf("T-JWKS-03: a caller leaving gets its context's error as an outage, got %v", err)
	}
	close(release)
	if got, err := pk.PlatformKey(context.Background(), p, "k1"); err != nil || !got.Equal(&k1.PublicKey) {
		t.Fatalf("the next caller = %v, %v; want the key the detached fetch brought", got, err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d fetches, want the one the first caller started", n)
	}
}

// Lookups beyond maxKeySetWaiters on one set's fetch answer the outage at once.
func TestKeySetWaitersAreBounded(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	url, arrived, release, _ := gatedJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	pk := NewPeerKeys(loopbackClient())
	p := jwksPlatform(url)
	var wg sync.WaitGroup
	for range maxKeySetWaiters {
		wg.Go(func() {
			if _, err := pk.PlatformKey(context.Background(), p, "k1"); err != nil {
				t.Errorf("a waiter within the bound = %v, want the key", err)
			}
		})
	}
	<-arrived
	set := func() *keySet { pk.mu.Lock(); defer pk.mu.Unlock(); return pk.sets[setKey{url: url}] }()
	for {
		set.mu.Lock()
		n := set.waiters
		set.mu.Unlock()
		if n == maxKeySetWaiters {
			break
		}
		runtime.Gosched()
	}
	start := time.Now()
	if _, err := pk.PlatformKey(context.Background(), p, "k1"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
		t.Fatalf("T-JWKS-03: a lookup beyond the waiter bound is an outage, got %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a lookup beyond the waiter bound took %s, want at once", took)
	}
	close(release)
	wg.Wait()
}

// The last good keys are served during an outage while younger than the stale-if-error
// bound, then the outage is answered (T-JWKS-03), and each failure is remembered.
func TestKeySetStaleKeysServedUntilTheBound(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	lms := newPlatformJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	lms.cacheControl.Store("max-age=60")
	pk := NewPeerKeys(loopbackClient())
	start := time.Now()
	clock := start
	pk.now = func() time.Time { return clock }
	p := jwksPlatform(lms.srv.URL)
	ctx := context.Background()
	if _, err := pk.PlatformKey(ctx, p, "k1"); err != nil {
		t.Fatal(err)
	}
	lms.fail.Store(true)
	for clock = start.Add(2 * time.Minute); clock.Sub(start) < defaultStaleIfError; clock = clock.Add(5 * time.Second) {
		if got, err := pk.PlatformKey(ctx, p, "k1"); err != nil || !got.Equal(&k1.PublicKey) {
			t.Fatalf("at +%s the stale key = %v, %v; want it served", clock.Sub(start), got, err)
		}
	}
	// One fetch per 10-30 s of outage, not one per lookup.
	if hits, most := lms.hits.Load(), int32(1+defaultStaleIfError/failureTTL); hits > most {
		t.Fatalf("%d fetches during the outage, want at most %d", hits, most)
	}
	clock = start.Add(defaultStaleIfError + failureTTL + failureJitter)
	if _, err := pk.PlatformKey(ctx, p, "k1"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
		t.Fatalf("T-JWKS-03: past the stale-if-error bound the outage is answered, got %v", err)
	}
	lms.fail.Store(false)
	clock = clock.Add(failureTTL + failureJitter)
	if _, err := pk.PlatformKey(ctx, p, "k1"); err != nil {
		t.Fatalf("the platform back: %v", err)
	}
}

// BenchmarkKeySetCachedLookup is the launch path's cost of a cached key-set lookup.
func BenchmarkKeySetCachedLookup(b *testing.B) {
	k1 := testkeys.RSAKey(b, 0)
	lms := newPlatformJWKS(b, jwkMap(b, &k1.PublicKey, map[string]string{"kid": "k1"}))
	pk := NewPeerKeys(loopbackClient())
	p := jwksPlatform(lms.srv.URL)
	if _, err := pk.PlatformKey(context.Background(), p, "k1"); err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := pk.PlatformKey(context.Background(), p, "k1"); err != nil {
				b.Error(err)
			}
		}
	})
}

// T-TOK-09: only RSA signing keys with alg RS256 (or none) and use sig (or none) are usable.
func TestParseKeySetKeepsOnlyUsableSigningKeys(t *testing.T) {
	good, weak := testkeys.RSAKey(t, 0), testkeys.WeakRSAKey(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set := map[string]any{"keys": []map[string]any{
		jwkMap(t, &good.PublicKey, map[string]string{"kid": "no-alg"}), // T-QUIRK-07: D2L omits alg
		jwkMap(t, &good.PublicKey, map[string]string{"kid": "rs256", "alg": "RS256", "use": "sig"}),
		jwkMap(t, &good.PublicKey, map[string]string{"kid": "rs512", "alg": "RS512"}),
		jwkMap(t, &good.PublicKey, map[string]string{"kid": "enc", "use": "enc"}),
		{"kty": "RSA", "kid": "weak", "e": "AQAB", "n": base64.RawURLEncoding.EncodeToString(weak.N.Bytes())},
		jwkMap(t, &ec.PublicKey, map[string]string{"kid": "ec"}),
		jwkMap(t, &good.PublicKey, nil), // no kid: cannot be selected (T-TOK-05)
	}}
	data, _ := json.Marshal(set)
	got, err := ParseKeySet(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["no-alg"] == nil || got["rs256"] == nil {
		t.Fatalf("usable keys = %v, want no-alg and rs256", got)
	}
	if _, err := ParseKeySet([]byte(`{"keys":`)); err == nil {
		t.Fatal("a malformed key set is an error")
	}
}

func TestStaticKeys(t *testing.T) {
	k := testkeys.RSAKey(t, 0)
	publicPEM, err := keys.PublicKeyPEM(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	withKID, _ := json.Marshal(jwkMap(t, &k.PublicKey, map[string]string{"kid": "platform-kid"}))
	pk := NewPeerKeys(loopbackClient())
	ctx := context.Background()
	r := New()
	for _, tc := range []struct {
		name       string
		ac         ltiv1.AuthConfig
		kid        string
		wantUnkown bool
	}{
		{"RSA_KEY accepts any kid", ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: publicPEM}, "anything", false},
		{"JWK_KEY with a kid matches it", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: string(withKID)}, "platform-kid", false},
		{"JWK_KEY with a kid refuses another", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: string(withKID)}, "other", true},
	} {
		reg := platformRegistration("static", "https://lms", "c", time.Now())
		reg.Spec.AuthConfig = tc.ac
		r.Apply(reg)
		got, err := pk.PlatformKey(ctx, r.Get("static"), tc.kid)
		if tc.wantUnkown {
			if !errors.Is(err, lti.ErrUnknownKey) {
				t.Errorf("%s: err = %v, want ErrUnknownKey", tc.name, err)
			}
			continue
		}
		if err != nil || !got.Equal(&k.PublicKey) {
			t.Errorf("%s: Key = %v, %v", tc.name, got, err)
		}
	}
}

// loopbackClient is the production client with the dev-mode policy: the test servers
// listen on loopback over plain http.
func loopbackClient() *http.Client {
	return outbound.NewClient(outbound.Policy{AllowHTTP: true, AllowLoopback: true, Timeout: fetchTimeout})
}

// The attack of issue #28 item 6: with more key-set URLs than the cache holds (tens of
// thousands of registrations), a token naming one more platform must not drop every cached
// set, after which garbage tokens to launches or notices cost one outbound fetch each again.
// Past the bound the least recently used set goes, an expired one first; never all.
func TestKeySetOneMoreURLPastTheBoundDoesNotDropTheCache(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	key := jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"})
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/short" {
			w.Header().Set("Cache-Control", "max-age=30")
		} else {
			w.Header().Set("Cache-Control", "max-age=3600")
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{key}})
	}))
	defer srv.Close()
	fetches := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, h := range hits {
			n += h
		}
		return n
	}

	const bound = 50
	pk := NewPeerKeys(loopbackClient())
	pk.maxSets = bound
	clock := time.Now()
	pk.now = func() time.Time { return clock }
	ctx := context.Background()
	lookup := func(path string) {
		t.Helper()
		if _, err := pk.PlatformKey(ctx, jwksPlatform(srv.URL+path), "k1"); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	path := func(i int) string { return "/p" + strconv.Itoa(i) }
	for i := range bound {
		lookup(path(i))
	}
	// Set 0 is the least recently used; one more URL evicts it and nothing else.
	lookup(path(bound))
	before := fetches()
	for i := 1; i <= bound; i++ {
		lookup(path(i))
	}
	if extra := fetches() - before; extra != 0 {
		t.Fatalf("one URL past the bound of %d cost %d fetches of sets that were cached", bound, extra)
	}
	lookup(path(0))
	mu.Lock()
	if hits[path(0)] != 2 {
		t.Errorf("the least recently used set was fetched %d times, want evicted and fetched again", hits[path(0)])
	}
	mu.Unlock()

	// An expired set goes before the least recently used one. Least recently used first,
	// the cache holds 2..50, 0; /short evicts 2.
	lookup("/short")
	clock = clock.Add(time.Minute) // /short has expired; the others have not
	before = fetches()
	lookup(path(bound + 1)) // evicts /short, not 3
	lookup(path(3))
	if extra := fetches() - before; extra != 1 {
		t.Errorf("%d fetches, want 1 (the new URL): the expired set should have gone before the least recently used", extra)
	}
	if n := len(pk.sets); n > bound {
		t.Errorf("%d sets cached, bound %d", n, bound)
	}
}
