package replay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testredis"
)

// checkSeen holds a Checker to its rule: Seen tells, and never records.
func checkSeen(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	seen := func(key string, at time.Time) bool {
		t.Helper()
		ok, err := Seen(ctx, s, key, at)
		if err != nil {
			t.Fatalf("Seen(%q): %v", key, err)
		}
		return ok
	}
	if seen("notice:1", now) {
		t.Fatal("an unrecorded key is seen")
	}
	if first, err := s.Use(ctx, "notice:1", now.Add(time.Minute), now); err != nil || !first {
		t.Fatalf("Use after Seen = %v, %v: Seen must not record", first, err)
	}
	if !seen("notice:1", now.Add(time.Second)) {
		t.Error("a recorded key is not seen")
	}
	if seen("notice:2", now) {
		t.Error("another key is seen")
	}
}

func TestMemorySeen(t *testing.T) {
	m := NewMemory(10)
	checkSeen(t, m)
	if ok, _ := m.Seen(context.Background(), "notice:1", time.Now().Add(2*time.Minute)); ok {
		t.Error("an expired key is seen")
	}
}

func TestObservedSeen(t *testing.T) { checkSeen(t, Observe(NewMemory(10), "memory")) }

func TestRedisSeen(t *testing.T) {
	srv := testredis.Start(t)
	checkSeen(t, newRedis(t, srv, "ltiop:seen:", 0))
}

type useOnly struct{ Store }

func TestSeenWithoutChecker(t *testing.T) {
	if _, err := Seen(context.Background(), useOnly{NewMemory(1)}, "k", time.Now()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Seen on a store that cannot look up = %v, want ErrUnavailable", err)
	}
}
