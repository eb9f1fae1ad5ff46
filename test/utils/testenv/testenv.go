// Package testenv starts envtest (a real kube-apiserver and etcd built from the Go module
// proxy by hack/build-binaries.sh) with ltiop's CRDs installed, for the test suites.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start starts a control plane. KUBEBUILDER_ASSETS names the binaries; `make test` sets it.
func Start() (*envtest.Environment, *rest.Config, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"or export KUBEBUILDER_ASSETS=$(hack/build-binaries.sh)")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(Root(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	return env, cfg, nil
}
