package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/test/utils/testredis"
)

// The replay store ltiop builds from the Sentinel configuration with nothing else set (the
// HA set-up as a new operator writes it; issue #34) keeps single use across a failover.
// Redis replicates asynchronously: a use the master acknowledged but never sent to a
// replica is unknown to the replica Sentinel promotes. The attack makes that certain: the
// replicas lose their link to the master (it refuses their resync, as a partition would),
// a launch state is used, the master is killed, Sentinel promotes a replica, and the same
// state is presented again. By default each use waits for a replica (WAIT 1), so the use
// no replica confirmed is refused (503 REPLAY_STORE_UNAVAILABLE: fail closed) and the
// state is accepted once at most; without WAIT it was accepted before and after.
func TestReplayStoreOfTheSentinelConfigurationSurvivesAFailover(t *testing.T) {
	g := testredis.StartGroup(t, "ltiop", 2, 500*time.Millisecond)
	env := map[string]string{
		"LTIOP_NAMESPACE": "ltiop", "LTIOP_PUBLIC_URL": "https://lti.example.com",
		"LTIOP_REPLAY_STORE": "redis:///0", "LTIOP_REPLAY_STORE_SENTINEL_MASTER": g.MasterName,
		"LTIOP_REPLAY_STORE_SENTINEL_ADDRS": g.Sentinel.Addr,
		// A loaded test machine, not what is tested: WAIT gets half of it.
		"LTIOP_REPLAY_STORE_TIMEOUT": "1s",
	}
	cfg, err := config.Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	store, closer, err := replay.Open(replayOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closer.Close() })
	ctx := context.Background()
	now := time.Now()
	use := func(item string) (bool, error) {
		first, err := store.Use(ctx, item, now.Add(10*time.Minute), now)
		return err == nil && first, err
	}

	// answer is the store's answer once it gives one: a refusal for want of a replica (a
	// failover under way) is tried again, as the user would.
	answer := func(item string) bool {
		deadline := time.Now().Add(time.Minute)
		for {
			ok, err := use(item)
			if err == nil {
				return ok
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answer for %s within a minute: %v", item, err)
			}
			time.Sleep(20 * time.Millisecond) // a steady flow of uses, not a wait for the failover
		}
	}

	if !answer("before") {
		t.Fatal("a first use while the replicas follow was refused")
	}
	if answer("before") {
		t.Fatal("a replay while the replicas follow was accepted")
	}

	master := g.Master()
	if err := g.CutOff(master); err != nil {
		t.Fatal(err)
	}
	accepted, err := use("launch-state")
	master.Stop() // SIGKILL
	if accepted {
		t.Log("a use no replica had was accepted: the replica Sentinel promotes will not know it")
	} else if !errors.Is(err, replay.ErrUnavailable) {
		t.Fatalf("a use no replica confirmed: %v, want ErrUnavailable", err)
	}

	// Uses are recorded again once Sentinel has promoted a replica and the other follows it.
	if !answer("after") {
		t.Fatal("a new item was refused after the failover")
	}
	if m := g.Master(); m == nil || m == master {
		t.Fatal("no replica was promoted")
	}
	if answer("before") {
		t.Error("a use confirmed before the failover was accepted again after it")
	}
	if again := answer("launch-state"); accepted && again {
		t.Error("the launch state was accepted twice: before the master died and after the failover")
	}
}
