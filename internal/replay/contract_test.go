package replay

import (
	"context"
	"testing"
	"time"
)

// checkContract holds every backend to Store's rules, through the interface.
func checkContract(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	exp := now.Add(10 * time.Minute)
	use := func(key string, expires, at time.Time) bool {
		t.Helper()
		first, err := s.Use(ctx, key, expires, at)
		if err != nil {
			t.Fatalf("Use(%q): %v", key, err)
		}
		return first
	}
	if !use("state:1", exp, now) {
		t.Fatal("first use refused")
	}
	if use("state:1", exp, now.Add(time.Second)) {
		t.Error("second use accepted")
	}
	if use("state:1", exp.Add(time.Hour), now.Add(9*time.Minute)) {
		t.Error("second use with another expiry accepted")
	}
	if !use("state:2", exp, now) {
		t.Error("another item refused")
	}
	if use("late", now, now) || use("later", now.Add(-time.Second), now) {
		t.Error("an item already expired was accepted")
	}
}

func TestMemoryContract(t *testing.T) { checkContract(t, NewMemory(10)) }
