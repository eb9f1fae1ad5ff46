package replay

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// T-STATE-03, T-NONCE-03: a state or nonce is accepted once.
func TestMemoryFirstUseOnly(t *testing.T) {
	c := NewMemory(10)
	exp := t0.Add(10 * time.Minute)
	if !c.use("state-1", exp, t0) {
		t.Fatal("first use refused")
	}
	if c.use("state-1", exp, t0.Add(time.Second)) {
		t.Error("second use accepted")
	}
	if c.use("state-1", exp.Add(time.Hour), t0.Add(9*time.Minute)) {
		t.Error("second use with another expiry accepted")
	}
	if !c.use("state-2", exp, t0) {
		t.Error("another id refused")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}
	if c.use("late", t0, t0) || c.use("later", t0.Add(-time.Second), t0) {
		t.Error("an id already expired was accepted")
	}
}

func TestMemoryExpiryFreesEntries(t *testing.T) {
	c := NewMemory(100_000)
	for i := range 5000 {
		c.use("n"+strconv.Itoa(i), t0.Add(30*time.Second), t0)
	}
	c.use("long", t0.Add(time.Hour), t0)
	if c.Len() != 5001 {
		t.Fatalf("Len = %d", c.Len())
	}
	// Until the ids expire they are remembered (exp is rounded up, never down)...
	if c.use("n1", t0.Add(30*time.Second), t0.Add(29*time.Second)) {
		t.Error("an id was forgotten before it expired")
	}
	// ...and once they have, the next Use drops them.
	c.use("new", t0.Add(time.Hour), t0.Add(31*time.Second))
	if c.Len() != 2 {
		t.Errorf("Len = %d after expiry, want 2", c.Len())
	}
	if c.use("long", t0.Add(time.Hour), t0.Add(31*time.Second)) {
		t.Error("an unexpired id was dropped with the expired ones")
	}
	if len(c.buckets) != 1 || len(c.seconds) != 1 {
		t.Errorf("%d buckets, %d seconds left, want 1", len(c.buckets), len(c.seconds))
	}
}

func TestMemoryBound(t *testing.T) {
	const limit = 1000
	c := NewMemory(limit)
	now := t0
	for i := range 10 * limit {
		now = now.Add(time.Millisecond)
		if !c.use("id"+strconv.Itoa(i), now.Add(10*time.Minute), now) {
			t.Fatalf("fresh id %d refused", i)
		}
		if c.Len() > limit {
			t.Fatalf("Len = %d > %d after %d inserts", c.Len(), limit, i+1)
		}
	}
	if c.Len() != limit {
		t.Errorf("Len = %d, want %d", c.Len(), limit)
	}
	// The newest ids (furthest from expiry) are the ones kept.
	if c.use("id"+strconv.Itoa(10*limit-1), now.Add(10*time.Minute), now) {
		t.Error("the newest id was evicted")
	}
}

func TestMemoryEvictsExpiredThenClosestToExpiry(t *testing.T) {
	c := NewMemory(4)
	c.use("short", t0.Add(10*time.Second), t0)
	c.use("a", t0.Add(3*time.Minute), t0)
	c.use("b", t0.Add(1*time.Minute), t0)
	c.use("c", t0.Add(2*time.Minute), t0)

	// Full. At +20s "short" has expired: it goes, nothing else does.
	now := t0.Add(20 * time.Second)
	c.use("d", t0.Add(4*time.Minute), now)
	for _, id := range []string{"a", "b", "c", "d"} {
		if c.use(id, t0.Add(time.Hour), now) {
			t.Errorf("%s was dropped instead of the expired id", id)
		}
	}
	// Full again, nothing expired: "b" (closest to expiry) makes room.
	c.use("e", t0.Add(5*time.Minute), now)
	for _, id := range []string{"a", "c", "d", "e"} {
		if c.use(id, t0.Add(time.Hour), now) {
			t.Errorf("%s was dropped instead of the id closest to expiry", id)
		}
	}
	if c.Len() != 4 {
		t.Errorf("Len = %d", c.Len())
	}
}

func TestMemoryShrinksAfterBurst(t *testing.T) {
	c := NewMemory(1 << 20)
	for i := range 50_000 {
		c.use(strconv.Itoa(i), t0.Add(time.Minute), t0)
	}
	c.use("after", t0.Add(time.Hour), t0.Add(2*time.Minute))
	if c.Len() != 1 || c.peak > 1 {
		t.Errorf("Len %d, peak %d: the map was not rebuilt", c.Len(), c.peak)
	}
}

func TestMemoryConcurrent(t *testing.T) {
	c := NewMemory(10_000)
	var accepted [1000]atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range len(accepted) {
				id := (i + g*37) % len(accepted)
				if c.use(fmt.Sprint("nonce-", id), t0.Add(time.Minute), t0) {
					accepted[id].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for id := range accepted {
		if n := accepted[id].Load(); n != 1 {
			t.Errorf("nonce %d accepted %d times", id, n)
		}
	}
}
