package registry

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// byName is the registrations ordered by ID: an immutable slice that lists and list pages
// are cut from without copying or sorting the set per request. It is rebuilt on the first
// read after a change, not on every change (a replica starting with 10,000 registrations
// sees some 20,000 informer events), and the rebuild merges the IDs changed since the last
// one into the previous slice: a copy of the pointers, no sort of the whole set.
type byName struct {
	mu    sync.Mutex // one rebuild at a time
	dirty atomic.Bool
	list  atomic.Pointer[[]*Platform]

	// touched holds the IDs changed since the last build; full says to sort everything
	// again instead (too many changes to merge). Both are written by index and unindex
	// under the registry's write lock, and read and reset by the one rebuild under its
	// read lock, so they need no lock of their own.
	touched map[string]struct{}
	full    bool
}

// maxTouched bounds the changed IDs remembered between two reads: beyond it a full
// rebuild is as cheap, and the set never grows with changes nobody reads.
const maxTouched = 4096

// touch records a change of id; the caller holds r.mu for writing.
func (s *byName) touch(id string) {
	s.dirty.Store(true)
	if s.full {
		return
	}
	if len(s.touched) >= maxTouched {
		s.full, s.touched = true, nil
		return
	}
	if s.touched == nil {
		s.touched = map[string]struct{}{}
	}
	s.touched[id] = struct{}{}
}

// sorted returns the current snapshot in ID order. The slice is shared: never modify it.
func (r *Registry) sorted() []*Platform {
	s := &r.byName
	if !s.dirty.Load() {
		if l := s.list.Load(); l != nil {
			return *l
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.list.Load()
	if old != nil && !s.dirty.Load() {
		return *old // another reader rebuilt it meanwhile
	}

	// Under the read lock, take the changes and what they changed to; merge after it.
	r.mu.RLock()
	s.dirty.Store(false) // a change after this point marks it dirty again
	var out []*Platform
	var changed []*Platform // the touched registrations that exist now
	var touched []string
	if old == nil || s.full {
		out = make([]*Platform, 0, len(r.byID))
		for _, p := range r.byID {
			out = append(out, p)
		}
	} else {
		touched = make([]string, 0, len(s.touched))
		for id := range s.touched {
			touched = append(touched, id)
		}
		slices.Sort(touched)
		changed = make([]*Platform, len(touched))
		for i, id := range touched {
			changed[i] = r.byID[id]
		}
	}
	s.touched, s.full = nil, false
	n := len(r.byID)
	r.mu.RUnlock()

	if touched == nil {
		slices.SortFunc(out, func(a, b *Platform) int { return strings.Compare(a.ID, b.ID) })
	} else {
		out = merge(*old, touched, changed, n)
	}
	s.list.Store(&out)
	return out
}

// merge returns old (sorted by ID) with each of the sorted IDs touched replaced by, or
// inserted as, its registration in changed (nil: deleted). n is the new length.
func merge(old []*Platform, touched []string, changed []*Platform, n int) []*Platform {
	out := make([]*Platform, 0, n)
	from := 0
	for i, id := range touched {
		at := from + sort.Search(len(old)-from, func(j int) bool { return old[from+j].ID >= id })
		out = append(out, old[from:at]...)
		if at < len(old) && old[at].ID == id {
			at++ // the old snapshot of id: replaced or deleted
		}
		if changed[i] != nil {
			out = append(out, changed[i])
		}
		from = at
	}
	return append(out, old[from:]...)
}

// Page returns, in ID order, up to limit registrations that match filter (nil matches
// all) and whose ID sorts after the given one ("" starts at the beginning); limit 0 means
// no limit. more reports whether further registrations match. The page is cut from a
// sorted snapshot: a binary search, then a scan that copies only what it returns.
func (r *Registry) Page(after string, limit int, filter func(*Platform) bool) (page []*Platform, more bool) {
	all := r.sorted()
	start := 0
	if after != "" {
		start = sort.Search(len(all), func(i int) bool { return all[i].ID > after })
	}
	if filter == nil {
		rest := all[start:]
		if limit > 0 && len(rest) > limit {
			return slices.Clone(rest[:limit]), true
		}
		return slices.Clone(rest), false
	}
	for _, p := range all[start:] {
		if !filter(p) {
			continue
		}
		if limit > 0 && len(page) == limit {
			return page, true
		}
		page = append(page, p)
	}
	return page, false
}

// Len returns the number of registrations.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byID)
}
