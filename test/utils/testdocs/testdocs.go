// Package testdocs runs the shell examples of the documentation in tests, so that what
// docs/ tells integrators to type keeps working.
package testdocs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ShellBlock returns the first ```sh block after heading in the page (a path).
func ShellBlock(tb testing.TB, page, heading string) string {
	tb.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		tb.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, heading)
	if i < 0 {
		tb.Fatalf("%s has no heading %q", page, heading)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```sh\n")
	if start < 0 {
		tb.Fatalf("%s: no sh block after %q", page, heading)
	}
	rest = rest[start+len("```sh\n"):]
	return rest[:strings.Index(rest, "```")]
}

// Run runs the first ```sh block after heading with bash (-euo pipefail) and env added to
// the environment, and returns its output; it skips the test where curl is missing.
func Run(tb testing.TB, page, heading string, env ...string) string {
	tb.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		tb.Skip("no curl")
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", ShellBlock(tb, page, heading)) //nolint:gosec // G204: the documentation's own examples
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s, %q: %v\n%s", page, heading, err, out)
	}
	return string(out)
}
