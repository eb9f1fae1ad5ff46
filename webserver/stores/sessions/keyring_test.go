package sessions

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwe"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
)

var allPurposes = []string{PurposeLTIK, PurposeServiceKey, PurposeState, PurposeMessageHint, PurposePayload}

// fixedKeyring holds keys and seals at the test clock.
func fixedKeyring(t testing.TB, now time.Time, keys ...keyring.SealingKey) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	k.now = func() time.Time { return now }
	return k
}

func seal(t testing.TB, k *Keyring, purpose string, payload []byte, ttl time.Duration) string {
	t.Helper()
	tok, err := k.Seal(purpose, payload, ttl)
	if err != nil {
		t.Fatalf("Seal(%s): %v", purpose, err)
	}
	return tok
}

func header(t testing.TB, token string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSealOpenEveryPurpose(t *testing.T) {
	k := fixedKeyring(t, t0, mustKey(t, t0, 0))
	for _, purpose := range allPurposes {
		t.Run(purpose, func(t *testing.T) {
			payload := []byte(`{"purpose":"` + purpose + `","n":1}`)
			tok := seal(t, k, purpose, payload, 10*time.Minute)
			o, err := k.OpenToken(purpose, tok, t0.Add(time.Minute))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(o.Payload, payload) {
				t.Errorf("payload = %s, want %s", o.Payload, payload)
			}
			if len(o.ID) != 22 { // 128 bits, base64url
				t.Errorf("id %q is not 22 characters", o.ID)
			}
			if !o.Expires.Equal(t0.Add(10*time.Minute)) || !o.IssuedAt.Equal(t0) {
				t.Errorf("iat/exp = %v/%v, want %v/%v", o.IssuedAt, o.Expires, t0, t0.Add(10*time.Minute))
			}
			h := header(t, tok)
			want := map[string]any{"alg": "dir", "enc": "A256GCM", "zip": "DEF", "kid": k.IDs()[0], "typ": "ltiop-" + purpose}
			if fmt.Sprint(h) != fmt.Sprint(want) {
				t.Errorf("protected header = %v, want %v", h, want)
			}
			payload2, id, err := k.Open(purpose, tok, t0)
			if err != nil || id != o.ID || !bytes.Equal(payload2, payload) {
				t.Errorf("Open = %s, %q, %v", payload2, id, err)
			}
		})
	}
}

func TestSealOpenAnyBytes(t *testing.T) {
	k := fixedKeyring(t, t0, mustKey(t, t0, 0))
	for _, payload := range [][]byte{
		nil,
		{0, 1, 2, 0xff, '"', '}'},
		[]byte(`,"d":{"x":1}}`),
		[]byte("  {\"spaced\": true}\n"),
		bytes.Repeat([]byte("0123456789abcdef"), 2000),
	} {
		tok := seal(t, k, PurposePayload, payload, time.Minute)
		got, _, err := k.Open(PurposePayload, tok, t0)
		if err != nil || !bytes.Equal(got, payload) {
			t.Errorf("round trip of %.20q: %.20q, %v", payload, got, err)
		}
	}
}

func TestWrongPurposeIsInvalid(t *testing.T) {
	k := fixedKeyring(t, t0, mustKey(t, t0, 0))
	for _, sealed := range allPurposes {
		tok := seal(t, k, sealed, []byte(`{}`), time.Hour)
		for _, opened := range allPurposes {
			if opened == sealed {
				continue
			}
			if _, _, err := k.Open(opened, tok, t0); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s token opened as %s: %v, want ErrInvalid", sealed, opened, err)
			}
		}
	}
	// T-STATE: a state never opens as an ltik, even with a plausible-looking purpose.
	tok := seal(t, k, PurposeState, []byte(`{}`), time.Hour)
	for _, p := range []string{"", "LTIK", "ltik ", "ltiop-ltik", "st", "state-"} {
		if _, _, err := k.Open(p, tok, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("state opened as %q: %v", p, err)
		}
	}
}

// mutate changes one character of the given part (or inserts one into an empty part).
func mutate(token string, part, pos int) string {
	parts := strings.Split(token, ".")
	p := []byte(parts[part])
	if len(p) == 0 {
		parts[part] = "AA"
		return strings.Join(parts, ".")
	}
	i := pos % len(p)
	if p[i] == 'A' {
		p[i] = 'B'
	} else {
		p[i] = 'A'
	}
	parts[part] = string(p)
	return strings.Join(parts, ".")
}

func TestTamperedIsInvalid(t *testing.T) {
	k := fixedKeyring(t, t0, mustKey(t, t0, 0))
	tok := seal(t, k, PurposeLTIK, canvasClaims(t), time.Hour)
	parts := strings.Split(tok, ".")
	if len(parts) != 5 || parts[1] != "" {
		t.Fatalf("token has %d parts, encrypted key %q", len(parts), parts[1])
	}
	for part := range 5 {
		n := max(len(parts[part]), 1)
		for _, pos := range []int{0, n / 2, n - 1} {
			bad := mutate(tok, part, pos)
			if _, _, err := k.Open(PurposeLTIK, bad, t0); !errors.Is(err, ErrInvalid) {
				t.Errorf("part %d position %d changed: %v, want ErrInvalid", part, pos, err)
			}
		}
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"truncated":    tok[:len(tok)-1],
		"four parts":   strings.Join(parts[:4], "."),
		"six parts":    tok + ".",
		"padded":       tok + "==",
		"spaces":       " " + tok,
		"std base64":   strings.NewReplacer("-", "+", "_", "/").Replace(tok),
		"json":         `{"protected":"` + parts[0] + `"}`,
		"no header":    "." + strings.Join(parts[1:], "."),
		"garbage":      "a.b.c.d.e",
		"header only":  parts[0] + "....",
		"swapped tags": strings.Join([]string{parts[0], parts[1], parts[2], parts[3], parts[2]}, "."),
		"long IV":      strings.Join([]string{parts[0], parts[1], parts[2] + "AAAAAA", parts[3], parts[4]}, "."),
		"short tag":    strings.Join([]string{parts[0], parts[1], parts[2], parts[3], parts[4][:16]}, "."),
	} {
		if _, _, err := k.Open(PurposeLTIK, bad, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestExpired(t *testing.T) {
	k := fixedKeyring(t, t0, mustKey(t, t0, 0))
	tok := seal(t, k, PurposeState, []byte(`{"nonce":"n"}`), 10*time.Minute)
	if _, _, err := k.Open(PurposeState, tok, t0.Add(10*time.Minute-time.Nanosecond)); err != nil {
		t.Errorf("just before exp: %v", err)
	}
	for _, at := range []time.Duration{10 * time.Minute, 11 * time.Minute, 48 * time.Hour} {
		if _, _, err := k.Open(PurposeState, tok, t0.Add(at)); !errors.Is(err, ErrExpired) {
			t.Errorf("at +%v: %v, want ErrExpired", at, err)
		}
	}
	// Only an authentic token can be "expired": a tampered expired one is invalid.
	if _, _, err := k.Open(PurposeState, mutate(tok, 3, 5), t0.Add(time.Hour)); !errors.Is(err, ErrInvalid) {
		t.Errorf("tampered and expired: %v, want ErrInvalid", err)
	}
	// exp is rounded up: a token never expires before now+ttl.
	k.now = func() time.Time { return t0.Add(300 * time.Millisecond) }
	tok = seal(t, k, PurposeState, []byte(`{}`), time.Second)
	if _, _, err := k.Open(PurposeState, tok, t0.Add(1299*time.Millisecond)); err != nil {
		t.Errorf("fractional ttl: %v", err)
	}
}

// SealUntil: the token expires at the time given, whenever it was sealed, and a time
// under a second away is refused (nothing sealed).
func TestSealUntil(t *testing.T) {
	k := fixedKeyring(t, t0.Add(time.Hour), mustKey(t, t0, 0))
	tok, err := k.SealUntil(PurposeServiceKey, []byte(`{}`), t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	o, err := k.OpenToken(PurposeServiceKey, tok, t0.Add(3*time.Hour-time.Nanosecond))
	if err != nil || !o.Expires.Equal(t0.Add(3*time.Hour)) || !o.IssuedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("just before exp: %v, issued %v, expires %v", err, o.IssuedAt, o.Expires)
	}
	if _, err := k.OpenToken(PurposeServiceKey, tok, t0.Add(3*time.Hour)); !errors.Is(err, ErrExpired) {
		t.Errorf("at exp: %v, want ErrExpired", err)
	}
	if tok, err := k.SealUntil(PurposeServiceKey, []byte(`{}`), t0.Add(time.Hour+time.Millisecond)); err == nil {
		t.Errorf("sealed %q for a millisecond", tok)
	}
}

func TestUnknownKidAfterReplace(t *testing.T) {
	a, b := mustKey(t, t0, 0), mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, a)
	tok := seal(t, k, PurposeLTIK, []byte(`{}`), time.Hour)
	if err := k.Replace([]keyring.SealingKey{b}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Open(PurposeLTIK, tok, t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("token of a retired key: %v, want ErrInvalid", err)
	}
}

func TestReplaceRefusesBadKeys(t *testing.T) {
	a := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, a)
	short := a
	short.ID, short.Secret = "short", a.Secret[:16]
	noNB := mustKey(t, t0, 0)
	noNB.NotBefore = time.Time{}
	badID := mustKey(t, t0, 0)
	badID.ID = "a/b"
	for name, keys := range map[string][]keyring.SealingKey{
		"empty":        nil,
		"short secret": {short},
		"duplicate":    {a, a},
		"no notBefore": {noNB},
		"bad id":       {badID},
	} {
		if err := k.Replace(keys); err == nil {
			t.Errorf("%s: Replace accepted it", name)
		}
		if _, err := NewKeyring(keys); err == nil && name != "empty" {
			t.Errorf("%s: NewKeyring accepted it", name)
		}
	}
	if ids := k.IDs(); len(ids) != 1 || ids[0] != a.ID {
		t.Errorf("a refused Replace changed the keys: %v", ids)
	}
	// Replace copies: the caller changing its slice later changes nothing.
	tok := seal(t, k, PurposeLTIK, []byte(`{}`), time.Hour)
	for i := range a.Secret {
		a.Secret[i] = 0
	}
	if _, _, err := k.Open(PurposeLTIK, tok, t0); err != nil {
		t.Errorf("keyring shares the caller's secret: %v", err)
	}
}

func TestEmptyKeyring(t *testing.T) {
	k, err := NewKeyring(nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.Ready() {
		t.Error("an empty keyring is Ready")
	}
	if _, err := k.Seal(PurposeLTIK, []byte(`{}`), time.Hour); err == nil {
		t.Error("an empty keyring sealed")
	}
	if _, _, err := k.Open(PurposeLTIK, "a.b.c.d.e", t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open on an empty keyring: %v", err)
	}
	// A well-formed token of another keyring opens nothing either.
	other := seal(t, fixedKeyring(t, t0, mustKey(t, t0, 0)), PurposeLTIK, []byte(`{}`), time.Hour)
	if _, _, err := k.Open(PurposeLTIK, other, t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open of a real token on an empty keyring: %v", err)
	}
	if err := k.Replace([]keyring.SealingKey{mustKey(t, t0, 0)}); err != nil || !k.Ready() {
		t.Errorf("Replace: %v, Ready %v", err, k.Ready())
	}

	var zero Keyring
	if zero.Ready() || len(zero.IDs()) != 0 {
		t.Error("the zero Keyring has keys")
	}
	if _, err := zero.Seal(PurposeLTIK, []byte(`{}`), time.Hour); err == nil {
		t.Error("the zero Keyring sealed")
	}
	if _, _, err := zero.Open(PurposeLTIK, "a.b.c.d.e", t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open on the zero Keyring: %v", err)
	}
	if err := zero.Replace([]keyring.SealingKey{mustKey(t, t0, 0)}); err != nil || !zero.Ready() {
		t.Errorf("Replace on the zero Keyring: %v", err)
	}
}

func TestSealRefusesBadArguments(t *testing.T) {
	k := fixedKeyring(t, t0, mustKey(t, t0, 0))
	for _, p := range []string{"", "LTIK", "a b", `x"y`, strings.Repeat("a", 33)} {
		if _, err := k.Seal(p, []byte(`{}`), time.Hour); err == nil {
			t.Errorf("Seal(%q) succeeded", p)
		}
	}
	if _, err := k.Seal(PurposeState, []byte(`{}`), 999*time.Millisecond); err == nil {
		t.Error("Seal with a sub-second ttl succeeded")
	}
	if _, err := k.Seal("custom-purpose", []byte(`{}`), time.Hour); err != nil {
		t.Errorf("a custom purpose: %v", err)
	}
}

func TestRotation(t *testing.T) {
	old := mustKey(t, t0.Add(-time.Hour), 0)
	k := fixedKeyring(t, t0, old)
	before := seal(t, k, PurposeLTIK, []byte(`{"n":1}`), 24*time.Hour)

	// The controller adds a key that activates in a minute.
	next := mustKey(t, t0, time.Minute)
	if err := k.Replace([]keyring.SealingKey{old, next}); err != nil {
		t.Fatal(err)
	}
	during := seal(t, k, PurposeLTIK, []byte(`{"n":2}`), 24*time.Hour)
	if kid := header(t, during)["kid"]; kid != old.ID {
		t.Errorf("sealed with %v before the new key is active, want %s", kid, old.ID)
	}

	k.now = func() time.Time { return t0.Add(time.Minute) }
	after := seal(t, k, PurposeLTIK, []byte(`{"n":3}`), 24*time.Hour)
	if kid := header(t, after)["kid"]; kid != next.ID {
		t.Errorf("sealed with %v once the new key is active, want %s", kid, next.ID)
	}
	for i, tok := range []string{before, during, after} {
		if _, _, err := k.Open(PurposeLTIK, tok, t0.Add(2*time.Minute)); err != nil {
			t.Errorf("token %d does not open after the rotation: %v", i, err)
		}
	}
}

func TestFutureKeyOpensButDoesNotSeal(t *testing.T) {
	active, future := mustKey(t, t0.Add(-time.Hour), 0), mustKey(t, t0, time.Hour)
	k := fixedKeyring(t, t0, active, future)
	if kid := header(t, seal(t, k, PurposeLTIK, []byte(`{}`), time.Hour))["kid"]; kid != active.ID {
		t.Errorf("sealed with %v, want the active key %s", kid, active.ID)
	}
	// Another replica whose clock is past future.NotBefore seals with it: this one opens it.
	other := fixedKeyring(t, t0.Add(time.Hour), active, future)
	tok := seal(t, other, PurposeLTIK, []byte(`{"other":true}`), time.Hour)
	if kid := header(t, tok)["kid"]; kid != future.ID {
		t.Fatalf("other replica sealed with %v", kid)
	}
	if got, _, err := k.Open(PurposeLTIK, tok, t0); err != nil || string(got) != `{"other":true}` {
		t.Errorf("a token of the not yet active key: %s, %v", got, err)
	}
	// A keyring of future keys only (just created, this replica's clock behind) still seals.
	only := fixedKeyring(t, t0, future)
	if !only.Ready() {
		t.Error("a keyring with only a future key is not Ready")
	}
	if _, err := only.Seal(PurposeLTIK, []byte(`{}`), time.Hour); err != nil {
		t.Errorf("a keyring with only a future key: %v", err)
	}
}

func TestLTIKIsCompact(t *testing.T) {
	k := testKeyring(t)
	claims := canvasClaims(t)
	if len(claims) < 4000 {
		t.Fatalf("fixture is %d bytes, want about 4 KB", len(claims))
	}
	tok := seal(t, k, PurposeLTIK, claims, 24*time.Hour)
	t.Logf("ltik of %d bytes of claims: %d bytes", len(claims), len(tok))
	if len(tok) >= 3<<10 {
		t.Errorf("ltik is %d bytes, want < 3 KB", len(tok))
	}
	state := seal(t, k, PurposeState, []byte(`{"nonce":"J8cB1xk0Yq3mZ2vW9sTa4Q","target":"https://tool.example.org/lti/launch?activity=reflection-lab","iss":"https://canvas.instructure.com","client_id":"170000000000123"}`), 10*time.Minute)
	t.Logf("state: %d bytes", len(state))
}

func TestSealsDiffer(t *testing.T) {
	k := testKeyring(t)
	payload := []byte(`{"same":"payload"}`)
	a, b := seal(t, k, PurposeLTIK, payload, time.Hour), seal(t, k, PurposeLTIK, payload, time.Hour)
	if a == b {
		t.Fatal("two seals of the same payload are equal")
	}
	_, ida, _ := k.Open(PurposeLTIK, a, time.Now())
	_, idb, _ := k.Open(PurposeLTIK, b, time.Now())
	if ida == idb || ida == "" {
		t.Errorf("token ids %q and %q", ida, idb)
	}
	if strings.Split(a, ".")[2] == strings.Split(b, ".")[2] {
		t.Error("two seals share an IV")
	}
}

func TestNoPlaintextInToken(t *testing.T) {
	k := testKeyring(t)
	const marker = "PLAINTEXT-MARKER-7f3a9c"
	payload := []byte(`{"secret":"` + marker + `","again":"` + marker + `"}`)
	tok := seal(t, k, PurposeLTIK, payload, time.Hour)
	if strings.Contains(tok, marker) {
		t.Fatal("the token holds the marker")
	}
	for i, part := range strings.Split(tok, ".") {
		raw, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if bytes.Contains(raw, []byte(marker)) || bytes.Contains(raw, []byte("secret")) {
			t.Errorf("part %d holds the plaintext", i)
		}
	}
}

// Tokens are standard JWE: jwx's generic jwe.Decrypt opens what Seal makes, and Open
// opens what jwe.Encrypt makes with WithCompress(jwa.Deflate()).
func TestInteroperableWithJWX(t *testing.T) {
	key := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, key)
	claims := canvasClaims(t)
	tok := seal(t, k, PurposeLTIK, claims, time.Hour)

	env, err := jwe.Decrypt([]byte(tok), jwe.WithKey(jwa.DIRECT(), key.Secret))
	if err != nil {
		t.Fatalf("jwe.Decrypt: %v", err)
	}
	var e struct {
		P   string          `json:"p"`
		Exp int64           `json:"exp"`
		Iat int64           `json:"iat"`
		Jti string          `json:"jti"`
		D   json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatalf("the envelope is not JSON: %v", err)
	}
	if e.P != PurposeLTIK || e.Exp != t0.Add(time.Hour).Unix() || e.Iat != t0.Unix() || len(e.Jti) != 22 || !bytes.Equal(e.D, claims) {
		t.Errorf("envelope = %+v", e)
	}

	h := jwe.NewHeaders()
	_ = h.Set(jwe.KeyIDKey, key.ID)
	_ = h.Set(jwe.TypeKey, "ltiop-ltik")
	plain := fmt.Appendf(nil, `{"p":"ltik","exp":%d,"iat":%d,"jti":"abcdefghijklmnopqrstuv","d":{"from":"jwx"}}`, t0.Add(time.Hour).Unix(), t0.Unix())
	made, err := jwe.Encrypt(plain, jwe.WithKey(jwa.DIRECT(), key.Secret), jwe.WithContentEncryption(jwa.A256GCM()),
		jwe.WithCompress(jwa.Deflate()), jwe.WithProtectedHeaders(h))
	if err != nil {
		t.Fatal(err)
	}
	got, id, err := k.Open(PurposeLTIK, string(made), t0)
	if err != nil || string(got) != `{"from":"jwx"}` || id != "abcdefghijklmnopqrstuv" {
		t.Errorf("Open of a jwx-made token: %s, %q, %v", got, id, err)
	}

	// Other shapes jwx can make are not ours.
	for name, opts := range map[string][]jwe.EncryptOption{
		"uncompressed": {jwe.WithKey(jwa.DIRECT(), key.Secret), jwe.WithContentEncryption(jwa.A256GCM()), jwe.WithProtectedHeaders(h)},
		"A256KW":       {jwe.WithKey(jwa.A256KW(), key.Secret), jwe.WithContentEncryption(jwa.A256GCM()), jwe.WithCompress(jwa.Deflate()), jwe.WithProtectedHeaders(h)},
		"json":         {jwe.WithJSON(), jwe.WithKey(jwa.DIRECT(), key.Secret), jwe.WithContentEncryption(jwa.A256GCM()), jwe.WithCompress(jwa.Deflate()), jwe.WithProtectedHeaders(h)},
	} {
		made, err := jwe.Encrypt(plain, opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, err := k.Open(PurposeLTIK, string(made), t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// The header Seal writes (encoded by jwx once per key set) is byte for byte the one
// jwe.Encrypt writes, so both make the same tokens, and a small envelope (stored, not
// compressed) is still a DEF token jwx opens.
func TestHeaderAndSmallTokensAsJWX(t *testing.T) {
	key := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, key)
	for _, p := range allPurposes {
		h, err := protectedHeaders(key.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		made, err := jwe.Encrypt([]byte("x"), jwe.WithKey(jwa.DIRECT(), key.Secret), jwe.WithContentEncryption(jwa.A256GCM()),
			jwe.WithCompress(jwa.Deflate()), jwe.WithProtectedHeaders(h))
		if err != nil {
			t.Fatal(err)
		}
		enc, err := encodedHeader(key.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(enc), strings.Split(string(made), ".")[0]; got != want {
			t.Errorf("%s: header %s, jwx writes %s", p, got, want)
		}
		small := []byte(`{"i":"abc","n":"nonce"}`)
		env, err := jwe.Decrypt([]byte(seal(t, k, p, small, time.Hour)), jwe.WithKey(jwa.DIRECT(), key.Secret))
		if err != nil || !bytes.HasSuffix(env, append([]byte(`"d":`), append(small, '}')...)) {
			t.Errorf("%s: jwe.Decrypt of a small token: %s, %v", p, env, err)
		}
	}
}

// A token whose header is spelt otherwise (members in another order; encrypted by jwx's
// content cipher under that header) is still checked and opened; with another purpose's
// typ it does not open.
func TestOtherHeaderSpelling(t *testing.T) {
	key := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, key)
	token := func(typ string) string {
		header := b64.EncodeToString([]byte(`{"zip":"DEF","typ":"` + typ + `","kid":"` + key.ID + `","enc":"A256GCM","alg":"dir"}`))
		var out bytes.Buffer
		w, _ := flate.NewWriter(&out, flate.BestSpeed)
		fmt.Fprintf(w, `{"p":"ltik","exp":%d,"iat":%d,"jti":"abcdefghijklmnopqrstuv","d":{"spelt":"otherwise"}}`, t0.Add(time.Hour).Unix(), t0.Unix())
		_ = w.Close()
		c, err := newContentCipher()
		if err != nil {
			t.Fatal(err)
		}
		tok, err := appendCompact(nil, c, key.Secret, []byte(header), out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return string(tok)
	}
	got, id, err := k.Open(PurposeLTIK, token("ltiop-ltik"), t0)
	if err != nil || string(got) != `{"spelt":"otherwise"}` || id != "abcdefghijklmnopqrstuv" {
		t.Errorf("Open: %s, %q, %v", got, id, err)
	}
	if _, _, err := k.Open(PurposeLTIK, token("ltiop-state"), t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("a state-typed token opened as an ltik: %v", err)
	}
}

// Tokens sealed by replicas still running the previous Seal (877d62e, which wrote the
// header and ran AES-GCM itself) open: a state (stored envelope) and an ltik (deflated),
// sealed by it with this fixed key at t0.
func TestOpensTokensOfPreviousSeal(t *testing.T) {
	key := keyring.SealingKey{ID: "golden-key", Secret: []byte("0123456789abcdef0123456789abcdef"), NotBefore: t0.Add(-time.Hour), Created: t0.Add(-time.Hour)}
	k := fixedKeyring(t, t0, key)
	for _, c := range []struct{ purpose, token, payload string }{
		{PurposeState, goldenState, `{"i":"abc","n":"nonce"}`},
		{PurposeLTIK, goldenLTIK, `{"claims":"` + strings.Repeat("lti-launch ", 120) + `"}`},
	} {
		got, _, err := k.Open(c.purpose, c.token, t0)
		if err != nil || string(got) != c.payload {
			t.Errorf("%s: Open: %.40s, %v", c.purpose, got, err)
		}
		// Our header now comes from jwx: the same bytes as the previous Seal's.
		enc, err := encodedHeader(key.ID, c.purpose)
		if err != nil || !strings.HasPrefix(c.token, string(enc)+"..") {
			t.Errorf("%s: header %s (%v) does not start %.80s", c.purpose, enc, err, c.token)
		}
	}
}

const (
	goldenState = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoiZ29sZGVuLWtleSIsInR5cCI6Imx0aW9wLXN0YXRlIiwiemlwIjoiREVGIn0..prS3r7tXckBJPdMH.M_eSPg4mbjnIa8UfEwRYKKAtU0fe44TRdPohNnBDZ0YdFaMOTOQ-JPgJ35JhZGFkkNVQoDWHVHZd3y5yYVPbDHCWDDR2aG0rr643PPFGoCnEOMKd3qHpPjxu_5k0TxWOiYLWlDPaSljDb_oz2LE3GqY.PJ__MxMqFmMQmCR8ssu_dA"
	goldenLTIK  = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoiZ29sZGVuLWtleSIsInR5cCI6Imx0aW9wLWx0aWsiLCJ6aXAiOiJERUYifQ..6nUIxFrV3veJ6r1D._0HGW8Ddu46ogrpn4o8glpj5ICt_yun-GPb7tncGB4oIr4wmvpACf-sQe6fiTso_p9Tu7pwP6Ne6p4L8SzRpNeYK6bp3Q7bVYjZIEb6TZdMSVu4WJFaSrz1ucGLBfUdBMgGKcagWnSoitVy29p8zlV-JWg.czZ8y3gvuy7L3Noszj6CwA"
)

func TestKeyringConcurrentUse(t *testing.T) {
	keys := []keyring.SealingKey{mustKey(t, t0.Add(-time.Hour), 0)}
	k := testKeyring(t)
	if err := k.Replace(keys); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				tok, err := k.Seal(PurposeState, fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i), time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := k.Open(PurposeState, tok, time.Now()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			keys = append(keys, mustKey(t, time.Now(), time.Hour)) // future keys: sealing keeps the first
			if err := k.Replace(keys); err != nil {
				t.Error(err)
			}
			_ = k.Ready()
		}
	})
	wg.Wait()
}

// TestAttach: the keyring follows the sealing keyring of the service Secret (the follower's
// rules are tested in internal/keyring).
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
	key := mustKey(t, t0, 0)
	data, err := keyring.Sealing.Encode([]keyring.SealingKey{key})
	if err != nil {
		t.Fatal(err)
	}
	fake.Add(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ltiop-system", Name: ltiv1.DefaultServiceSecretName, ResourceVersion: "1"},
		Type:       ltiv1.SecretTypeService,
		Data:       map[string][]byte{ltiv1.SecretKeySealingKeyring: data, ltiv1.SecretKeyPlatformKeys: []byte("not ours")},
	})
	tok := seal(t, &k, PurposeLTIK, []byte(`{"n":1}`), time.Hour)
	if kid := header(t, tok)["kid"]; kid != key.ID {
		t.Errorf("sealed with %v, want the Secret's key %s", kid, key.ID)
	}
	if got, _, err := k.Open(PurposeLTIK, tok, time.Now()); err != nil || string(got) != `{"n":1}` {
		t.Errorf("Open: %s, %v", got, err)
	}
}
