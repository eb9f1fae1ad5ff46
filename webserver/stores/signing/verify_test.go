package signing

import (
	"errors"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testjws"
)

// Verify takes back what the keyring signed with the typ asked for, and nothing else: every
// case below is a token an attacker (or another of ltiop's token kinds) could hand in.
func TestVerify(t *testing.T) {
	a, b := fixtureKey(t, 0, t0), fixtureKey(t, 1, t0)
	k := mustKeyring(t, a)
	own, err := k.SignAt(t0, ltiwire.TypeAccessToken, idTokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	if payload, err := k.Verify(own, ltiwire.TypeAccessToken); err != nil || string(payload) != string(idTokenClaims) {
		t.Fatalf("own token: %q %v", payload, err)
	}

	hdr := func(alg, typ, kid string) map[string]any {
		return map[string]any{"alg": alg, "typ": typ, "kid": kid}
	}
	parts := strings.Split(own, ".")
	for name, tok := range map[string]string{
		"another typ (one token kind for another)": own,
		"empty":                         "",
		"not three parts":               parts[0] + "." + parts[1],
		"longer than the limit":         own + strings.Repeat("A", MaxTokenLength),
		"payload changed":               parts[0] + "." + parts[1] + "A." + parts[2],
		"key not in the keyring":        testjws.Sign(t, hdr("RS256", ltiwire.TypeDeepLinking, b.ID), idTokenClaims, b.Private),
		"kid of ours, other key":        testjws.Sign(t, hdr("RS256", ltiwire.TypeDeepLinking, a.ID), idTokenClaims, b.Private),
		"alg none":                      testjws.Sign(t, hdr("none", ltiwire.TypeDeepLinking, a.ID), idTokenClaims, a.Private),
		"alg HS256 with the public key": testjws.Sign(t, hdr("HS256", ltiwire.TypeDeepLinking, a.ID), idTokenClaims, a.Private),
		"alg RS512":                     testjws.Sign(t, hdr("RS512", ltiwire.TypeDeepLinking, a.ID), idTokenClaims, a.Private),
		"crit header": testjws.Sign(t, map[string]any{"alg": "RS256", "typ": ltiwire.TypeDeepLinking, "kid": a.ID,
			"crit": []string{"exp"}, "exp": 1}, idTokenClaims, a.Private),
	} {
		if _, err := k.Verify(tok, ltiwire.TypeDeepLinking); !errors.Is(err, ErrNotOurs) {
			t.Errorf("%s: %v, want ErrNotOurs", name, err)
		}
	}

	// A key that leaves the keyring takes its tokens with it.
	if err := k.Replace([]keyring.SigningKey{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Verify(own, ltiwire.TypeAccessToken); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("retired key: %v", err)
	}
	var zero Keyring
	if _, err := zero.Verify(own, ltiwire.TypeAccessToken); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("empty keyring: %v", err)
	}
}
