package keyring_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

// ids is a prepare function: the set's Data is the ids it was prepared from.
func ids[K keyring.Key](sorted []K) ([]string, error) {
	out := make([]string, len(sorted))
	for i, k := range sorted {
		out[i] = k.Info().ID
	}
	return out, nil
}

// sealingKeys returns three sealing keys that come into use at t0-48h, t0 and t0+10m.
func sealingKeys(t *testing.T) [3]keyring.SealingKey {
	return [3]keyring.SealingKey{
		testkeys.SealingKey(t, t0.Add(-48*time.Hour), 0),
		testkeys.SealingKey(t, t0, 0),
		testkeys.SealingKey(t, t0, 10*time.Minute),
	}
}

// signingKeys returns three signing keys that come into use at t0-48h, t0 and t0+10m.
func signingKeys(t *testing.T) [3]keyring.SigningKey {
	return [3]keyring.SigningKey{signingKey(t, 0, t0.Add(-48*time.Hour)), signingKey(t, 1, t0), signingKey(t, 2, t0.Add(10*time.Minute))}
}

func TestRingPicksTheKeyByNotBefore(t *testing.T) {
	t.Run("sealing", func(t *testing.T) { testPicksByNotBefore(t, sealingKeys(t)) })
	t.Run("signing", func(t *testing.T) { testPicksByNotBefore(t, signingKeys(t)) })
}

func testPicksByNotBefore[K keyring.Key](t *testing.T, keys [3]K) {
	old, cur, next := keys[0], keys[1], keys[2]
	var r keyring.Ring[K, []string]
	if err := r.Replace([]K{next, old, cur}, ids[K]); err != nil { // any order
		t.Fatal(err)
	}
	s := r.Load()
	want := []string{old.Info().ID, cur.Info().ID, next.Info().ID}
	if got := s.IDs(); !slices.Equal(got, want) || s.Len() != 3 {
		t.Fatalf("IDs %v, want rotation order %v", got, want)
	}
	if !slices.Equal(s.Data(), want) {
		t.Errorf("prepare saw %v, want the keys in rotation order", s.Data())
	}
	for _, c := range []struct {
		at   time.Time
		want K
	}{
		{t0.Add(-time.Hour), old},
		{t0.Add(-time.Nanosecond), old},
		{t0, cur},
		{t0.Add(10*time.Minute - time.Nanosecond), cur},
		{t0.Add(10 * time.Minute), next},
		{t0.Add(365 * 24 * time.Hour), next},
		// All keys in the future (this replica's clock is behind): the earliest is in use.
		{t0.Add(-72 * time.Hour), old},
	} {
		if got, ok := s.Current(c.at); !ok || got.Info().ID != c.want.Info().ID {
			t.Errorf("at %v: %s, want %s", c.at, got.Info().ID, c.want.Info().ID)
		}
	}
	for _, k := range keys {
		if got, ok := s.Lookup(k.Info().ID); !ok || got.Info() != k.Info() {
			t.Errorf("Lookup(%s) = %v, %v", k.Info().ID, got.Info(), ok)
		}
	}
	if _, ok := s.Lookup("unknown"); ok {
		t.Error("Lookup found an unknown id")
	}
	if _, ok := s.Lookup(""); ok {
		t.Error("Lookup found the empty id")
	}
}

func TestSort(t *testing.T) {
	a := signingKey(t, 0, t0)
	b := signingKey(t, 1, t0)
	c := signingKey(t, 2, t0.Add(-time.Minute))
	b.Created = a.Created.Add(time.Second) // same NotBefore: the later Created is in use
	set := []keyring.SigningKey{b, a, c}
	keyring.Sort(set)
	if set[0].ID != c.ID || set[1].ID != a.ID || set[2].ID != b.ID {
		t.Errorf("order %s %s %s, want %s %s %s", set[0].ID, set[1].ID, set[2].ID, c.ID, a.ID, b.ID)
	}
	// Everything equal but the ID: by ID.
	a.Created, b.Created = t0, t0
	set = []keyring.SigningKey{b, a}
	keyring.Sort(set)
	if set[0].ID > set[1].ID {
		t.Errorf("same times: not ordered by ID")
	}
	if keyring.Compare(a.Info(), a.Info()) != 0 {
		t.Error("a key does not compare equal to itself")
	}
}

func TestEmptyRing(t *testing.T) {
	var r keyring.Ring[keyring.SealingKey, []string]
	s := r.Load()
	if s.Len() != 0 || len(s.IDs()) != 0 || s.Data() != nil {
		t.Errorf("the zero Ring holds keys: %v", s.IDs())
	}
	if _, ok := s.Current(t0); ok {
		t.Error("the zero Ring has a current key")
	}
	if _, ok := s.Lookup("x"); ok {
		t.Error("the zero Ring found a key")
	}
	if err := r.Replace(nil, ids[keyring.SealingKey]); err == nil {
		t.Error("replaced with no keys")
	}
	k := testkeys.SealingKey(t, t0, 0)
	if err := r.Replace([]keyring.SealingKey{k}, ids[keyring.SealingKey]); err != nil || r.Load().Len() != 1 {
		t.Fatalf("Replace on the zero Ring: %v", err)
	}
	if cur, ok := r.Load().Current(t0); !ok || cur.ID != k.ID {
		t.Errorf("current %v, want %s", cur.ID, k.ID)
	}
}

func TestReplaceRefusesBadSets(t *testing.T) {
	a := testkeys.SealingKey(t, t0, 0)
	short := testkeys.SealingKey(t, t0, 0)
	short.Secret = short.Secret[:16]
	var r keyring.Ring[keyring.SealingKey, []string]
	if err := r.Replace([]keyring.SealingKey{a}, ids); err != nil {
		t.Fatal(err)
	}
	before := r.Load()
	prepare := ids[keyring.SealingKey]
	failing := func([]keyring.SealingKey) ([]string, error) { return nil, errors.New("cannot prepare") }
	for name, c := range map[string]struct {
		keys    []keyring.SealingKey
		prepare func([]keyring.SealingKey) ([]string, error)
		want    string
	}{
		"empty":         {nil, prepare, "never cleared"},
		"duplicate":     {[]keyring.SealingKey{a, a}, prepare, "key 1: duplicate id"},
		"invalid":       {[]keyring.SealingKey{a, short}, prepare, "key 1: key " + short.ID + ": secret must be 32 bytes"},
		"prepare fails": {[]keyring.SealingKey{a}, failing, "cannot prepare"},
	} {
		err := r.Replace(c.keys, c.prepare)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
		if r.Load() != before {
			t.Errorf("%s: a refused set replaced the keys", name)
		}
	}
}

func TestReplaceKeepsItsOwnSlice(t *testing.T) {
	a, b := testkeys.SealingKey(t, t0, 0), testkeys.SealingKey(t, t0, time.Minute)
	keys := []keyring.SealingKey{b, a}
	var r keyring.Ring[keyring.SealingKey, struct{}]
	if err := r.Replace(keys, nil); err != nil {
		t.Fatal(err)
	}
	if keys[0].ID != b.ID {
		t.Error("Replace sorted the caller's slice")
	}
	keys[0], keys[1] = a, a
	if got := r.Load().IDs(); !slices.Equal(got, []string{a.ID, b.ID}) {
		t.Errorf("the set changed with the caller's slice: %v", got)
	}
}

// TestRingConcurrentUse: readers always see one consistent set (its Data prepared from its
// own keys) while it is replaced.
func TestRingConcurrentUse(t *testing.T) {
	keys := sealingKeys(t)
	sets := [][]keyring.SealingKey{{keys[0]}, {keys[0], keys[1]}, {keys[1], keys[2]}}
	var r keyring.Ring[keyring.SealingKey, []string]
	if err := r.Replace(sets[0], ids); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				s := r.Load()
				cur, ok := s.Current(t0.Add(time.Hour))
				if !ok || !slices.Contains(s.Data(), cur.ID) || !slices.Equal(s.Data(), s.IDs()) {
					t.Errorf("an inconsistent set: current %s, ids %v, data %v", cur.ID, s.IDs(), s.Data())
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			if err := r.Replace(sets[i%len(sets)], ids); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
}
