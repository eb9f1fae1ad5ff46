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
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/lti"
)

// jwkMap renders a public key as a JWK with the given extra members.
func jwkMap(t *testing.T, pub any, members map[string]string) map[string]any {
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
	hits         atomic.Int32
	srv          *httptest.Server
}

func newPlatformJWKS(t *testing.T, keys ...map[string]any) *platformJWKS {
	p := &platformJWKS{}
	p.keys.Store(keys)
	p.cacheControl.Store("max-age=600")
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		if r.Header.Get("User-Agent") == "" {
			t.Error("key set fetched without a User-Agent")
		}
		if p.fail.Load() {
			http.Error(w, "down", http.StatusBadGateway)
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
	pk := NewPeerKeys(nil)
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
	pk := NewPeerKeys(nil)
	clock := time.Now()
	pk.now = func() time.Time { return clock }
	p := jwksPlatform(lms.srv.URL)
	ctx := context.Background()

	lms.fail.Store(true)
	if _, err := pk.PlatformKey(ctx, p, "k1"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
		t.Fatalf("T-JWKS-03: a key set that cannot be fetched is an outage, got %v", err)
	}
	lms.fail.Store(false)
	clock = clock.Add(refetchInterval)
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
	pk := NewPeerKeys(nil)
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
