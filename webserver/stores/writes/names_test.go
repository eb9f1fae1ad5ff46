package writes

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Registration names come from the issuer's host, DNS-safe, whatever the issuer is.
func TestNewRegistrationName(t *testing.T) {
	suffix := regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{10}$`)
	for issuer, prefix := range map[string]string{
		"https://canvas.instructure.com":              "canvas-instructure-com-",
		"https://Moodle.Example.org:8443/path":        "moodle-example-org-",
		"https://10.0.0.7":                            "platform-10-0-0-7-",
		"not a url":                                   "platform-",
		"https://" + strings.Repeat("a.b", 30) + ".x": strings.TrimRight(strings.Repeat("a-b", 30)[:40], "-") + "-",
	} {
		name := NewRegistrationName(issuer)
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || !suffix.MatchString(rest) {
			t.Errorf("%q: name %q, want %q and ten random characters", issuer, name, prefix)
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			t.Errorf("%q: %q is not a valid name: %v", issuer, name, msgs)
		}
	}
	if a, b := NewRegistrationName("https://a.example"), NewRegistrationName("https://a.example"); a == b {
		t.Error("two names for one issuer are equal")
	}
}
