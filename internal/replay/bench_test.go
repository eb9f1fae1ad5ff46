package replay

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testredis"
)

// ids are a steady stream of distinct states, as launches make them.
func ids() []string {
	ids := make([]string, 1<<20)
	for i := range ids {
		ids[i] = "state:" + strconv.Itoa(i)
	}
	return ids
}

func BenchmarkMemoryUse(b *testing.B) {
	c := NewMemory(100_000)
	ids := ids()
	ctx := context.Background()
	start := time.Unix(1_800_000_000, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// A steady stream: 1000 new states a second, each valid 10 minutes.
		now := start.Add(time.Duration(i) * time.Millisecond)
		_, _ = c.Use(ctx, ids[i&(len(ids)-1)], now.Add(10*time.Minute), now)
		i++
	}
}

// BenchmarkRedisUse is one use over loopback to a local redis-server, one request at a
// time: the latency a launch pays. p50-ms is the median of the uses.
func BenchmarkRedisUse(b *testing.B) {
	srv := testredis.Start(b)
	s := newRedis(b, srv, "ltiop:bench:", time.Second)
	benchmarkUses(b, s)
}

// benchmarkUses records new ids in s for as long as b runs, and reports the median and 99th
// percentile latency of one use (p50-ms, p99-ms).
func benchmarkUses(b *testing.B, s *Redis) {
	prefix := strconv.FormatInt(time.Now().UnixNano(), 36) + ":" // -count > 1 reuses the server
	ids := ids()
	ctx := context.Background()
	took := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now := time.Now()
		first, err := s.Use(ctx, prefix+ids[i&(len(ids)-1)], now.Add(10*time.Minute), now)
		if err != nil || !first {
			b.Fatal(first, err)
		}
		if len(took) < cap(took) {
			took = append(took, time.Since(now))
		}
		i++
	}
	if len(took) > 0 {
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
		b.ReportMetric(float64(took[len(took)*99/100])/float64(time.Millisecond), "p99-ms")
	}
}

// BenchmarkRedisUseAppendFsync is BenchmarkRedisUse against a Redis that writes and syncs
// its append-only file before each reply, as the chart's Redis does: what keeping each use
// across a restart costs a launch, on the disk of the temporary directory.
func BenchmarkRedisUseAppendFsync(b *testing.B) {
	srv := testredis.Start(b, testredis.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	benchmarkUses(b, newRedis(b, srv, "ltiop:bench:", time.Second))
}
