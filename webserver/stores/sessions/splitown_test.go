package sessions

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
)

// Every token Seal makes is split without jwe.Parse (its header is one sealingKeys.Prepare
// encoded), and opens; the split hands the decrypter exactly the parts of the token.
func TestOwnTokensSplitWithoutParsing(t *testing.T) {
	key := mustKey(t, t0, 0)
	k := fixedKeyring(t, t0, key)
	sl := keyring.Keys(&k.ring).Data()
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
	sl := keyring.Keys(&k.ring).Data()
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

// Every Purpose constant of the package takes the fast path: a purpose added without
// joining knownPurposes would still work, at jwx's generic cost on every request.
func TestEveryPurposeIsKnown(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for i, name := range spec.(*ast.ValueSpec).Names {
					if !strings.HasPrefix(name.Name, "Purpose") {
						continue
					}
					found++
					lit, ok := spec.(*ast.ValueSpec).Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s is not a string literal", name.Name)
					}
					v, _ := strconv.Unquote(lit.Value)
					if !slices.Contains(knownPurposes, v) {
						t.Errorf("%s (%q) is not in knownPurposes", name.Name, v)
					}
				}
			}
		}
	}
	if found < len(knownPurposes) {
		t.Fatalf("found %d Purpose constants, knownPurposes has %d", found, len(knownPurposes))
	}
}
