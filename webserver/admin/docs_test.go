package admin_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// shellBlock returns the first ```sh block after the heading in a docs page.
func shellBlock(t *testing.T, page, heading string) string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("%s has no heading %q", page, heading)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```sh\n")
	if start < 0 {
		t.Fatalf("no sh block after %q", heading)
	}
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	// Blocks inside list items are indented: bash reads them as they are.
	return rest[:end]
}

// TestDocsCurlExamples runs the curl examples of docs/platform-mode.md's tools API and
// dynamic registration sections, as written, against the API: the documentation's
// commands work.
func TestDocsCurlExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	h := newToolsHarness(t)
	run := func(heading string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", shellBlock(t, "../../docs/platform-mode.md", heading))
		cmd.Env = append(os.Environ(), "LTIOP_URL="+h.api.URL, "LTIOP_API_KEY=the-api-key")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", heading, err, out)
		}
		return string(out)
	}
	out := run("### The tools API")
	if got := h.tools.Get("example-tool"); got == nil || got.ClientID != "example-tool-prod" || !strings.Contains(out, `"id":"example-tool"`) {
		t.Fatalf("the tools API example: %s", out)
	}
	h.call("DELETE", "/api/tools/example-tool", nil) // the registration example names it too
	out = run("### Tools register themselves: dynamic registration")
	if !strings.Contains(out, `"registrationToken":"`) || !strings.Contains(out, `"pageUrl":"`+h.api.URL+`/lti/platform/registration?page=`) {
		t.Fatalf("the registration example: %s", out)
	}
}
