package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/servicesim"
)

// maxReplicas keeps the replicas' ports in one block beside the public one (3011…3019).
const maxReplicas = 9

// replicaCount reads LTIOP_DEMO_REPLICAS (default 1).
func replicaCount() (int, error) {
	v := os.Getenv("LTIOP_DEMO_REPLICAS")
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxReplicas {
		return 0, fmt.Errorf("LTIOP_DEMO_REPLICAS=%q: give a number of replicas from 1 to %d", v, maxReplicas)
	}
	return n, nil
}

// redisToStart says, before the demo starts anything, which redis-server to start for n
// replicas: none for one replica (memory) or when LTIOP_REPLAY_STORE names a Redis.
func redisToStart(n int) (string, error) {
	if n == 1 {
		return "", nil
	}
	switch os.Getenv("LTIOP_REPLAY_STORE") {
	case "":
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return "", fmt.Errorf(redisMissing, n) //nolint:staticcheck // ST1005: printed to the user as it is, in the same words as hack/demo.sh
		}
		return bin, nil
	case "memory":
		return "", fmt.Errorf("LTIOP_REPLAY_STORE=memory with LTIOP_DEMO_REPLICAS=%d: replicas each with their own "+
			"memory would each accept a replayed launch; unset it (the demo then starts redis-server) or name a Redis they share", n)
	}
	return "", nil
}

// replicaListens are the addresses the replicas listen on: the public one for a single
// replica, as always; for several, loopback ports beside it (3011, 3012… behind 3000), the
// public one being the round-robin proxy's.
func replicaListens(public string, n int) ([]string, error) {
	if n == 1 {
		return []string{public}, nil
	}
	_, p, err := net.SplitHostPort(public)
	if err != nil {
		return nil, fmt.Errorf("LTIOP_LISTEN=%q: %w", public, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port == 0 || port+10+n > 65535 {
		return nil, fmt.Errorf("LTIOP_LISTEN=%q: the replicas listen on the ports from its port+11: give a fixed port below 65000", public)
	}
	var listens []string
	for i := 1; i <= n; i++ {
		listens = append(listens, net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10+i)))
	}
	return listens, nil
}

// startProxy plays the Kubernetes Service on listen: each request goes to the next replica.
func startProxy(listen string, backends []string) (*http.Server, error) {
	rr, err := servicesim.NewRoundRobin(backends...)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("the round-robin proxy: %w", err)
	}
	srv := &http.Server{Handler: rr, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// replica is one ltiop of the demo.
type replica struct {
	n   int // from 1
	app *app.App
	url string // where this replica alone answers
}

type replicaExit struct {
	n   int
	err error
}

// replicaSet runs the demo's ltiops until their context ends.
type replicaSet struct {
	list []*replica
	done chan replicaExit
}

// startReplicas starts one ltiop per address in listens, each with cfg otherwise.
func startReplicas(ctx context.Context, cfg *config.Config, restCfg *rest.Config, listens []string) (*replicaSet, error) {
	rs := &replicaSet{done: make(chan replicaExit, len(listens))}
	var opts []app.Option
	if len(listens) > 1 {
		// Several ltiops in one process register the same controller names.
		opts = append(opts, func(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) })
	}
	for i, listen := range listens {
		c := *cfg
		c.Listen = listen
		if err := c.Validate(); err != nil {
			return nil, err
		}
		a, err := app.New(ctx, &c, restCfg, opts...)
		if err != nil {
			return nil, err
		}
		r := &replica{n: i + 1, app: a, url: "http://" + reachable(listen)}
		rs.list = append(rs.list, r)
		go func() { rs.done <- replicaExit{r.n, a.Start(ctx)} }()
	}
	return rs, nil
}

// name is how messages call replica n: "ltiop" when it is the only one.
func (rs *replicaSet) name(n int) string {
	if len(rs.list) == 1 {
		return "ltiop"
	}
	return "replica " + strconv.Itoa(n)
}

// waitReady waits until every replica answers /readyz with 200.
func (rs *replicaSet) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	ready := func(r *replica) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/readyz", nil)
		if err != nil {
			return false
		}
		res, err := client.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}
	deadline := time.After(2 * time.Minute)
	for _, r := range rs.list {
		for !ready(r) {
			select {
			case e := <-rs.done:
				return fmt.Errorf("%s stopped before it was ready: %w", rs.name(e.n), e.err)
			case <-deadline:
				return fmt.Errorf("%s was not ready after 2 minutes", rs.name(r.n))
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// leader is the replica that runs the controllers now, or 0 when none does (or, for an
// instant while the Lease changes hands, two do).
func (rs *replicaSet) leader() int {
	leader := 0
	for _, r := range rs.list {
		if r.app.Leading() {
			if leader != 0 {
				return 0
			}
			leader = r.n
		}
	}
	return leader
}

// watchLeader prints which replica runs the controllers once one does, and again whenever
// another one takes over.
func (rs *replicaSet) watchLeader(ctx context.Context) {
	last := 0
	for {
		if l := rs.leader(); l != 0 && l != last {
			last = l
			fmt.Printf("replica %d leads the controllers (it holds the Lease %s)\n", l, app.LeaseName)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// wait waits until every replica has stopped, and returns their errors.
func (rs *replicaSet) wait() error {
	var errs []error
	for range rs.list {
		if e := <-rs.done; e.err != nil {
			if len(rs.list) > 1 {
				e.err = fmt.Errorf("replica %d: %w", e.n, e.err)
			}
			errs = append(errs, e.err)
		}
	}
	return errors.Join(errs...)
}

// topology is what the banner says about several replicas: where each one answers, which
// one runs the controllers, and the replay store they share. It starts with a newline.
func (rs *replicaSet) topology(proxy, store, storeNote string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nIt runs as %d replicas with leader election, each on its own port, behind a round-robin\n"+
		"proxy on %s that plays the Kubernetes Service; the ltiop URLs further down go through it.\n", len(rs.list), proxy)
	leader := rs.leader()
	for _, r := range rs.list {
		fmt.Fprintf(&b, "\n  %-18s %s", "Replica "+strconv.Itoa(r.n), r.url)
		if r.n == leader {
			b.WriteString("  (leads the controllers)")
		}
	}
	fmt.Fprintf(&b, "\n  %-18s %s (%s)", "Replay store", store, storeNote)
	return b.String()
}

// listenURLs are the base URLs of listen addresses.
func listenURLs(listens []string) []string {
	var urls []string
	for _, l := range listens {
		urls = append(urls, "http://"+reachable(l))
	}
	return urls
}
