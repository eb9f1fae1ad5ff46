package onboarding_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/paths"
)

// FuzzRegisterParams throws arbitrary openid_configuration and registration_token values
// at /lti/register, the one onboarding endpoint anyone can reach. Whatever they are, the
// answer is one of the documented ones, never a 500, never an unescaped echo of the input,
// and nothing is written unless the registration really happened (which only the
// simulator's own configuration URL can make happen).
//
// Run it longer with: go test ./webserver/handlers/onboarding -run '^$' -fuzz FuzzRegisterParams
func FuzzRegisterParams(f *testing.F) {
	for _, seed := range [][2]string{
		{"", ""},
		{"http://169.254.169.254/latest/meta-data/", "t"},
		{"http://[fd00:ec2::254]/", "t"},
		{"http://10.0.0.1/.well-known/openid-configuration", ""},
		{"http://0x7f.1/", ""},
		{"file:///etc/passwd", "t"},
		{"javascript:alert(1)", "<script>alert(1)</script>"},
		{"https://user:pass@127.0.0.1/", "t"},
		{"http://127.0.0.1:0/", "t"},
		{"//127.0.0.1/x", "t"},
		{"http://127.0.0.1/%zz", "t"},
		{"\r\nSet-Cookie: a=b", "\x00\xff"},
		{"https://[::1", "t"},
		{strings.Repeat("a", 70000), strings.Repeat("b", 70000)},
		{"LMS/.well-known/openid-configuration", "token-1"}, // LMS: the simulator's URL
		{"LMS/moved?x=<b>", "\"'><img src=x>"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, configURL, token string) {
		h := newHarness(t)
		configURL = strings.Replace(configURL, "LMS", h.lmsURL, 1)
		q := url.Values{"openid_configuration": {configURL}, "registration_token": {token}}
		reply := h.open(h.ltiop.URL+paths.Register+"?"+q.Encode(), false)

		switch reply.Status {
		case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusTooManyRequests,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		default:
			t.Fatalf("openid_configuration %q: status %d, not a documented answer: %s", configURL, reply.Status, reply.Body)
		}
		for _, raw := range []string{configURL, token} {
			if strings.ContainsAny(raw, "<>\"'") && len(raw) > 3 && strings.Contains(reply.Body, raw) {
				t.Fatalf("the answer echoes the input unescaped: %q", raw)
			}
		}
		stored := h.stored()
		if reply.Status != http.StatusOK && len(stored) != 0 {
			t.Fatalf("a refused registration (%d) wrote %d registrations", reply.Status, len(stored))
		}
		if len(stored) > 1 {
			t.Fatalf("one request wrote %d registrations", len(stored))
		}
	})
}
