// Command scale measures one ltiop replica holding N platform registrations (issue #14):
// it starts a local control plane (kube-apiserver and etcd, as `make demo` does), runs the
// ltiop binary against it as a process of its own (so that its RSS is ltiop's alone),
// creates N registrations through the platforms API at a given parallelism, waits until
// every one has its key and is Ready, and reports what a sizing needs: time to all Ready,
// RSS, API-server requests and stored bytes per 1,000 registrations, /readyz time after a
// restart, login lookup latency against a one-registration baseline, the size of one
// registration's key set and of /lti/keys, and the latency of a list page.
//
// Run it through hack/scale.sh, which builds the binaries:
//
//	hack/scale.sh -n 10000 -parallel 16
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/hack/localcluster"
)

const (
	namespace = "ltiop-scale"
	apiKey    = "scale-api-key-0123456789abcdefghijklmnopqrstuv"
)

type options struct {
	n, parallel, samples int
	binary, listen, out  string
	readyTimeout         time.Duration
	profile              string        // CPU profile of the creation phase, through ltiop's pprof
	profileFor           time.Duration // how long that profile runs
	heapProfile          string        // heap profile after the restart phase, through ltiop's pprof
	direct               bool          // write registrations and keys to the API server, not through ltiop
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 500, "registrations to create")
	flag.IntVar(&o.parallel, "parallel", 8, "concurrent POST /api/platforms")
	flag.IntVar(&o.samples, "samples", 300, "requests per latency measurement")
	flag.StringVar(&o.binary, "ltiop", "tmp/scale/ltiop", "the ltiop binary to run")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:3190", "where ltiop listens")
	flag.StringVar(&o.out, "out", "tmp/scale", "directory for ltiop's log and the report")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 2*time.Hour, "how long to wait for every registration to be Ready")
	flag.StringVar(&o.profile, "profile", "", "also write a CPU profile of ltiop while it creates the registrations to this file (ltiop runs with pprof on)")
	flag.DurationVar(&o.profileFor, "profile-for", 30*time.Second, "how long the -profile recording runs, from the first create")
	flag.StringVar(&o.heapProfile, "heap", "", "also write a heap profile of ltiop (after a collection) to this file at the end, after the restart phase (ltiop runs with pprof on)")
	flag.BoolVar(&o.direct, "direct", false, "write the registrations and their key Secrets (128 distinct keys in turn) straight to the API server while ltiop is stopped, then start it: measures a replica holding n without generating n keys (the create figures are then of that)")
	flag.Parse()
	if o.direct && o.profile != "" {
		fmt.Fprintln(os.Stderr, "scale: -profile records the creation through ltiop, which -direct bypasses")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	binary, err := filepath.Abs(o.binary)
	if err != nil {
		return err
	}
	rep := newReport(o)

	say("starting a local control plane (kube-apiserver + etcd)")
	env := localcluster.New(root)
	restCfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane (run hack/scale.sh, which builds the binaries): %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			say("stopping the control plane: %v", err)
		}
	}()
	k8s, err := client.New(restCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	if err := localcluster.CreateNamespace(ctx, k8s, namespace, apiKey); err != nil {
		return err
	}
	kubeconfig := filepath.Join(o.out, "kubeconfig")
	kc, err := clientcmd.Load(env.KubeConfig)
	if err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return err
	}
	server := apiServerMetrics{cfg: restCfg}

	proc := &ltiopProcess{binary: binary, listen: o.listen, kubeconfig: kubeconfig, log: filepath.Join(o.out, "ltiop.log")}
	if proc.metrics, err = freeAddr(); err != nil { // for the Go heap figures, and pprof
		return err
	}
	proc.pprof = o.profile != "" || o.heapProfile != ""
	api := newAPI("http://"+o.listen, apiKey)
	started := time.Now()
	if err := proc.start(); err != nil {
		return err
	}
	defer proc.stop()
	if err := api.waitReady(ctx, proc, 2*time.Minute); err != nil {
		return err
	}
	rep.add("startup", "/readyz after start, empty namespace", time.Since(started).Round(time.Millisecond).String())

	// Baseline: the login lookup with one registration.
	first, err := api.createOne(ctx, 0)
	if err != nil {
		return err
	}
	if err := api.waitAllKeys(ctx, 1, time.Minute); err != nil {
		return err
	}
	if err := waitAllReady(ctx, k8s, 1, time.Minute); err != nil {
		return err
	}
	if err := api.waitLogin(ctx, first, time.Minute); err != nil {
		return err
	}
	baseline, err := api.loginLatency(ctx, []created{first}, o.samples)
	if err != nil {
		return err
	}

	// Creation.
	before, err := server.requests(ctx)
	if err != nil {
		return err
	}
	cpuBefore := proc.cpu()
	say("creating %d registrations, %d at a time", o.n-1, o.parallel)
	createStart := time.Now()
	profiled := make(chan error, 1)
	if o.profile != "" {
		go func() { profiled <- proc.cpuProfile(ctx, o.profileFor, o.profile) }()
	} else {
		profiled <- nil
	}
	var regs []created
	var posts latencies
	if o.direct {
		proc.stop()
		if regs, err = createDirect(ctx, restCfg, 1, o.n, o.parallel); err != nil {
			return err
		}
		if err := proc.start(); err != nil {
			return err
		}
		cpuBefore = 0 // a new process: its CPU time from its start
		if err := api.waitReady(ctx, proc, 10*time.Minute); err != nil {
			return err
		}
	} else if regs, posts, err = api.createMany(ctx, 1, o.n, o.parallel); err != nil {
		return err
	}
	regs = append([]created{first}, regs...)
	postsDone := time.Since(createStart)
	if err := api.waitAllKeys(ctx, o.n, o.readyTimeout); err != nil {
		return err
	}
	keysDone := time.Since(createStart)
	if err := waitAllReady(ctx, k8s, o.n, o.readyTimeout); err != nil {
		return err
	}
	readyDone := time.Since(createStart)
	if err := <-profiled; err != nil {
		return fmt.Errorf("profiling ltiop: %w", err)
	}
	after, err := server.requests(ctx)
	if err != nil {
		return err
	}
	if o.direct {
		rep.add("create", "written to the API server with their keys (-direct), and ltiop started again", postsDone.Round(time.Millisecond).String())
	} else {
		rep.add("create", "POST /api/platforms, all answered", postsDone.Round(time.Millisecond).String())
		rep.add("create", "POST /api/platforms latency p50 / p99", posts.String())
	}
	rep.add("create", "every registration has its key (list API)", keysDone.Round(time.Millisecond).String())
	rep.add("create", "every registration Ready (API server)", readyDone.Round(time.Millisecond).String())
	rep.add("create", "ltiop CPU time while creating", (proc.cpu() - cpuBefore).Round(time.Millisecond).String())
	rep.requests("create", after.minus(before), o.n)

	stored, err := storedBytes(ctx, k8s)
	if err != nil {
		return err
	}
	rep.add("api-server", "stored objects (registrations + key Secrets), JSON", stored.String())
	rep.add("api-server", "stored bytes per 1,000 registrations", kib(stored.bytes*1000/o.n))

	if err := measureServing(ctx, api, k8s, proc, rep, regs, baseline, o); err != nil {
		return err
	}

	// Restart: a replica starting with N registrations.
	say("restarting ltiop")
	proc.stop()
	before, err = server.requests(ctx)
	if err != nil {
		return err
	}
	started = time.Now()
	if err := proc.start(); err != nil {
		return err
	}
	if err := api.waitReady(ctx, proc, 10*time.Minute); err != nil {
		return err
	}
	rep.add("restart", "/readyz after start", time.Since(started).Round(time.Millisecond).String())
	after, err = server.requests(ctx)
	if err != nil {
		return err
	}
	rep.add("restart", "RSS when ready (VmRSS)", mib(proc.rss()))
	rep.add("restart", "Go heap when ready: allocated / next GC at / soft limit", proc.heap(ctx))
	rep.requests("restart", after.minus(before), o.n)
	if err := measureServing(ctx, api, k8s, proc, rep.prefixed("after restart"), regs, baseline, o); err != nil {
		return err
	}
	if o.heapProfile != "" {
		// Last: the collection the profile forces changes the RSS and heap figures above.
		if err := proc.saveProfile(ctx, "/debug/pprof/heap?gc=1", o.heapProfile); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
		rep.add("after restart: live", "Go heap after a forced collection: allocated / next GC at / soft limit", proc.heap(ctx))
		rep.add("after restart: live", "Go heap after a forced collection, per 1,000 registrations", proc.livePerThousand(ctx, o.n))
	}

	return rep.write(filepath.Join(o.out, fmt.Sprintf("report-%d.txt", o.n)))
}

// measureServing measures what a request costs with every registration loaded.
func measureServing(ctx context.Context, api *api, k8s client.Client, proc *ltiopProcess, rep *report, regs []created, baseline latencies, o options) error {
	login, err := api.loginLatency(ctx, regs, o.samples)
	if err != nil {
		return err
	}
	rep.add("serve", "login lookup p50 / p99, 1 registration", baseline.String())
	rep.add("serve", fmt.Sprintf("login lookup p50 / p99, %d registrations", o.n), login.String())

	// Walk the whole list in pages of 100 until enough pages were timed.
	var pages latencies
	for len(pages) < o.samples {
		walk, walked, err := api.pageLatency(ctx, 100)
		if err != nil {
			return err
		}
		if walked != o.n {
			return fmt.Errorf("paging with limit=100 saw %d registrations, want %d", walked, o.n)
		}
		pages = append(pages, walk...)
	}
	rep.add("serve", "GET /api/platforms?limit=100 page, p50 / p99", pages.String())
	whole, size, err := api.wholeList(ctx)
	if err != nil {
		return err
	}
	rep.add("serve", "GET /api/platforms (whole list), time and size", fmt.Sprintf("%v, %s", whole.Round(time.Microsecond), kib(size)))

	keys, err := api.size(ctx, "/lti/keys")
	if err != nil {
		return err
	}
	rep.add("serve", "/lti/keys size", kib(keys))
	one, how, err := oneKeySet(ctx, api, k8s, regs[len(regs)/2].ID)
	if err != nil {
		return err
	}
	rep.add("serve", "one registration's key set ("+how+")", fmt.Sprintf("%d bytes", one))
	rep.add("serve", "RSS now (VmRSS) / peak (VmHWM)", mib(proc.rss())+" / "+mib(proc.hwm()))
	rep.add("serve", "Go heap now: allocated / next GC at / soft limit", proc.heap(ctx))
	return nil
}

func say(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "scale: "+format+"\n", a...)
}
