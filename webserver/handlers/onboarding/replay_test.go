package onboarding_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/test/utils/testredis"
	"github.com/ltiop/ltiop/test/utils/teststore"
	"github.com/ltiop/ltiop/webserver/handlers/onboarding"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// With the replay store down, completing a pre-approved registration answers 503
// REPLAY_STORE_UNAVAILABLE and registers nothing; once the store is back it completes,
// once.
func TestCompleteRefusedWhileTheReplayStoreIsDown(t *testing.T) {
	srv := testredis.Start(t)
	store := teststore.Redis(t, srv)
	h := newHarness(t, preApproval, func(c *harnessConfig) { c.mode = lmssim.DeploymentInToolConfig })
	onboarding.SetReplayStore(h.o, store)
	id := h.pending()
	complete := "/api/registrations/" + url.PathEscape(id) + "/complete"

	srv.Stop()
	testhttp.WantRefusal(t, h.call("POST", complete, map[string]any{}), http.StatusServiceUnavailable, httpapi.CodeReplayStoreUnavailable)
	if len(h.lms.Registrations()) != 0 || len(h.stored()) != 0 {
		t.Fatal("registered while the replay store was down")
	}
	srv.Restart()
	if done := h.call("POST", complete, map[string]any{}); done.Status != http.StatusOK {
		t.Fatalf("store back: %d %s", done.Status, done.Body)
	}
	testhttp.WantRefusal(t, h.call("POST", complete, map[string]any{}), http.StatusConflict, "REGISTRATION_ALREADY_COMPLETED")
}
