package replay

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	operationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ltiop_replay_store_operations_total",
		Help: "Replay-store uses by backend (memory, redis) and outcome: first (recorded), seen (a replay refused) or error (not recorded: the request was refused with 503).",
	}, []string{"backend", "outcome"})
	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ltiop_replay_store_operation_duration_seconds",
		Help:    "Time of one replay-store use, retry included, by backend.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
	}, []string{"backend"})
)

func init() { metrics.Registry.MustRegister(operationsTotal, operationDuration) }

// errorLogInterval spaces the log lines of a failing store: an outage fails every
// request, and one line per request would drown the log.
const errorLogInterval = 10 * time.Second

// Observe counts and times every use of s in the metrics under backend, and logs its
// errors at most once per errorLogInterval (with how many there were).
func Observe(s Store, backend string) Store {
	return &observed{Store: s, backend: backend, log: log.Log.WithName("replay"),
		first: operationsTotal.WithLabelValues(backend, "first"), seen: operationsTotal.WithLabelValues(backend, "seen"),
		failed: operationsTotal.WithLabelValues(backend, "error"), duration: operationDuration.WithLabelValues(backend)}
}

type observed struct {
	Store
	backend             string
	first, seen, failed prometheus.Counter
	duration            prometheus.Observer
	log                 logr.Logger
	mu                  sync.Mutex
	lastLog             time.Time
	unlogged            int
}

func (o *observed) Use(ctx context.Context, key string, expires, now time.Time) (bool, error) {
	start := time.Now()
	first, err := o.Store.Use(ctx, key, expires, now)
	o.duration.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		o.failed.Inc()
		o.logError(err)
	case first:
		o.first.Inc()
	default:
		o.seen.Inc()
	}
	return first, err
}

// logError writes the error, never the key: keys are (hashes of) tokens.
func (o *observed) logError(err error) {
	o.mu.Lock()
	o.unlogged++
	now := time.Now()
	if now.Sub(o.lastLog) < errorLogInterval {
		o.mu.Unlock()
		return
	}
	n := o.unlogged
	o.lastLog, o.unlogged = now, 0
	o.mu.Unlock()
	o.log.Error(err, "the replay store failed: requests that need it are refused with 503 REPLAY_STORE_UNAVAILABLE",
		"backend", o.backend, "failures", n, "logEvery", errorLogInterval.String())
}
