package replay

import (
	"context"
	"sync"
	"time"
)

// Memory is the Store of one replica: it remembers single-use ids in this process until
// they expire. Several replicas each with their own Memory would each accept an id once,
// so it is right only when one replica serves. Memory is bounded: it holds at most max
// ids; when full, expired ids are dropped first, then the ids closest to expiry. It is
// safe for concurrent use and never fails.
//
// Ids are kept in buckets of one second by expiry (rounded up, so an id is never forgotten
// before it expires). Use costs O(1) amortised — a map operation plus an append — and
// O(log B) when it opens a new second, B being the number of distinct seconds in which
// remembered ids expire.
type Memory struct {
	mu      sync.Mutex
	limit   int
	ids     map[string]int64 // id -> the second of its bucket
	buckets map[int64]*bucket
	seconds []int64 // min-heap of the bucket seconds, each once
	peak    int     // the most ids held since the map was last rebuilt
}

type bucket struct {
	ids  []string
	head int // ids[:head] were evicted
}

// NewMemory returns a store of at most maxIDs ids (at least 1).
func NewMemory(maxIDs int) *Memory {
	if maxIDs < 1 {
		maxIDs = 1
	}
	return &Memory{limit: maxIDs, ids: map[string]int64{}, buckets: map[int64]*bucket{}}
}

// Use records id, valid until expires, and reports whether this is its first use. It
// returns false for an id seen before and not yet expired, and for an id whose expiry is
// not after now (an expired id cannot be remembered, so it is refused). The error is
// always nil.
func (c *Memory) Use(_ context.Context, id string, expires, now time.Time) (bool, error) {
	return c.use(id, expires, now), nil
}

func (c *Memory) use(id string, expires, now time.Time) bool {
	if !expires.After(now) {
		return false
	}
	sec := expires.Unix()
	if expires.Nanosecond() != 0 {
		sec++
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now.Unix())
	if _, seen := c.ids[id]; seen {
		return false
	}
	for len(c.ids) >= c.limit {
		c.evictOne()
	}
	b := c.buckets[sec]
	if b == nil {
		b = &bucket{}
		c.buckets[sec] = b
		c.push(sec)
	}
	b.ids = append(b.ids, id)
	c.ids[id] = sec
	c.peak = max(c.peak, len(c.ids))
	return true
}

// Len returns the number of ids remembered (expired ones go at the next Use).
func (c *Memory) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

// sweep drops the buckets whose second has come: all their ids have expired.
func (c *Memory) sweep(now int64) {
	for len(c.seconds) > 0 && c.seconds[0] <= now {
		sec := c.pop()
		b := c.buckets[sec]
		for _, id := range b.ids[b.head:] {
			delete(c.ids, id)
		}
		delete(c.buckets, sec)
	}
	// Go maps keep their size after deletes: after a burst has expired, rebuild the map so
	// the memory really goes. Amortised over the deletes that made it small, this is O(1).
	if c.peak >= 1024 && len(c.ids) <= c.peak/8 {
		ids := make(map[string]int64, len(c.ids))
		for id, sec := range c.ids {
			ids[id] = sec
		}
		c.ids, c.peak = ids, len(ids)
	}
}

// evictOne forgets the id closest to expiry.
func (c *Memory) evictOne() {
	sec := c.seconds[0]
	b := c.buckets[sec]
	delete(c.ids, b.ids[b.head])
	b.ids[b.head] = ""
	b.head++
	if b.head == len(b.ids) {
		c.pop()
		delete(c.buckets, sec)
	}
}

// push and pop keep c.seconds a binary min-heap.
func (c *Memory) push(sec int64) {
	h := append(c.seconds, sec)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent] <= h[i] {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	c.seconds = h
}

func (c *Memory) pop() int64 {
	h := c.seconds
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, smallest := 2*i+1, 2*i+2, i
		if l < len(h) && h[l] < h[smallest] {
			smallest = l
		}
		if r < len(h) && h[r] < h[smallest] {
			smallest = r
		}
		if smallest == i {
			break
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
	c.seconds = h
	return top
}
