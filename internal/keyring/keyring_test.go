package keyring_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/keyring"
)

// idsUse is a Use whose prepared data are the ids of the set.
type idsUse struct{ keyring.SealingKind }

func (idsUse) Name() string { return "test" }

func (idsUse) Prepare(sorted []keyring.SealingKey) ([]string, error) { return ids(sorted) }

func TestKeyring(t *testing.T) {
	var k keyring.Keyring[keyring.SealingKey, []string, idsUse]
	if k.Ready() || len(k.IDs()) != 0 || keyring.Keys(&k).Data() != nil {
		t.Fatal("the zero Keyring is not empty")
	}
	keys := sealingKeys(t)
	if err := k.Replace(keys[:]); err != nil {
		t.Fatal(err)
	}
	want := []string{keys[0].ID, keys[1].ID, keys[2].ID}
	if !k.Ready() || !slices.Equal(k.IDs(), want) || !slices.Equal(keyring.Keys(&k).Data(), want) {
		t.Fatalf("after Replace: ready %v, ids %v, data %v", k.Ready(), k.IDs(), keyring.Keys(&k).Data())
	}
	// Errors carry the keyring's name; a refused set leaves the keys in place.
	if err := k.Replace(nil); err == nil || !strings.HasPrefix(err.Error(), "test: ") {
		t.Fatalf("empty set: %v", err)
	}
	if !slices.Equal(k.IDs(), want) {
		t.Fatalf("a refused set changed the keys: %v", k.IDs())
	}
}
