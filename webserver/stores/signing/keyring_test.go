package signing

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	"github.com/ltiop/ltiop/api/ltiwire"
	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
)

// header decodes the protected header of a compact JWS.
func header(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// verifyWithJWKS verifies tok against a published JWKS, as a tool would: jwx picks the key
// by kid and checks RS256.
func verifyWithJWKS(t *testing.T, jwks []byte, tok string) ([]byte, error) {
	t.Helper()
	set, err := jwk.Parse(jwks)
	if err != nil {
		t.Fatalf("the JWKS does not parse: %v", err)
	}
	return jws.Verify([]byte(tok), jws.WithKeySet(set, jws.WithRequireKid(true)))
}

func TestSignHeaderAndPayload(t *testing.T) {
	a := fixtureKey(t, 0, t0)
	k := mustKeyring(t, a)
	for _, typ := range []string{ltiwire.TypeJWT, ltiwire.TypeAccessToken, "ltiop-payload+jwt"} {
		tok, err := k.SignAt(t0, typ, idTokenClaims)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"alg": "RS256", "kid": a.ID, "typ": typ}
		if h := header(t, tok); !maps.Equal(h, want) {
			t.Errorf("typ %q: header %v, want %v", typ, h, want)
		}
		payload, err := jws.Verify([]byte(tok), jws.WithKey(jwa.RS256(), &a.Private.PublicKey))
		if err != nil {
			t.Fatalf("typ %q: jwx does not verify: %v", typ, err)
		}
		if !bytes.Equal(payload, idTokenClaims) {
			t.Errorf("payload changed: %s", payload)
		}
		// The signature is PKCS #1 v1.5 over SHA-256 of the signing input (RFC 7518 §3.3).
		parts := strings.Split(tok, ".")
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if err := rsa.VerifyPKCS1v15(&a.Private.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
			t.Errorf("typ %q: not an RS256 signature: %v", typ, err)
		}
	}
	tok, err := k.SignAt(t0, "", idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, tok); !maps.Equal(h, map[string]any{"alg": "RS256", "kid": a.ID}) {
		t.Errorf("no typ: header %v", h)
	}
}

func TestSignPicksTheKeyByNotBefore(t *testing.T) {
	old := fixtureKey(t, 0, t0.Add(-48*time.Hour))
	cur := fixtureKey(t, 1, t0)
	next := fixtureKey(t, 2, t0.Add(10*time.Minute))
	k := mustKeyring(t, next, old, cur) // any order
	if got := k.IDs(); !slices.Equal(got, []string{old.ID, cur.ID, next.ID}) {
		t.Fatalf("IDs %v, want signing order", got)
	}
	for _, c := range []struct {
		at   time.Time
		want keyring.SigningKey
	}{
		{t0.Add(-time.Hour), old},
		{t0.Add(-time.Nanosecond), old},
		{t0, cur},
		{t0.Add(10*time.Minute - time.Nanosecond), cur},
		{t0.Add(10 * time.Minute), next},
		{t0.Add(365 * 24 * time.Hour), next},
		// All keys in the future (this replica's clock is behind): the earliest signs.
		{t0.Add(-72 * time.Hour), old},
	} {
		tok, err := k.SignAt(c.at, ltiwire.TypeJWT, idTokenClaims)
		if err != nil {
			t.Fatal(err)
		}
		if kid := header(t, tok)["kid"]; kid != c.want.ID {
			t.Errorf("at %v: signed by %v, want %s", c.at, kid, c.want.ID)
		}
		if _, err := jws.Verify([]byte(tok), jws.WithKey(jwa.RS256(), &c.want.Private.PublicKey)); err != nil {
			t.Errorf("at %v: %v", c.at, err)
		}
	}

	// With the real clock, the current key is the one that activated at t0 (in the past).
	now := mustKeyring(t, fixtureKey(t, 0, time.Now().Add(-time.Hour)), fixtureKey(t, 1, time.Now().Add(time.Hour)))
	tok, err := now.Sign(ltiwire.TypeJWT, idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if kid := header(t, tok)["kid"]; kid != old.ID || now.CurrentKID() != old.ID {
		t.Errorf("Sign used %v, CurrentKID %s; want the active key %s", kid, now.CurrentKID(), old.ID)
	}
}

func TestJWKS(t *testing.T) {
	active := fixtureKey(t, 0, t0)
	pending := fixtureKey(t, 1, t0.Add(10*time.Minute))
	k := mustKeyring(t, pending, active)
	jwks := k.JWKS()

	// The exact members, and nothing private.
	var raw struct {
		Keys []map[string]any `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(jwks))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("JWKS %s: %v", jwks, err)
	}
	if len(raw.Keys) != 2 {
		t.Fatalf("JWKS holds %d keys, want the active and the pending one", len(raw.Keys))
	}
	for i, want := range []keyring.SigningKey{active, pending} {
		m := raw.Keys[i]
		if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, []string{"alg", "e", "kid", "kty", "n", "use"}) {
			t.Errorf("key %d has members %v", i, got)
		}
		if m["kid"] != want.ID || m["kty"] != "RSA" || m["alg"] != "RS256" || m["use"] != "sig" || m["e"] != "AQAB" {
			t.Errorf("key %d = %v", i, m)
		}
		if m["n"] != base64.RawURLEncoding.EncodeToString(want.Private.N.Bytes()) {
			t.Errorf("key %d: n is not the modulus", i)
		}
	}

	// jwx reads it, and the keys in it are the keyring's public keys.
	set, err := jwk.Parse(jwks)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []keyring.SigningKey{active, pending} {
		key, ok := set.LookupKeyID(want.ID)
		if !ok {
			t.Fatalf("no %s in the JWKS", want.ID)
		}
		var pub rsa.PublicKey
		if err := jwk.Export(key, &pub); err != nil {
			t.Fatal(err)
		}
		if !pub.Equal(&want.Private.PublicKey) || !pub.Equal(k.PublicKey(want.ID)) {
			t.Errorf("%s: the published key is not the keyring's", want.ID)
		}
		if alg, _ := key.Algorithm(); alg != jwa.RS256() {
			t.Errorf("%s: alg %v", want.ID, alg)
		}
	}

	// Marshalled once: the same bytes every call, and appending does not change them.
	again := k.JWKS()
	if &again[0] != &jwks[0] {
		t.Error("JWKS is marshalled per call")
	}
	_ = append(again, '\n')
	if !bytes.Equal(k.JWKS(), jwks) || !json.Valid(k.JWKS()) {
		t.Error("appending to the JWKS changed it")
	}

	// The empty keyring publishes an empty set.
	var empty Keyring
	if string(empty.JWKS()) != `{"keys":[]}` {
		t.Errorf("empty JWKS = %s", empty.JWKS())
	}
}

// TestRotationThroughTheJWKS follows a rotation as a tool sees it: a token verifies with
// the JWKS published when it was signed, and with every JWKS published after that until
// its key is retired.
func TestRotationThroughTheJWKS(t *testing.T) {
	first := fixtureKey(t, 0, t0)
	second := fixtureKey(t, 1, t0.Add(10*time.Minute))
	k := mustKeyring(t, first)
	jwks1 := k.JWKS()
	tok1, err := k.SignAt(t0.Add(time.Minute), ltiwire.TypeJWT, idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyWithJWKS(t, jwks1, tok1); err != nil {
		t.Fatalf("token signed at t0+1m does not verify with the JWKS: %v", err)
	}

	// Rotation: the new key is published at once but does not sign yet.
	if err := k.Replace([]keyring.SigningKey{first, second}); err != nil {
		t.Fatal(err)
	}
	jwks2 := k.JWKS()
	tok2, err := k.SignAt(t0.Add(5*time.Minute), ltiwire.TypeJWT, idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if header(t, tok2)["kid"] != first.ID {
		t.Error("the new key signed before its NotBefore")
	}
	// A token of the new key verifies with the JWKS a tool fetched before the key signed.
	tok3, err := k.SignAt(t0.Add(10*time.Minute), ltiwire.TypeJWT, idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if header(t, tok3)["kid"] != second.ID {
		t.Error("the new key does not sign after its NotBefore")
	}
	for name, tok := range map[string]string{"tok1": tok1, "tok2": tok2, "tok3": tok3} {
		if _, err := verifyWithJWKS(t, jwks2, tok); err != nil {
			t.Errorf("%s does not verify with the JWKS of the rotation: %v", name, err)
		}
	}
	if _, err := verifyWithJWKS(t, jwks1, tok3); err == nil {
		t.Error("a token of the new key verified with a JWKS that never had it")
	}

	// Retirement: the old key leaves the JWKS and PublicKey.
	if err := k.Replace([]keyring.SigningKey{second}); err != nil {
		t.Fatal(err)
	}
	if _, err := verifyWithJWKS(t, k.JWKS(), tok3); err != nil {
		t.Errorf("after retirement: %v", err)
	}
	if _, err := verifyWithJWKS(t, k.JWKS(), tok1); err == nil {
		t.Error("a token of the retired key still verifies with the JWKS")
	}
	if k.PublicKey(first.ID) != nil || k.PublicKey(second.ID) == nil || k.PublicKey("") != nil {
		t.Error("PublicKey does not follow the key set")
	}
}

func TestEmptyKeyring(t *testing.T) {
	for name, k := range map[string]*Keyring{"zero": {}, "NewKeyring(nil)": mustKeyring(t)} {
		if k.Ready() {
			t.Errorf("%s: ready", name)
		}
		if _, err := k.Sign(ltiwire.TypeJWT, idTokenClaims); err == nil {
			t.Errorf("%s: signed", name)
		}
		if k.CurrentKID() != "" || k.PublicKey("x") != nil || len(k.IDs()) != 0 {
			t.Errorf("%s: holds keys", name)
		}
		if err := k.Replace([]keyring.SigningKey{fixtureKey(t, 0, t0)}); err != nil {
			t.Fatal(err)
		}
		if !k.Ready() {
			t.Errorf("%s: not ready after Replace", name)
		}
	}
}

func TestReplaceRefusesBadKeys(t *testing.T) {
	a := fixtureKey(t, 0, t0)
	b := fixtureKey(t, 1, t0)
	k := mustKeyring(t, a)
	for name, set := range map[string][]keyring.SigningKey{
		"empty":          nil,
		"duplicate":      {a, a},
		"weak":           {weakKey(t)},
		"wrong kid":      {{ID: b.ID, Private: a.Private, NotBefore: t0}},
		"no notBefore":   {{ID: a.ID, Private: a.Private}},
		"no private key": {{ID: a.ID, NotBefore: t0}},
	} {
		if err := k.Replace(set); err == nil {
			t.Errorf("%s: replaced", name)
		}
		if name != "empty" {
			if _, err := NewKeyring(set); err == nil {
				t.Errorf("%s: NewKeyring accepted it", name)
			}
		}
	}
	if got := k.IDs(); !slices.Equal(got, []string{a.ID}) {
		t.Errorf("a refused Replace changed the keys: %v", got)
	}
}

func TestKeyringConcurrentUse(t *testing.T) {
	a := fixtureKey(t, 0, t0.Add(-time.Hour))
	b := fixtureKey(t, 1, t0.Add(-time.Minute))
	k := mustKeyring(t, a)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 10 {
				tok, err := k.Sign(ltiwire.TypeJWT, idTokenClaims)
				if err != nil {
					t.Error(err)
					return
				}
				kid, _ := header(t, tok)["kid"].(string)
				if kid != a.ID && kid != b.ID {
					t.Errorf("signed with %q, which the keyring never held", kid)
				}
				_ = k.JWKS()
				_ = k.CurrentKID()
			}
		})
		wg.Go(func() {
			set := []keyring.SigningKey{a, b}
			if i%2 == 1 {
				set = []keyring.SigningKey{a}
			}
			for range 10 {
				if err := k.Replace(set); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// TestAttach: the keyring follows the platform signing keys of the service Secret (the
// follower's rules are tested in internal/keyring).
func TestAttach(t *testing.T) {
	ctx := context.Background()
	informers := &informertest.FakeInformers{}
	var k Keyring
	if _, err := k.Attach(ctx, informers, "ltiop-system", ltiv1.DefaultServiceSecretName); err != nil {
		t.Fatal(err)
	}
	fake, err := informers.FakeInformerFor(ctx, &corev1.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	key := fixtureKey(t, 0, t0)
	data, err := keyring.Signing.Encode([]keyring.SigningKey{key})
	if err != nil {
		t.Fatal(err)
	}
	fake.Add(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ltiop-system", Name: ltiv1.DefaultServiceSecretName, ResourceVersion: "1"},
		Type:       ltiv1.SecretTypeService,
		Data:       map[string][]byte{ltiv1.SecretKeyPlatformKeys: data, ltiv1.SecretKeySealingKeyring: []byte("not ours")},
	})
	tok, err := k.Sign(ltiwire.TypeJWT, idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyWithJWKS(t, k.JWKS(), tok); err != nil || k.CurrentKID() != key.ID {
		t.Errorf("signed with %s (%v), want the Secret's key %s, published", k.CurrentKID(), err, key.ID)
	}
}
