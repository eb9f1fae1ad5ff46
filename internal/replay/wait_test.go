package replay

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testredis"
)

// masterAndReplica runs a real master and a replica following it.
func masterAndReplica(t testing.TB) (master, replica *testredis.Server) {
	t.Helper()
	master = testredis.Start(t)
	replica = testredis.Start(t, testredis.WithArgs("--replicaof", "127.0.0.1", master.Port()))
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := inspect(t, replica).Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return master, replica
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica does not follow the master")
		}
		time.Sleep(20 * time.Millisecond) // a poll interval
	}
}

func newWaitingRedis(t testing.TB, master *testredis.Server, replicas int, timeout time.Duration) *Redis {
	t.Helper()
	s, err := NewRedis(RedisOptions{URL: master.URL, KeyPrefix: "wait:", Timeout: timeout, WaitReplicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// With WaitReplicas, a use counts only once the replica has it: while the replica does not
// answer (SIGSTOP), uses fail closed, and a use the replica confirmed is on the replica.
func TestRedisWaitReplicas(t *testing.T) {
	ctx := context.Background()
	master, replica := masterAndReplica(t)
	s := newWaitingRedis(t, master, 1, 200*time.Millisecond)
	now := time.Now()
	first, err := s.Use(ctx, "confirmed", now.Add(time.Hour), now)
	if err != nil || !first {
		t.Fatalf("first use with a replica that answers: first=%v err=%v", first, err)
	}
	if n, err := inspect(t, replica).Exists(ctx, s.Key("confirmed")).Result(); err != nil || n != 1 {
		t.Fatalf("a confirmed use is not on the replica: %d %v", n, err)
	}
	if first, err := s.Use(ctx, "confirmed", now.Add(time.Hour), now); err != nil || first {
		t.Fatalf("second use: first=%v err=%v", first, err)
	}

	replica.Pause()
	first, err = s.Use(ctx, "unconfirmed", now.Add(time.Hour), now)
	replica.Resume()
	if !errors.Is(err, ErrUnavailable) || first {
		t.Fatalf("a use no replica confirmed: first=%v err=%v, want ErrUnavailable", first, err)
	}

	// More replicas asked for than there are: nothing is ever confirmed.
	two := newWaitingRedis(t, master, 2, 100*time.Millisecond)
	if first, err := two.Use(ctx, "two", now.Add(time.Hour), now); !errors.Is(err, ErrUnavailable) || first {
		t.Fatalf("WaitReplicas 2 with one replica: first=%v err=%v", first, err)
	}
	if _, err := NewRedis(RedisOptions{URL: master.URL, WaitReplicas: -1}); err == nil {
		t.Error("a negative WaitReplicas is accepted")
	}
}

// BenchmarkRedisUseWait is BenchmarkRedisUse against a master with one replica, without
// and with WAIT 1: what confirming each use on the replica costs a launch.
func BenchmarkRedisUseWait(b *testing.B) {
	master, _ := masterAndReplica(b)
	for _, wait := range []int{0, 1} {
		b.Run("replicas="+strconv.Itoa(wait), func(b *testing.B) {
			benchmarkUses(b, newWaitingRedis(b, master, wait, time.Second))
		})
	}
}
