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

// A real master, replica and sentinel: the master is killed mid-flow. While no master
// answers, every use fails closed (ErrUnavailable, never "first use" unrecorded); after the
// failover uses are recorded again on the promoted replica, and no item used before the
// failover is accepted again.
func TestRedisSentinelFailover(t *testing.T) {
	ctx := context.Background()
	g := testredis.StartGroup(t, "ltiop", 1, 500*time.Millisecond)
	master, replica, sentinel := g.Servers[0], g.Servers[1], g.Sentinel

	store, err := NewRedis(RedisOptions{URL: "redis:///0", KeyPrefix: "sentinel:", Timeout: 200 * time.Millisecond,
		Sentinel: &SentinelOptions{MasterName: "ltiop", Addrs: []string{sentinel.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	now := time.Now()
	expires := now.Add(time.Hour)
	const before = 50
	for i := range before {
		first, err := store.Use(ctx, "before-"+strconv.Itoa(i), expires, now)
		if err != nil || !first {
			t.Fatalf("use %d before the failover: first=%v err=%v", i, first, err)
		}
	}
	// Replication is asynchronous: what the test relies on must have reached the replica
	// (docs/security.md says what a failover may forget otherwise).
	if n, err := inspect(t, master).Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}

	master.Stop() // SIGKILL, mid-flow
	failedClosed, deadline := 0, time.Now().Add(60*time.Second)
	for i := 0; ; i++ {
		key := "during-" + strconv.Itoa(i)
		first, err := store.Use(ctx, key, expires, now)
		if err == nil {
			if !first {
				t.Fatalf("a new item %s was refused", key)
			}
			break // a master answers again
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("use during the failover: %v, want ErrUnavailable", err)
		}
		failedClosed++
		if time.Now().After(deadline) {
			t.Fatal("no master a minute after the master was killed")
		}
		time.Sleep(10 * time.Millisecond) // a steady flow of uses, not a wait for the failover
	}
	if failedClosed == 0 {
		t.Fatal("no use failed while the master was gone: the test saw no failover")
	}
	role, err := inspect(t, replica).Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("the replica was not promoted: %v %v", role, err)
	}
	for i := range before {
		first, err := store.Use(ctx, "before-"+strconv.Itoa(i), expires, now)
		if err != nil || first {
			t.Fatalf("item %d used before the failover: first=%v err=%v; a replay would be accepted", i, first, err)
		}
	}
	t.Logf("%d uses failed closed during the failover", failedClosed)
}

func TestSentinelOptionsAreChecked(t *testing.T) {
	for _, o := range []*SentinelOptions{{Addrs: []string{"127.0.0.1:26379"}}, {MasterName: "m"}} {
		if _, err := NewRedis(RedisOptions{URL: "redis:///0", Sentinel: o}); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := NewRedis(RedisOptions{URL: "redis:///0"}); err == nil {
		t.Error("a URL without a host is accepted without Sentinel")
	}
}

// Sentinel is trusted to name the master: whoever changes its answer could point ltiop at
// a Redis of their own that answers every use as the first (replays accepted). With TLS,
// the address a sentinel names must hold a certificate for the URL's host name, so the
// URL must have one: rediss:///0 would check the certificates against "localhost".
func TestSentinelWithTLSChecksTheMastersHostName(t *testing.T) {
	sentinel := &SentinelOptions{MasterName: "m", Addrs: []string{"127.0.0.1:26379"}}
	if _, err := NewRedis(RedisOptions{URL: "rediss:///0", Sentinel: sentinel}); err == nil ||
		!strings.Contains(err.Error(), "host name") {
		t.Fatalf("rediss:///0 with Sentinel: %v, want a refusal naming the host name", err)
	}
	r, err := NewRedis(RedisOptions{URL: "rediss://redis-master.example/0", Sentinel: sentinel})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tc := r.client.Options().TLSConfig; tc == nil || tc.ServerName != "redis-master.example" || tc.InsecureSkipVerify {
		t.Fatalf("TLS config %+v, want certificates checked against redis-master.example", tc)
	}
	if _, err := NewRedis(RedisOptions{URL: "redis:///0", Sentinel: sentinel}); err != nil {
		t.Fatalf("redis:///0 (no TLS) with Sentinel: %v", err)
	}
}
