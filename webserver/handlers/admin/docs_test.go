package admin_test

import (
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testdocs"
)

// TestDocsCurlExamples runs the curl examples of docs/platform-mode.md's tools API and
// dynamic registration sections, as written, against the API: the documentation's
// commands work.
func TestDocsCurlExamples(t *testing.T) {
	h := newToolsHarness(t)
	env := []string{"LTIOP_URL=" + h.api.URL, "LTIOP_API_KEY=the-api-key"}
	out := testdocs.Run(t, "../../../docs/platform-mode.md", "### The tools API", env...)
	if got := h.tools.Get("example-tool"); got == nil || got.ClientID != "example-tool-prod" || !strings.Contains(out, `"id":"example-tool"`) {
		t.Fatalf("the tools API example: %s", out)
	}
	h.call("DELETE", "/api/tools/example-tool", nil) // the registration example names it too
	out = testdocs.Run(t, "../../../docs/platform-mode.md", "### Tools register themselves: dynamic registration", env...)
	if !strings.Contains(out, `"registrationToken":"`) || !strings.Contains(out, `"pageUrl":"`+h.api.URL+`/lti/platform/registration?page=`) {
		t.Fatalf("the registration example: %s", out)
	}
}
