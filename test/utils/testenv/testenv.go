// Package testenv starts envtest (a real kube-apiserver and etcd built from the Go module
// proxy by hack/build-binaries.sh) with ltiop's CRDs installed, for the test suites, and
// runs what a suite tests (a manager, or all of ltiop) against it until the suite ends.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// RunSpecs runs the Ginkgo suite of t with the project's defaults: Eventually waits up to
// 20 s, polling every 100 ms, and controller-runtime logs go to the Ginkgo writer (shown
// for failed specs only).
func RunSpecs(t *testing.T, description string) bool {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(20 * time.Second)
	gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	logf.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	return ginkgo.RunSpecs(t, description)
}

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Env is a running control plane with one namespace for a suite.
type Env struct {
	// Config reaches the API server.
	Config *rest.Config
	// Client reads and writes straight through the API server (no cache), as a user would.
	Client client.Client

	env     *envtest.Environment
	ctx     context.Context
	cancel  context.CancelFunc
	stopped chan error // set by Run
}

// Start starts a control plane, makes a client for scheme and creates namespace.
// KUBEBUILDER_ASSETS names the binaries; `make test` sets it.
func Start(scheme *k8sruntime.Scheme, namespace string) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"or export KUBEBUILDER_ASSETS=$(hack/build-binaries.sh)")
	}
	e := &Env{env: &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(Root(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	var err error
	if e.Config, err = e.env.Start(); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err == nil {
		err = e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	}
	if err != nil {
		return nil, errors.Join(err, e.env.Stop())
	}
	return e, nil
}

// Context is the suite's context: it ends when Stop begins.
func (e *Env) Context() context.Context { return e.ctx }

// Run runs run (a manager's or ltiop's Start) in the background with the suite's context,
// until Stop. A suite runs one thing.
func (e *Env) Run(run func(ctx context.Context) error) {
	e.stopped = make(chan error, 1)
	go func() { e.stopped <- run(e.ctx) }()
}

// Stop ends what Run started, waits for it (a manager stops before its control plane does),
// then stops the control plane. It returns run's error, if any, with the control plane's.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	e.cancel()
	var runErr error
	if e.stopped != nil {
		runErr = <-e.stopped
	}
	return errors.Join(runErr, e.env.Stop())
}
