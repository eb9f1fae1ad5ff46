package webserver_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

// The attack on the unauthenticated notice endpoint (T-PNS-10): a flood from one address is
// refused past its burst with 429, Retry-After and the JSON envelope (platforms' servers
// read JSON, not pages); other addresses are served.
func TestNoticeEndpointFloodIsRateLimited(t *testing.T) {
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	h := limitedServer(webserver.RateLimits{Notices: ratelimit.Limit{Rate: 1, Burst: 5}, Now: clock.now})
	attacker := "203.0.113.9:4444"
	for i := range 5 {
		if w := request(h, "POST", "/lti/notices/canvas", attacker); w.Code == http.StatusTooManyRequests {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	w := request(h, "POST", "/lti/notices/other-registration", attacker) // one bucket per address, whatever the registration
	var env httpapi.Envelope
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Details.Message != httpapi.CodeRateLimited {
		t.Fatalf("past the burst: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := request(h, "POST", "/lti/notices/canvas", "198.51.100.30:4444"); w.Code == http.StatusTooManyRequests {
		t.Error("another address refused")
	}
}
