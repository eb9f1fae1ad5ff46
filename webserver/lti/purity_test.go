package lti

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProtocolPackagesArePure: the protocol packages of both modes, and what they import,
// stay free of Kubernetes, of HTML rendering and of the HTTP handler helpers
// (ARCHITECTURE.md: "webserver/lti and the platform protocol package import nothing of
// Kubernetes or net/http servers"). net/http itself cannot be told apart: the JWKS client
// of jwx needs it.
func TestProtocolPackagesArePure(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	const module = "github.com/ltiop/ltiop/"
	out, err := exec.Command(goCmd, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`,
		module+"webserver/lti", module+"webserver/ltiplatform").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	forbidden := func(pkg string) bool {
		switch {
		case strings.HasPrefix(pkg, "k8s.io/"), strings.HasPrefix(pkg, "sigs.k8s.io/"):
			return true
		}
		switch pkg {
		case "html/template", "net/http/httptest", module + "webserver/httpapi":
			return true
		}
		return false
	}
	// Report where the allowed graph first reaches a forbidden package, not all it pulls in.
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if forbidden(fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if forbidden(imp) {
				t.Errorf("%s imports %s: the protocol packages must stay pure", fields[0], imp)
			}
		}
	}
}
