// Package keyring holds ltiop's rotating key sets: the generic Ring that the sealing keyring
// (webserver/stores/sessions) and the platform signing keys (webserver/stores/signing) are built on, the
// two kinds of key the service Secret keeps (SealingKey, SigningKey) with their creation and
// their JSON in the Secret, and the follower that keeps a Ring in step with that Secret.
//
// Keys rotate by publishing first and using later: a key set holds every key in force, and
// the key in use is the newest whose NotBefore has passed. The controller adds a key with a
// NotBefore far enough ahead for every replica (and every cache of a published key) to know
// it first, and retires an old key once nothing it made can still be in use.
package keyring

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Info is what a ring knows of every key, whatever its kind.
type Info struct {
	// ID names the key: unique in a set, and the kid of what the key seals or signs.
	ID string
	// NotBefore is when the key comes into use. Until then it is held (it opens, it is
	// published) but not used.
	NotBefore time.Time
	// Created is when the key was generated.
	Created time.Time
}

// Key is a key a Ring can hold.
type Key interface {
	Info() Info
	// Validate says why the key cannot be held, without quoting key material.
	Validate() error
}

// Compare orders keys for rotation: by NotBefore, then Created, then ID. The last key whose
// NotBefore has passed is the one in use.
func Compare(a, b Info) int {
	if c := a.NotBefore.Compare(b.NotBefore); c != 0 {
		return c
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Sort puts keys in rotation order (see Compare).
func Sort[K Key](keys []K) {
	slices.SortFunc(keys, func(a, b K) int { return Compare(a.Info(), b.Info()) })
}

// Set is one immutable key set: valid keys with distinct ids, in rotation order, and D, what
// the user of the ring prepared from them once (headers, a published JWKS). A nil *Set is
// the empty set; every method works on it.
type Set[K Key, D any] struct {
	keys []K
	info []Info // info[i] is keys[i].Info(), read on every use without a call
	byID map[string]int
	data D
}

// newSet checks keys and orders them, then calls prepare (when not nil) with the sorted keys:
// what it returns is the set's Data. prepare must not modify the keys.
func newSet[K Key, D any](keys []K, prepare func(sorted []K) (D, error)) (*Set[K, D], error) {
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if err := k.Validate(); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		id := k.Info().ID
		if seen[id] {
			return nil, fmt.Errorf("key %d: duplicate id %q", i, id)
		}
		seen[id] = true
	}
	s := &Set[K, D]{keys: slices.Clone(keys), info: make([]Info, len(keys)), byID: make(map[string]int, len(keys))}
	Sort(s.keys)
	for i, k := range s.keys {
		s.info[i] = k.Info()
		s.byID[s.info[i].ID] = i
	}
	if prepare != nil {
		var err error
		if s.data, err = prepare(s.keys); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Len returns the number of keys held.
func (s *Set[K, D]) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// IDs returns the ids of the keys held, in rotation order (the last active one is in use).
func (s *Set[K, D]) IDs() []string {
	ids := make([]string, s.Len())
	for i := range ids {
		ids[i] = s.info[i].ID
	}
	return ids
}

// Current returns the key in use at now: the newest one whose NotBefore has passed. When none
// has (the keys were just created and this replica's clock is behind the controller's), the
// earliest key is in use: there is no older key anyone could prefer. ok is false only for
// the empty set.
func (s *Set[K, D]) Current(now time.Time) (key K, ok bool) {
	if s.Len() == 0 {
		return key, false
	}
	for i := len(s.keys) - 1; i >= 0; i-- {
		if !s.info[i].NotBefore.After(now) {
			return s.keys[i], true
		}
	}
	return s.keys[0], true
}

// Lookup returns the key with id, whether it is in use yet or not, or no longer.
func (s *Set[K, D]) Lookup(id string) (key K, ok bool) {
	if s == nil {
		return key, false
	}
	i, ok := s.byID[id]
	if !ok {
		return key, false
	}
	return s.keys[i], true
}

// Data returns what was prepared from the set (the zero D for the empty set).
func (s *Set[K, D]) Data() D {
	if s == nil {
		var zero D
		return zero
	}
	return s.data
}

// Ring holds the current key set of one kind and swaps it whole: reads take no lock and
// always see one consistent set. It is safe for concurrent use. The zero value holds the
// empty set.
type Ring[K Key, D any] struct {
	set atomic.Pointer[Set[K, D]]
}

// Load returns the current key set (nil, the empty set, until the first Replace).
func (r *Ring[K, D]) Load() *Set[K, D] { return r.set.Load() }

// Replace swaps in a set of keys, prepared with prepare (see Set). A set with an invalid key
// or a duplicate id is refused, and so is an empty one: keys are retired, never cleared. A
// refused set leaves the current one in place.
func (r *Ring[K, D]) Replace(keys []K, prepare func(sorted []K) (D, error)) error {
	if len(keys) == 0 {
		return errors.New("refusing to replace the keys with none: keys are retired, never cleared")
	}
	s, err := newSet(keys, prepare)
	if err != nil {
		return err
	}
	r.set.Store(s)
	return nil
}
