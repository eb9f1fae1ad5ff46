package registry

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

func ids(ps []*Platform) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

// Pages come in ID order, each after the last ID of the one before; a registration added
// or deleted between pages moves no other one, so paging sees every registration present
// throughout exactly once.
func TestPage(t *testing.T) {
	r := New()
	now := time.Now()
	for _, name := range []string{"d", "b", "f", "a", "c", "e"} {
		r.Apply(platformRegistration(name, "https://lms", name, now))
	}
	page, more := r.Page("", 2, nil)
	if got := ids(page); !slices.Equal(got, []string{"a", "b"}) || !more {
		t.Fatalf("first page = %v (more %v), want [a b] and more", got, more)
	}
	// Between pages: "bb" is added after the cursor, "a" (seen) and "d" (not yet seen)
	// are deleted, "ca" is added ahead.
	r.Apply(platformRegistration("bb", "https://lms", "bb", now))
	r.Apply(platformRegistration("ca", "https://lms", "ca", now))
	r.Forget(platformRegistration("a", "https://lms", "a", now))
	r.Forget(platformRegistration("d", "https://lms", "d", now))
	page, more = r.Page("b", 2, nil)
	if got := ids(page); !slices.Equal(got, []string{"bb", "c"}) || !more {
		t.Fatalf("second page = %v (more %v), want [bb c] and more", got, more)
	}
	page, more = r.Page("c", 2, nil)
	if got := ids(page); !slices.Equal(got, []string{"ca", "e"}) || !more {
		t.Fatalf("third page = %v (more %v), want [ca e] and more", got, more)
	}
	page, more = r.Page("e", 2, nil)
	if got := ids(page); !slices.Equal(got, []string{"f"}) || more {
		t.Fatalf("last page = %v (more %v), want [f] and no more", got, more)
	}
	// An ID that no longer exists still positions the page.
	if page, _ = r.Page("bz", 1, nil); !slices.Equal(ids(page), []string{"c"}) {
		t.Fatalf("page after a deleted ID = %v, want [c]", ids(page))
	}
	if page, more = r.Page("f", 2, nil); len(page) != 0 || more {
		t.Fatalf("page after the last = %v (more %v), want empty", ids(page), more)
	}
}

// A filtered page counts only matches, and more is true only when another match follows.
func TestPageWithFilter(t *testing.T) {
	r := New()
	now := time.Now()
	for i := range 10 {
		r.Apply(platformRegistration(fmt.Sprintf("r%d", i), fmt.Sprintf("https://lms-%d", i%2), fmt.Sprint(i), now))
	}
	odd := func(p *Platform) bool { return p.Spec.URL == "https://lms-1" }
	page, more := r.Page("", 2, odd)
	if !slices.Equal(ids(page), []string{"r1", "r3"}) || !more {
		t.Fatalf("page = %v (more %v)", ids(page), more)
	}
	page, more = r.Page("r7", 2, odd)
	if !slices.Equal(ids(page), []string{"r9"}) || more {
		t.Fatalf("page = %v (more %v), want [r9] and no more", ids(page), more)
	}
	page, more = r.Page("r5", 2, odd)
	if !slices.Equal(ids(page), []string{"r7", "r9"}) || more {
		t.Fatalf("page = %v (more %v), want [r7 r9] and no more: nothing matches after r9", ids(page), more)
	}
}

// The snapshot follows every kind of change, including a key arriving (which replaces
// the registration's snapshot), and a page is a copy the next change does not touch.
func TestSortedFollowsChanges(t *testing.T) {
	r := New()
	reg := platformRegistration("a", "https://lms", "1", time.Now())
	r.Apply(reg)
	before := r.List(nil)
	if len(before) != 1 || before[0].Key != nil {
		t.Fatalf("list = %v", ids(before))
	}
	r.ApplySecret(noLog, keySecret(t, reg))
	after := r.List(nil)
	if len(after) != 1 || after[0].Key == nil {
		t.Fatal("the list does not show the key that arrived")
	}
	if before[0].Key != nil {
		t.Fatal("an earlier page changed")
	}
	r.Forget(reg)
	if l := r.List(nil); len(l) != 0 || r.Len() != 0 {
		t.Fatalf("after delete: %v", ids(l))
	}
}

func loaded(b *testing.B, n int) *Registry {
	r := New()
	now := time.Now()
	for i := range n {
		r.Apply(platformRegistration(fmt.Sprintf("lms-%05d", i), fmt.Sprintf("https://lms-%d.example", i%100), fmt.Sprint(i), now))
	}
	return r
}

// BenchmarkPage cuts a page of 100 out of 10,000 registrations, at a random place.
func BenchmarkPage(b *testing.B) {
	r := loaded(b, 10000)
	r.sorted()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		page, _ := r.Page(fmt.Sprintf("lms-%05d", (i*7919)%9900), 100, nil)
		if len(page) != 100 {
			b.Fatalf("page of %d", len(page))
		}
		i++
	}
}

// BenchmarkPageAfterChange is the worst case: every page follows a change, so each one
// rebuilds the sorted snapshot of 10,000.
func BenchmarkPageAfterChange(b *testing.B) {
	r := loaded(b, 10000)
	reg := platformRegistration("lms-00042", "https://lms-42.example", "42", time.Now())
	b.ReportAllocs()
	for b.Loop() {
		r.Apply(reg)
		if page, _ := r.Page("lms-05000", 100, nil); len(page) != 100 {
			b.Fatalf("page of %d", len(page))
		}
	}
}

// The merged snapshot equals a full sort after any mix of adds, updates, key changes and
// deletes between reads, including more changes than are merged (maxTouched).
func TestSortedMatchesAFullSort(t *testing.T) {
	r := New()
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	regs := map[string]*ltiv1.PlatformRegistration{}
	for round, changes := range []int{50, 1, 0, 7, 300, maxTouched + 10, 3, 2000} {
		for range changes {
			name := fmt.Sprintf("r-%04d", rng.IntN(3000))
			if reg, ok := regs[name]; ok && rng.IntN(3) == 0 {
				r.Forget(reg)
				delete(regs, name)
				continue
			}
			reg := platformRegistration(name, "https://lms", name, now)
			reg.Generation = int64(round + 1)
			regs[name] = reg
			r.Apply(reg)
		}
		want := make([]string, 0, len(regs))
		for name := range regs {
			want = append(want, name)
		}
		slices.Sort(want)
		got := r.sorted()
		if !slices.Equal(ids(got), want) {
			t.Fatalf("round %d: sorted has %d, want %d; differs", round, len(got), len(want))
		}
		for _, p := range got {
			if p != r.Get(p.ID) {
				t.Fatalf("round %d: %s is a stale snapshot", round, p.ID)
			}
		}
	}
}
