package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ltiop/ltiop/internal/config"
)

// LeaseName is the Lease the replicas elect the controllers' runner with.
const LeaseName = "ltiop.lti.ltiop.dev"

// Election timings: the same as controller-runtime's defaults. A leader that cannot renew
// for RenewDeadline (the API server unreachable) stops its controllers; another replica may
// take over LeaseDuration after the last renewal.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// controllerRunner runs the controllers on one replica at a time, beside the web server
// that every replica runs. controller-runtime ends the whole manager when its leader loses
// the lease, web server included; so the serving manager runs no election, and this
// runnable campaigns for the lease itself: while it leads, a manager of the controllers
// alone runs, reading the serving manager's cache (termCache); when the lease is lost
// (say the API server is unreachable for longer than the renew deadline) only that
// manager stops, and the replica campaigns again. A new manager per term, because a
// controller cannot start twice; the term's informer handlers are removed with it.
type controllerRunner struct {
	restCfg *rest.Config
	cfg     *config.Config
	opts    []Option
	// shared is the serving manager's cache, which the controllers read too (one copy of
	// each object in memory); indexes are the field indexes the terms added to it.
	shared  cache.Cache
	indexes sharedIndexes
	// elect is false for a single replica (leader election off): the controllers just run.
	elect bool
	// leaderOnly run beside the controllers, on the elected replica only: work of the web
	// server's packages that one replica does for all (the reachability probe). They are
	// added to each term's manager, so they stop when the lease is lost.
	leaderOnly []manager.Runnable

	leading atomic.Bool
	// term is held while controllers run: the elector starts a term's controllers in a
	// goroutine and does not wait for them to stop, so a new term waits here for the last.
	term sync.Mutex
}

// controllersLeading says whether this replica runs the controllers now.
var controllersLeading = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "ltiop_controllers_leading",
	Help: "1 while this replica runs the controllers (holds the lease, or runs without election), else 0.",
})

func init() { metrics.Registry.MustRegister(controllersLeading) }

// Leading says whether this replica runs the controllers now.
func (r *controllerRunner) Leading() bool { return r.leading.Load() }

// NeedLeaderElection is false: the runner does its own election, on every replica.
func (r *controllerRunner) NeedLeaderElection() bool { return false }

// Start campaigns for the lease (or, without election, runs the controllers) until ctx ends.
func (r *controllerRunner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("controllers")
	ctx = log.IntoContext(ctx, logger)
	if !r.elect {
		r.lead(ctx)
		return nil
	}
	id, err := identity()
	if err != nil {
		return err
	}
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, r.cfg.Namespace, LeaseName,
		resourcelock.ResourceLockConfig{Identity: id}, r.restCfg, renewDeadline)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			ReleaseOnCancel: true, Name: LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(term context.Context) {
					logger.Info("elected: running the controllers", "identity", id)
					r.lead(term)
				},
				OnStoppedLeading: func() {
					if ctx.Err() == nil {
						logger.Info("lost the lease: stopping the controllers; the web server keeps serving; campaigning again", "identity", id)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		elector.Run(ctx) // returns when the term ends or ctx does
	}
	// Wait for the last term's controllers to stop before the process may exit.
	r.term.Lock()
	defer r.term.Unlock()
	return nil
}

// lead runs the controllers until term ends. A manager that fails (its cache cannot sync
// while the API server is away) is replaced after a pause.
func (r *controllerRunner) lead(term context.Context) {
	logger := log.FromContext(term)
	r.term.Lock()
	defer r.term.Unlock()
	if term.Err() != nil {
		return // the term ended while the last one was stopping
	}
	r.leading.Store(true)
	controllersLeading.Set(1)
	defer func() { r.leading.Store(false); controllersLeading.Set(0) }()
	for pause := time.Second; term.Err() == nil; pause = min(2*pause, 30*time.Second) {
		err := r.runControllers(term)
		if term.Err() != nil {
			return
		}
		logger.Error(err, "the controllers stopped; starting them again", "after", pause)
		select {
		case <-term.Done():
		case <-time.After(pause):
		}
	}
}

// runControllers runs one manager of the controllers until term ends.
func (r *controllerRunner) runControllers(term context.Context) error {
	opts := ManagerOptions(r.cfg)
	opts.Metrics = metricsserver.Options{BindAddress: "0"} // the serving manager exposes the metrics
	opts.NewCache = r.indexes.newCacheFunc(r.shared)
	for _, o := range r.opts {
		o(&opts)
	}
	// One manager per term in one process: the controllers' names are theirs every time.
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(r.restCfg, opts)
	if err != nil {
		return fmt.Errorf("creating the controllers' manager: %w", err)
	}
	if err := SetupControllers(term, mgr, r.cfg); err != nil {
		return err
	}
	for _, run := range r.leaderOnly {
		if err := mgr.Add(run); err != nil {
			return err
		}
	}
	if err := mgr.Start(term); err != nil {
		return err
	}
	if term.Err() == nil {
		return errors.New("the controllers' manager stopped")
	}
	return nil
}

// identity names this replica in the Lease: its host name (the pod's) and a random suffix,
// so two processes on one host are told apart.
func identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	return host + "_" + hex.EncodeToString(suffix), nil
}
