package replay

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/ltiop/ltiop/test/utils/testredis"
)

func uses(backend, outcome string) float64 {
	return testutil.ToFloat64(operationsTotal.WithLabelValues(backend, outcome))
}

func timed(t *testing.T, backend string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := operationDuration.WithLabelValues(backend).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Every use is counted by outcome and timed; errors are logged at most once per interval,
// with how many there were, and never with the item.
func TestObserveCountsAndLogsErrorsSparingly(t *testing.T) {
	ctx, now := context.Background(), time.Now()
	mem := Observe(NewMemory(10), "memory-observe-test")
	for range 2 {
		_, _ = mem.Use(ctx, "k", now.Add(time.Minute), now)
	}
	if uses("memory-observe-test", "first") != 1 || uses("memory-observe-test", "seen") != 1 || timed(t, "memory-observe-test") != 2 {
		t.Errorf("memory: first %v, seen %v, timed %d", uses("memory-observe-test", "first"),
			uses("memory-observe-test", "seen"), timed(t, "memory-observe-test"))
	}

	srv := testredis.Start(t)
	r := newRedis(t, srv, "p:", 20*time.Millisecond)
	srv.Stop()
	var mu sync.Mutex
	var lines []string
	o := Observe(r, "redis-observe-test").(*observed)
	o.log = funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	const item = "state:the-token-itself"
	for range 5 {
		if _, err := o.Use(ctx, item, now.Add(time.Minute), now); err == nil {
			t.Fatal("a use on a stopped server succeeded")
		}
	}
	if got := uses("redis-observe-test", "error"); got != 5 {
		t.Errorf("errors counted %v, want 5", got)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"failures"=1`) {
		t.Fatalf("log lines %q, want one", lines)
	}
	o.mu.Lock()
	o.lastLog = o.lastLog.Add(-errorLogInterval)
	o.mu.Unlock()
	_, _ = o.Use(ctx, item, now.Add(time.Minute), now)
	if len(lines) != 2 || !strings.Contains(lines[1], `"failures"=5`) {
		t.Fatalf("log lines %q, want a second one counting 5", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, "the-token-itself") || strings.Contains(l, r.Key(item)) {
			t.Errorf("the log holds the item: %s", l)
		}
	}
}
