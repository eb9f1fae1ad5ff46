package sessions

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
)

// Every token Seal makes is split without jwe.Parse (its header is one prepareSealers
// encoded), and opens; the split hands the decrypter exactly the parts of the token.
func TestOwnTokensSplitWithoutParsing(t *testing.T) {
	key := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, key)
	sl := k.ring.Load().Data()
	for _, p := range knownPurposes {
		tok := seal(t, k, p, canvasClaims(t), time.Hour)
		own, aad, iv, ct, tag, ok := sl.splitOwn([]byte(tok))
		if !ok || own.kid != key.ID || own.purpose != p {
			t.Fatalf("%s: splitOwn = %+v, %v", p, own, ok)
		}
		parts := strings.Split(tok, ".")
		if string(aad) != parts[0] || b64.EncodeToString(iv) != parts[2] || b64.EncodeToString(ct) != parts[3] || b64.EncodeToString(tag) != parts[4] {
			t.Errorf("%s: the split parts are not the token's", p)
		}
		if got, _, err := k.Open(p, tok, t0); err != nil || string(got) != string(canvasClaims(t)) {
			t.Errorf("%s: Open: %v", p, err)
		}
	}
}

// Our exact header does not make a token ours: with an encrypted key (not "dir"), with
// the typ of another purpose, or under a key the keyring no longer holds, it does not open.
func TestOwnHeaderIsNotEnough(t *testing.T) {
	key := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, key)
	sl := k.ring.Load().Data()
	state := seal(t, k, PurposeState, statePayload, time.Hour)
	parts := strings.Split(state, ".")

	withKey := strings.Join([]string{parts[0], "AAAA", parts[2], parts[3], parts[4]}, ".")
	if _, _, _, _, _, ok := sl.splitOwn([]byte(withKey)); ok {
		t.Error("a token with an encrypted key was split as ours")
	}
	if _, _, err := k.Open(PurposeState, withKey, t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("with an encrypted key: %v, want ErrInvalid", err)
	}
	if _, _, err := k.Open(PurposeLTIK, state, t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("a state opened as an ltik: %v, want ErrInvalid", err)
	}
	if err := k.Replace([]keyring.SealingKey{mustKey(t, t0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Open(PurposeState, state, t0); !errors.Is(err, ErrInvalid) {
		t.Errorf("under a retired key: %v, want ErrInvalid", err)
	}
}
