package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/hack/localcluster"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testnet"
	"github.com/ltiop/ltiop/test/utils/testredis"
)

const (
	namespace  = "ltiop-chaos"
	apiKey     = "chaos-api-key-0123456789abcdef0123456789abcdef"
	clientID   = "chaos-client"
	deployment = "chaos-deployment"
	regName    = "chaos-lms"
	publicURL  = "http://lti.chaos.test" // never dialled: the browsers pick a replica themselves
	launchURL  = "http://app.chaos.test/launch"
	masterName = "ltiop"
)

// setup is what a chaos run starts.
type setup struct {
	root     string        // the repository (for the CRDs)
	replicas int           // ltiop processes
	command  []string      // runs ltiop: a binary, or the test binary re-executed
	env      []string      // added to each replica's environment (e.g. LTIOP_REPLAY_STORE_WAIT_REPLICAS)
	downAft  time.Duration // Sentinel's down-after-milliseconds
	redisRep int           // Redis replicas besides the master
	rejoin   time.Duration // how long a killed Redis master stays away before it rejoins as a replica
	dir      string        // logs and the kubeconfig
}

// cluster is a running chaos set-up: the control plane behind a link that can be cut, a
// Redis master with its replicas and a Sentinel, an LMS, and ltiop replicas as processes of
// their own (so that SIGKILL is a real kill).
type cluster struct {
	s       setup
	tb      testredis.TB
	env     *envtest.Environment
	restCfg *rest.Config
	k8s     client.Client
	link    *testnet.Cutter
	kubecfg string
	redis   *testredis.Group
	lms     *lmssim.LMS
	lmsSrv  *httptest.Server
	list    []*replica
	next    atomic.Uint64 // strike marks the moment the fault under way strikes (a Redis master's death): the
	// launches just before it are those replayed after it.
	strike func()
}

// start brings everything up and waits until each replica serves a launch.
func start(ctx context.Context, tb testredis.TB, s setup) (*cluster, error) {
	c := &cluster{s: s, tb: tb}
	c.env = localcluster.New(s.root)
	var err error
	if c.restCfg, err = c.env.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane (KUBEBUILDER_ASSETS: the envtest binaries): %w", err)
	}
	tb.Cleanup(func() { _ = c.env.Stop() })
	if c.k8s, err = client.New(c.restCfg, client.Options{Scheme: app.Scheme()}); err != nil {
		return nil, err
	}
	// The replicas reach the API server through a link the run cuts.
	apiServer, err := url.Parse(c.restCfg.Host)
	if err != nil {
		return nil, err
	}
	if c.link, err = testnet.NewCutter(apiServer.Host); err != nil {
		return nil, err
	}
	tb.Cleanup(func() { _ = c.link.Close() })
	kc, err := clientcmd.Load(c.env.KubeConfig)
	if err != nil {
		return nil, err
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + c.link.Addr()
	}
	c.kubecfg = filepath.Join(s.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, c.kubecfg); err != nil {
		return nil, err
	}
	if err := localcluster.CreateNamespace(ctx, c.k8s, namespace, apiKey); err != nil {
		return nil, err
	}

	// The LMS, its key set on loopback.
	c.lmsSrv = httptest.NewServer(nil)
	tb.Cleanup(c.lmsSrv.Close)
	if c.lms, err = lmssim.New(c.lmsSrv.URL, clientID, deployment); err != nil {
		return nil, err
	}
	c.lmsSrv.Config.Handler = c.lms.Handler()
	base := c.lmsSrv.URL
	second := metav1.Duration{Duration: time.Second}
	if err := c.k8s.Create(ctx, &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: regName},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL(base), ClientID: clientID, Name: "Chaos LMS",
			AuthenticationEndpoint: ltiv1.EndpointURL(base + lmssim.AuthPath),
			AccesstokenEndpoint:    ltiv1.EndpointURL(base + lmssim.TokenPath),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: base + lmssim.JWKSPath},
			DevMode:                true,
			// A rotation on request signs with the next key a second after publishing it.
			KeyRotation: &ltiv1.KeyRotation{PublishAhead: &second, GracePeriod: &metav1.Duration{Duration: time.Minute},
				LMSKeySource: ltiv1.LMSKeySourceKeySetURL},
		},
	}); err != nil {
		return nil, err
	}

	c.redis = testredis.StartGroup(tb, masterName, s.redisRep, s.downAft)
	for i := 1; i <= s.replicas; i++ {
		r := &replica{n: i, web: freeAddr(), metrics: freeAddr(), log: filepath.Join(s.dir, "ltiop-"+strconv.Itoa(i)+".log")}
		c.list = append(c.list, r)
		if err := r.start(c); err != nil {
			return nil, err
		}
		tb.Cleanup(r.kill)
	}
	for _, r := range c.list {
		if err := c.awaitServing(ctx, r, 2*time.Minute); err != nil {
			return nil, err
		}
	}
	// The rotations need the controllers running.
	return c, await(ctx, 2*time.Minute, "a replica leads", func() bool { return c.leader(ctx) != nil })
}

// pick is the base URL of the next replica in the Service's endpoints (round robin over
// the ready ones), as a Kubernetes Service spreads requests.
func (c *cluster) pick() string {
	for range 2 * len(c.list) {
		r := c.list[c.next.Add(1)%uint64(len(c.list))]
		if r.inService.Load() {
			return "http://" + r.web
		}
	}
	return "http://" + c.list[0].web // none ready: the request fails, as it would
}

// leader is the replica holding the Lease now, or nil (none, or two for an instant).
func (c *cluster) leader(ctx context.Context) *replica {
	var l *replica
	for _, r := range c.list {
		if !r.running() {
			continue
		}
		if v, ok := r.metricValues(ctx)["leader_election_master_status"]; ok && v == 1 {
			if l != nil {
				return nil
			}
			l = r
		}
	}
	return l
}

// awaitServing waits until r answers /readyz and serves a complete launch, then puts it
// in the Service's endpoints.
func (c *cluster) awaitServing(ctx context.Context, r *replica, limit time.Duration) error {
	base := "http://" + r.web
	d := newBrowser(c)
	var last error
	err := await(ctx, limit, fmt.Sprintf("replica %d serves a launch", r.n), func() bool {
		if err := r.alive(); err != nil {
			last = err
			return true
		}
		_, last = d.launch(ctx, func() string { return base })
		return last == nil
	})
	if err == nil && last != nil {
		return last
	}
	if err != nil && last != nil {
		return fmt.Errorf("%w: %w (log: %s)", err, last, localcluster.LogTail(r.log))
	}
	if err != nil {
		return err
	}
	r.inService.Store(true)
	return nil
}

// replica is one ltiop process.
type replica struct {
	n                 int
	web, metrics, log string
	inService         atomic.Bool // in the Service's endpoints: requests are sent to it

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
}

func (r *replica) start(c *cluster) error {
	logFile, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.s.command[0], c.s.command[1:]...) //nolint:gosec // G204: the run's own ltiop
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+c.kubecfg,
		"LTIOP_NAMESPACE="+namespace,
		"LTIOP_PUBLIC_URL="+publicURL,
		"LTIOP_LAUNCH_URL="+launchURL,
		"LTIOP_LISTEN="+r.web,
		"LTIOP_METRICS_LISTEN="+r.metrics,
		"LTIOP_DEV_MODE=true", // plain http on loopback
		"LTIOP_LOG_LEVEL=info",
		"LTIOP_LOG_FORMAT=json",
		"LTIOP_LEADER_ELECT=true",
		"LTIOP_SHUTDOWN_DELAY=0s",
		"LTIOP_RATE_LIMIT_LAUNCH=0", // every browser comes from one loopback address
		"LTIOP_OUTBOUND_ALLOW_LOOPBACK=true",
		"LTIOP_REPLAY_STORE=redis:///0",
		"LTIOP_REPLAY_STORE_SENTINEL_MASTER="+masterName,
		"LTIOP_REPLAY_STORE_SENTINEL_ADDRS="+c.redis.Sentinel.Addr,
	)
	cmd.Env = append(cmd.Env, c.s.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting ltiop: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	return nil
}

// kill sends SIGKILL and waits for the exit (a no-op when not running).
func (r *replica) kill() { r.signal(syscall.SIGKILL) }

// terminate sends SIGTERM, as Kubernetes does, and waits for the exit.
func (r *replica) terminate() { r.signal(syscall.SIGTERM) }

func (r *replica) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.exited:
	case <-time.After(60 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	r.cmd = nil
}

func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// alive reports an exit nobody asked for.
func (r *replica) alive() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return fmt.Errorf("replica %d is not running", r.n)
	}
	select {
	case err := <-r.exited:
		r.cmd = nil
		return fmt.Errorf("replica %d exited (%v); log: %s", r.n, err, localcluster.LogTail(r.log)) //nolint:errorlint // nil prints as <nil>
	default:
		return nil
	}
}

func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// usage is what one replica uses now.
type usage struct {
	rss, heap  int64 // bytes
	goroutines int
	fds        int // open files, sockets included
}

func (u usage) add(o usage) usage {
	return usage{rss: u.rss + o.rss, heap: u.heap + o.heap, goroutines: u.goroutines + o.goroutines, fds: u.fds + o.fds}
}

func (r *replica) usage(ctx context.Context) usage {
	pid := r.pid()
	if pid == 0 {
		return usage{}
	}
	var u usage
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				u.rss = kb << 10
			}
		}
	}
	if fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil {
		u.fds = len(fds)
	}
	m := r.metricValues(ctx)
	u.heap, u.goroutines = int64(m["go_memstats_heap_alloc_bytes"]), int(m["go_goroutines"])
	return u
}

// metricValues reads the replica's metrics, a sample's labels dropped (the last wins).
func (r *replica) metricValues(ctx context.Context) map[string]float64 {
	values := map[string]float64{}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.metrics+"/metrics", nil)
	if err != nil {
		return values
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return values
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		name := line[:i]
		if j := strings.IndexByte(name, '{'); j >= 0 {
			name = name[:j]
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			values[name] = v
		}
	}
	return values
}

// await polls cond every 50 ms until it holds, or fails after limit.
func await(ctx context.Context, limit time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // a poll interval, not a wait for something to happen
		}
	}
	return nil
}
