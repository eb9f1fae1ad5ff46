package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// A short LTIOP_API_KEY stops the demo at once with what to do (issue #25: it waited two
// minutes and ended with "ltiop was not ready"); an unset one gets a random key long enough.
func TestDemoAPIKey(t *testing.T) {
	if _, err := demoAPIKey("short-key"); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("short key: err = %v", err)
	}
	long := strings.Repeat("k", httpapi.MinAPIKeyLength)
	if got, err := demoAPIKey(long); err != nil || got != long {
		t.Errorf("32-character key: %q, %v", got, err)
	}
	if got, err := demoAPIKey(""); err != nil || len(got) < httpapi.MinAPIKeyLength {
		t.Errorf("no key: %q, %v", got, err)
	}
}

// `make demo` (hack/demo.sh) refuses the short key before it builds anything.
func TestDemoScriptRefusesShortKeyFirst(t *testing.T) {
	cmd := exec.Command("bash", "../demo.sh")
	cmd.Env = append(os.Environ(), "LTIOP_API_KEY=only-twenty-chars-xx")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "LTIOP_API_KEY has 20 characters; ltiop needs at least 32") {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
	t.Logf("refused after %v", time.Since(start))
}
