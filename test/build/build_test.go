// Package build_test checks what the Makefile and the Dockerfile build and install: the
// version injected into the binary, the container targets, and the installer manifest
// applied to a real API server.
package build_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ltiop/ltiop/test/utils/testenv"
)

// run runs a command in the repository root and returns its standard output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = testenv.Root()
	// Under `make test` this make is a sub-make, which would print "Entering directory".
	cmd.Env = append(os.Environ(), "MAKEFLAGS=--no-print-directory")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// `make build` injects VERSION and COMMIT; `ltiop --version` prints them and exits 0
// without any other configuration.
func TestMakeBuildInjectsVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ltiop")
	const version, commit = "v9.8.7-test.1", "0123456789abcdef0123456789abcdef01234567"
	// -race instead of -trimpath: the packages are then those `go test -race` compiled.
	run(t, "make", "-s", "build", "VERSION="+version, "COMMIT="+commit, "LTIOP_BIN="+bin, "BUILD_FLAGS=-race")
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{} // no LTIOP_* settings: --version needs none
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ltiop --version: %v\n%s", err, out)
	}
	want := "ltiop " + version + " (commit " + commit + ", " + runtime.Version() + ")\n"
	if string(out) != want {
		t.Errorf("ltiop --version printed %q, want %q", out, want)
	}
	// Without the flag and without settings it refuses to start, with exit code 2.
	cmd = exec.Command(bin)
	cmd.Env = []string{}
	var exit *exec.ExitError
	if out, err := cmd.CombinedOutput(); !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "publicUrl: required") {
		t.Errorf("ltiop without settings: %v\n%s", err, out)
	}
}

// Docker is not available to the tests: the container targets are checked as make would
// run them, and the Dockerfile for the same injection as the Makefile's.
func TestContainerTargets(t *testing.T) {
	vars := []string{"IMG=registry.example.com/ltiop:v9", "VERSION=v9", "COMMIT=c0ffee"}
	for target, want := range map[string][]string{
		"docker-build": {"docker build --build-arg VERSION=v9 --build-arg COMMIT=c0ffee -t registry.example.com/ltiop:v9 ."},
		"docker-push":  {"docker push registry.example.com/ltiop:v9"},
		"docker-buildx": {
			"docker buildx build --push --platform=linux/amd64,linux/arm64 --build-arg VERSION=v9 --build-arg COMMIT=c0ffee --tag registry.example.com/ltiop:v9 .",
			"docker buildx rm ltiop-builder",
		},
	} {
		out := run(t, "make", append([]string{"-n", target}, vars...)...)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("make %s runs:\n%s\nwant it to contain %q", target, out, w)
			}
		}
	}
	if out := run(t, "make", "-n", "docker-build", "CONTAINER_TOOL=podman", "IMG=x"); !strings.HasPrefix(out, "podman build ") {
		t.Errorf("CONTAINER_TOOL=podman: %q", out)
	}

	dockerfile, err := os.ReadFile(filepath.Join(testenv.Root(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^ARG VERSION=dev$`, `(?m)^ARG COMMIT=unknown$`,
		`-X github.com/ltiop/ltiop/internal/version.Version=\$\{VERSION\}`,
		`-X github.com/ltiop/ltiop/internal/version.Commit=\$\{COMMIT\}`,
		`FROM --platform=\$BUILDPLATFORM`, `GOARCH=\$\{TARGETARCH\}`,
	} {
		if !regexp.MustCompile(re).Match(dockerfile) {
			t.Errorf("the Dockerfile does not match %s", re)
		}
	}
	makefile := run(t, "make", "-n", "build", "VERSION=v9", "COMMIT=c0ffee", "LTIOP_BIN=x")
	if !strings.Contains(makefile, "go build -trimpath -ldflags") || !strings.Contains(makefile, "-X github.com/ltiop/ltiop/internal/version.Version=v9 -X github.com/ltiop/ltiop/internal/version.Commit=c0ffee") {
		t.Errorf("make build runs %q", makefile)
	}
}

// The installer (hack/build-installer.sh, which `make build-installer` writes to
// dist/install.yaml) holds the CRDs, the RBAC and the Deployment with the image asked
// for, and a real API server accepts every object of it.
func TestInstallerAppliesToAnAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or export KUBEBUILDER_ASSETS=$(hack/build-binaries.sh)")
	}
	const img = "registry.example.com:5000/team/ltiop:v9.8.7"
	rendered := run(t, "hack/build-installer.sh", img)

	env := &envtest.Environment{} // no CRDs: the installer brings them
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping envtest: %v", err)
		}
	}()
	scheme := k8sruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	kinds := map[string]int{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding the installer: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		kinds[u.GetKind()]++
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("installer-test")); err != nil {
			t.Errorf("applying %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	for kind, n := range map[string]int{"Namespace": 1, "CustomResourceDefinition": 2, "ServiceAccount": 1, "Role": 2,
		"RoleBinding": 2, "Deployment": 1, "Service": 1} {
		if kinds[kind] < n {
			t.Errorf("the installer has %d %s, want at least %d (kinds: %v)", kinds[kind], kind, n, kinds)
		}
	}

	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ltiop-system", Name: "ltiop"}, &dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != img {
		t.Errorf("Deployment image %q, want %q", got, img)
	}
	var sa corev1.ServiceAccount
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ltiop-system", Name: dep.Spec.Template.Spec.ServiceAccountName}, &sa); err != nil {
		t.Errorf("the Deployment's service account: %v", err)
	}
	var role rbacv1.Role
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ltiop-system", Name: "ltiop-manager"}, &role); err != nil {
		t.Errorf("the manager Role: %v", err)
	}
	for _, name := range []string{"platformregistrations.lti.ltiop.dev", "toolregistrations.lti.ltiop.dev"} {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
		}
	}
}
