// Package architecture checks the shape of the code base: dependencies point one way, and
// the pure protocol packages stay pure. It reads the import graph with `go list`, so a
// change that breaks a rule fails here, naming the package and the import.
package architecture

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ltiop/ltiop"

// layers says, for each top-level part, which parts of ltiop its non-test code may import
// (transitively). api/ is at the bottom, internal/ foundations above it, controllers/ and
// webserver/ beside each other, the composition root app/ above them, and main.go and hack/
// on top. The demo's simulators stand apart from the product they exercise.
var layers = map[string][]string{
	"api":         {"api"},
	"internal":    {"api", "internal"},
	"controllers": {"api", "internal", "controllers"},
	"webserver":   {"api", "internal", "webserver"},
	"simulators":  {"api", "internal", "simulators"},
	"app":         {"api", "internal", "controllers", "webserver", "app"},
	"test":        {"api", "internal", "test"},
}

// pure are the protocol packages and their error type: no Kubernetes, no HTTP server code,
// no HTML.
var pure = []string{module + "/webserver/protocol/apierr", module + "/webserver/protocol/lti", module + "/webserver/protocol/ltiplatform", module + "/webserver/protocol/lti11", module + "/internal/oauth1", module + "/internal/pox"}

// impure are what a pure package must not depend on, as prefixes of import paths.
var impure = []string{"k8s.io/", "sigs.k8s.io/", "html/template", module + "/webserver/protocol/httpapi", module + "/internal/config"}

// deps lists every package of the module with its transitive dependencies (tests excluded).
func deps(t *testing.T) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		all[fields[0]] = fields[1:]
	}
	return all
}

// part returns the top-level folder of an ltiop package ("" for the root and non-ltiop ones).
func part(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	return top
}

// exceptions are imports that cross the layers on purpose, each with its reason
// (importer → part → reason). None today: simulators/datasim has its own copy of the
// platform data API's wire types, kept in step by a test of webserver/clients/platformdata.
var exceptions = map[string]map[string]string{}

func TestDependenciesPointOneWay(t *testing.T) {
	for pkg, ds := range deps(t) {
		allowed, ruled := layers[part(pkg)]
		if !ruled {
			continue // main.go and hack/ sit on top and may import anything
		}
		for _, d := range ds {
			if p := part(d); p != "" && !slices.Contains(allowed, p) && exceptions[pkg][p] == "" {
				t.Errorf("%s imports %s: %s/ may import only %v", pkg, d, part(pkg), allowed)
			}
		}
	}
}

func TestProtocolPackagesArePure(t *testing.T) {
	all := deps(t)
	for _, pkg := range pure {
		ds, ok := all[pkg]
		if !ok {
			t.Fatalf("%s is not in the module any more: update this test", pkg)
		}
		for _, d := range ds {
			for _, bad := range impure {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s depends on %s: protocol packages import no Kubernetes, server or HTML code", pkg, d)
				}
			}
		}
	}
}

// testLayers adds, for each part, what its tests may import besides what its code may: the
// shared test helpers and the simulators (real peers), and for the suites under test/ the
// whole product, which they run.
var testLayers = map[string][]string{
	"api":         {"test", "simulators"},
	"internal":    {"test", "simulators"},
	"controllers": {"test", "simulators"},
	"webserver":   {"test", "simulators"},
	"simulators":  {"test"},
	"app":         {"test", "simulators"},
	"test":        {"controllers", "webserver", "app", "simulators"},
}

// testExceptions are test imports that cross the layers on purpose, each with its reason.
var testExceptions = map[string]map[string]string{
	// The service Secret's controller makes the keyrings the web server reads: its tests
	// read them back with the web server's own readers, and run the app's manager setup.
	module + "/controllers": {
		"app":       "the manager the controllers run in, as production builds it",
		"webserver": "the sealing and signing keyrings read back as the web server reads them",
	},
}

// Tests' direct imports follow the layers too: a test that imports across them ties the
// layers together as much as code does, only less visibly.
func TestTestImportsPointOneWay(t *testing.T) {
	for _, p := range packages(t) {
		top := part(p.ImportPath)
		allowed, ruled := layers[top]
		if !ruled {
			continue
		}
		allowed = append(slices.Clone(allowed), testLayers[top]...)
		for _, d := range append(slices.Clone(p.TestImports), p.XTestImports...) {
			if q := part(d); q != "" && !slices.Contains(allowed, q) && testExceptions[p.ImportPath][q] == "" {
				t.Errorf("a test of %s imports %s: tests of %s/ may import only %v", p.ImportPath, d, top, allowed)
			}
		}
	}
}
