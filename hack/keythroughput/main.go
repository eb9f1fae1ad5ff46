// Command keythroughput measures how fast new PlatformRegistrations get their keys: it
// starts a local control plane (KUBEBUILDER_ASSETS, as the tests do) and ltiop's
// controllers with the production manager settings, creates -n registrations with
// -inflight creates at a time, and reports when all carry their key in status.
//
//	KUBEBUILDER_ASSETS=$(hack/build-binaries.sh) go run ./hack/keythroughput -n 500 -inflight 8
//
// The floor is the RSA generation itself, about 77 ms of one core a key: cores / 0.077 s keys
// a second. Besides the wall time it reports the CPU this process (the controllers, their
// informers, the creates; progress is read from the manager's cache) spent per key, which
// depends far less than wall time on what else the machine runs. -cpuprofile writes a CPU
// profile of the run, for `go tool pprof -top`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/hack/localcluster"
	"github.com/ltiop/ltiop/internal/config"
)

const namespace = "ltiop-keythroughput"

func main() {
	n := flag.Int("n", 400, "registrations to create")
	inflight := flag.Int("inflight", 8, "creates in flight at once")
	workers := flag.Int("workers", 0, "the controller's keyWorkers (0: the default)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the run (creates until all keyed) to this file")
	flag.Parse()
	if err := run(*n, *inflight, *workers, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "keythroughput:", err)
		os.Exit(1)
	}
}

func run(n, inflight, workers int, profile string) error {
	log.SetLogger(zap.New(zap.UseDevMode(false), zap.WriteTo(io.Discard)))
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	env := localcluster.New(root)
	restCfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane (is KUBEBUILDER_ASSETS set?): %w", err)
	}
	defer func() { _ = env.Stop() }()
	restCfg = app.WithClientLimits(restCfg) // as production: app.New does the same

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(restCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}

	cfg := config.Default()
	cfg.Namespace, cfg.PublicURL, cfg.MetricsListen, cfg.KeyWorkers = namespace, "https://lti.example.com", "0", int64(workers)
	mgr, err := ctrl.NewManager(restCfg, app.ManagerOptions(&cfg))
	if err != nil {
		return err
	}
	if err := app.SetupControllers(ctx, mgr, &cfg); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("the cache did not sync")
	}

	effective := workers
	if effective == 0 {
		effective = controllers.DefaultKeyWorkers()
	}
	fmt.Printf("%d registrations, %d creates in flight, %d key workers, %d cores\n", n, inflight, effective, runtime.NumCPU())
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start, cpu0 := time.Now(), cpuTime()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, inflight)
	for range inflight {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := c.Create(ctx, registration(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	created := time.Since(start)

	for {
		// From the manager's cache, without copies: decoding a list from the API server
		// every 100 ms cost this process more CPU than the controller's own non-RSA work.
		var list ltiv1.PlatformRegistrationList
		if err := mgr.GetCache().List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		keyed := 0
		for _, r := range list.Items {
			if r.Status.KID != "" {
				keyed++
			}
		}
		if keyed == n {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling a separate process's progress
	}
	all := time.Since(start)
	cpu := cpuTime() - cpu0
	fmt.Printf("created in %.1fs; all %d keyed after %.1fs: %.1f keys/s\n", created.Seconds(), n, all.Seconds(), float64(n)/all.Seconds())
	// On a shared machine wall time says more about the neighbours than about ltiop; the
	// CPU this process spent per key does not.
	fmt.Printf("controller CPU %.0f ms a key: %.1f keys/s if %d cores were free (RSA alone: ~77 ms a key)\n",
		cpu.Seconds()*1000/float64(n), float64(runtime.NumCPU())*float64(n)/cpu.Seconds(), runtime.NumCPU())
	return nil
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func registration(i int64) *ltiv1.PlatformRegistration {
	return &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("lms-%05d", i)},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL:                    "https://canvas.instructure.com",
			ClientID:               fmt.Sprintf("client-%05d", i),
			Name:                   "Canvas",
			AuthenticationEndpoint: "https://sso.canvaslms.com/api/lti/authorize_redirect",
			AccesstokenEndpoint:    "https://sso.canvaslms.com/login/oauth2/token",
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://sso.canvaslms.com/api/lti/security/jwks"},
		},
	}
}
