// Command chaos runs ltiop replicas under a steady load of complete launches and injects
// failures one at a time (issue #26 §3): a tool-key and a platform-key rotation, the API
// server cut off, the Redis master killed (Sentinel fails over; -failovers times in a row),
// the Redis master cut off from its replicas and then killed, a follower replica and the
// leader killed with SIGKILL, and a rolling restart with SIGTERM.
// Everything is real and local: the embedded control plane (kube-apiserver and etcd from
// KUBEBUILDER_ASSETS, the replicas reaching it through a TCP link the run cuts),
// redis-server as master, two replicas (-redis-replicas) and Sentinel, an LMS simulator
// signing real launches, and the ltiop binary run as one process per replica with leader
// election and the replay store found through Sentinel, in its default configuration (which
// confirms each use on a Redis replica: -env changes it).
//
// Browsers (a goroutine each) loop over login → launch → GET /api/idtoken, each request to
// the next replica in the Service's endpoints, and replay each launch right after it
// succeeded; after each failure the last launches before it are replayed again. For each
// failure it prints the launches attempted, succeeded and failed (with why) during the
// window, the replays accepted (must be 0), the time to recovery (from the injection until
// a launch started after the failure healed has succeeded) and the replicas' memory and
// goroutines before and after.
//
// -soak D instead runs the load for D against the replicas with no failure, printing RSS,
// Go heap, goroutines and open files every -sample.
//
// From the repository root (docs/install.md has figures):
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.37.1-etcd-3.7.0 go run ./hack/chaos
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.37.1-etcd-3.7.0 go run ./hack/chaos -replicas 1 -soak 30m
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	replicas, browsers int
	redisReplicas      int
	failovers          int
	faults             string
	apiOutage, window  time.Duration
	rejoinAfter        time.Duration
	downAfter          time.Duration
	soak, sample       time.Duration
	bin, out           string
	env                string
}

func main() {
	var o options
	flag.IntVar(&o.replicas, "replicas", 3, "ltiop replicas")
	flag.IntVar(&o.browsers, "c", 4, "concurrent browsers")
	flag.StringVar(&o.faults, "faults", "tool-key,platform-key,apiserver,redis,redis-partition,follower,leader,rolling", "failures to inject, in this order")
	flag.IntVar(&o.failovers, "failovers", 3, "Redis failovers in a row where -faults says redis")
	flag.IntVar(&o.redisReplicas, "redis-replicas", 2, "Redis replicas besides the master")
	flag.DurationVar(&o.rejoinAfter, "rejoin-after", 10*time.Second, "how long a killed Redis master stays away before it rejoins as a replica (a pod's restart)")
	flag.DurationVar(&o.apiOutage, "api-outage", 60*time.Second, "how long the API server stays cut off")
	flag.DurationVar(&o.window, "window", 30*time.Second, "shortest window counted per failure")
	flag.DurationVar(&o.downAfter, "down-after", time.Second, "Sentinel's down-after-milliseconds")
	flag.DurationVar(&o.soak, "soak", 0, "run the load this long with no failure instead, sampling memory")
	flag.DurationVar(&o.sample, "sample", time.Minute, "sampling interval of -soak")
	flag.StringVar(&o.bin, "bin", "", "the ltiop binary (default: built from this checkout)")
	flag.StringVar(&o.out, "out", "", "directory for the replicas' logs (default: a temporary one, removed)")
	flag.StringVar(&o.env, "env", "", "more environment for every replica, comma-separated NAME=value (e.g. LTIOP_REPLAY_STORE_WAIT_REPLICAS=0)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tb := &runTB{}
	err := run(ctx, tb, o)
	tb.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tb *runTB, o options) error {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("set KUBEBUILDER_ASSETS to the envtest binaries, e.g. $PWD/bin/k8s/1.37.1-etcd-3.7.0")
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir := o.out
	if dir == "" {
		dir = tb.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(tb.TempDir(), "ltiop")
		say("building ltiop")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building ltiop: %w", err)
		}
	}
	var env []string
	if o.env != "" {
		env = strings.Split(o.env, ",")
	}
	say("starting the control plane, Redis (master, %d replicas, Sentinel), the LMS and %d replicas", o.redisReplicas, o.replicas)
	c, err := start(ctx, tb, setup{root: root, replicas: o.replicas, command: []string{bin}, env: env, downAft: o.downAfter,
		redisRep: o.redisReplicas, rejoin: o.rejoinAfter, dir: dir})
	if err != nil {
		return err
	}
	l := startLoad(c, o.browsers)
	defer l.halt()
	if o.soak > 0 {
		return soak(ctx, c, l, o)
	}

	all := c.faults(o.apiOutage)
	var chosen []fault
	for _, key := range strings.Split(o.faults, ",") {
		i := slices.IndexFunc(all, func(f fault) bool { return f.key == key })
		if i < 0 {
			return fmt.Errorf("-faults: no failure %q", key)
		}
		n := 1
		if key == "redis" {
			n = o.failovers
		}
		for k := range n {
			f := all[i]
			if n > 1 {
				f.name += fmt.Sprintf(", %d of %d", k+1, n)
			}
			chosen = append(chosen, f)
		}
	}
	// A steady state first: the load runs a window with nothing broken.
	calm := time.Now()
	time.Sleep(o.window)
	baseline := l.between(calm, time.Now())
	var results []result
	for _, f := range chosen {
		say("%s", f.name)
		res, err := c.inject(ctx, l, f, o.window, 5*time.Minute)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	l.halt()

	host, _ := os.Hostname()
	fmt.Printf("\n%d replicas, %d browsers, Redis master with %d replicas (a killed master rejoins after %s), Sentinel down-after %s, replicas' extra environment %q; %s, %d cores, load average %s\n",
		o.replicas, o.browsers, o.redisReplicas, o.rejoinAfter, o.downAfter, o.env, host, runtime.NumCPU(), loadAverage())
	ok := 0
	for _, b := range baseline {
		if b.reason == "" {
			ok++
		}
	}
	fmt.Printf("steady state before the failures: %d launches in %s, %d ok (%.0f launches/s)\n\n", len(baseline), o.window, ok, float64(ok)/o.window.Seconds())
	fmt.Println("| Failure | Launches attempted | Succeeded | Failed (why) | Launches failing for | Replays accepted | Time to recovery | Sentinel failovers | RSS before → after | Goroutines before → after |")
	fmt.Println("|---|---:|---:|---|---:|---:|---:|---:|---|---|")
	for _, r := range results {
		why := r.reasons
		if why == "" {
			why = "—"
		}
		fmt.Printf("| %s | %d | %d | %d (%s) | %.1f s | %d | %.1f s | %d | %s → %s | %d → %d |\n", r.name, r.attempted, r.ok, r.failed, why,
			r.failing.Seconds(), r.replaysAccepted, r.recovery.Seconds(), r.failovers, mib(r.before.rss), mib(r.after.rss), r.before.goroutines, r.after.goroutines)
	}
	n, failed := l.total()
	fmt.Printf("\nin all: %d launches, %d failed; replays refused %d, accepted %d, unanswered %d\n", n, failed,
		l.replaysRefused.Load(), l.replaysAccepted.Load(), l.replaysFailed.Load())
	for _, r := range results {
		if len(r.unexpected) > 0 {
			fmt.Printf("UNEXPECTED failures during %q: %s\n", r.name, strings.Join(r.unexpected, "; "))
		}
	}
	if l.replaysAccepted.Load() > 0 {
		return fmt.Errorf("%d replays were accepted (%s)", l.replaysAccepted.Load(), l.accepted())
	}
	return nil
}

// soak runs the load with no failure, sampling the replicas.
func soak(ctx context.Context, c *cluster, l *load, o options) error {
	host, _ := os.Hostname()
	fmt.Printf("soak: %d replica(s), %d browsers, %s, %s, %d cores\n\n", o.replicas, o.browsers, o.soak, host, runtime.NumCPU())
	fmt.Println("| Minute | Launches (total) | Failed (total) | Launches/s | RSS | Go heap | Goroutines | Open files | Load average |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	start := time.Now()
	lastN, lastT := 0, start
	row := func() {
		n, failed := l.total()
		u := c.usage(ctx)
		now := time.Now()
		fmt.Printf("| %.0f | %d | %d | %.1f | %s | %s | %d | %d | %s |\n", now.Sub(start).Minutes(), n, failed,
			float64(n-lastN)/now.Sub(lastT).Seconds(), mib(u.rss), mib(u.heap), u.goroutines, u.fds, loadAverage())
		lastN, lastT = n, now
	}
	row()
	tick := time.NewTicker(o.sample)
	defer tick.Stop()
	deadline := time.After(o.soak)
	for {
		select {
		case <-tick.C:
			row()
		case <-deadline:
			if time.Since(lastT) > o.sample/2 { // not twice when the last tick and the end meet
				row()
			}
			l.halt()
			n, failed := l.total()
			fmt.Printf("\nin all: %d launches, %d failed (%s); replays refused %d, accepted %d, unanswered %d\n", n, failed,
				reasons(l.between(start, time.Now())), l.replaysRefused.Load(), l.replaysAccepted.Load(), l.replaysFailed.Load())
			if l.replaysAccepted.Load() > 0 {
				return fmt.Errorf("%d replays were accepted", l.replaysAccepted.Load())
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos: "+format+"\n", args...)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// runTB gives testredis what it needs of a test outside one: a failure ends the run.
type runTB struct {
	cleanups []func()
	dirs     int
}

func (*runTB) Helper() {}

func (t *runTB) Fatal(args ...any) {
	t.cleanup()
	fmt.Fprintln(os.Stderr, append([]any{"chaos:"}, args...)...)
	os.Exit(1)
}

func (t *runTB) Skip(args ...any) { t.Fatal(args...) }

func (t *runTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *runTB) TempDir() string {
	t.dirs++
	dir, err := os.MkdirTemp("", "ltiop-chaos-"+strconv.Itoa(t.dirs)+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// cleanup runs the cleanups, last first.
func (t *runTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
