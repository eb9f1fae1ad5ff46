package build_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildLtiop builds the binary (with -race: the packages `go test -race` compiled).
func buildLtiop(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ltiop")
	run(t, "go", "build", "-race", "-o", bin, ".")
	return bin
}

func TestCommandLine(t *testing.T) {
	bin := buildLtiop(t)

	// --help prints the flags on standard output and exits 0, as other tools do.
	t.Run("help exits 0", func(t *testing.T) {
		for _, arg := range []string{"--help", "-h"} {
			cmd := exec.Command(bin, arg)
			cmd.Env = []string{}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("ltiop %s: %v\n%s", arg, err, stderr.String())
			}
			for _, want := range []string{"-public-url", "LTIOP_PUBLIC_URL", "-config"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("ltiop %s does not mention %s:\n%s", arg, want, stdout.String())
				}
			}
		}
	})

	// An unknown flag is still a usage error: exit 2, and a message naming it.
	t.Run("unknown flag exits 2", func(t *testing.T) {
		cmd := exec.Command(bin, "--no-such-flag")
		cmd.Env = []string{}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "no-such-flag") {
			t.Errorf("ltiop --no-such-flag: %v\n%s", err, out)
		}
	})

	// Without a kubeconfig and outside a cluster, client-go complains through klog before
	// ltiop gives up: every line of the log, klog's included, is one JSON object.
	t.Run("no kubeconfig: only JSON lines", func(t *testing.T) {
		cmd := exec.Command(bin, "--public-url=https://lti.example.com", "--namespace=lti")
		cmd.Env = []string{"HOME=" + t.TempDir()} // no KUBECONFIG, no ~/.kube/config, no KUBERNETES_SERVICE_HOST
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		var exit *exec.ExitError
		if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("ltiop without a cluster: %v, want exit 1\n%s", err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		sawClientGo := false
		for _, line := range lines {
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Errorf("a log line is not JSON: %q", line)
				continue
			}
			if entry["logger"] == "client-go" {
				sawClientGo = true
			}
		}
		if !sawClientGo {
			t.Errorf("client-go's complaint about the missing kubeconfig is not in the log:\n%s", stderr.String())
		}
		if stdout.Len() > 0 {
			t.Errorf("standard output is not empty: %q", stdout.String())
		}
	})
}
