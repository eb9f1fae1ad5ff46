package toolmode_test

import (
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/test/utils/testredis"
	"github.com/ltiop/ltiop/test/utils/teststore"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// newRedisRig is a rig whose replay store is a real redis-server, which the test stops
// and restarts.
func newRedisRig(t testing.TB) (*rig, *testredis.Server) {
	t.Helper()
	srv := testredis.Start(t)
	store := teststore.Redis(t, srv)
	rg := newRig(t)
	toolmode.SetReplayStore(rg.tool, store)
	return rg, srv
}

// A launch whose single use cannot be recorded is refused with 503
// REPLAY_STORE_UNAVAILABLE (the error page in a browser, the envelope for JSON clients),
// never handed to the integrator. Nothing was used up: once the store is back the same
// launch succeeds, and then only once.
func TestLaunchRefusedWhileTheReplayStoreIsDown(t *testing.T) {
	rg, srv := newRedisRig(t)
	client := browser()
	ar := rg.startLogin(t, client, nil)
	u, _ := url.Parse(rg.ltiop.URL + paths.Launch)
	cookies := client.Jar.Cookies(u)
	idToken := rg.sign(t, rg.claims(ar))

	srv.Stop()
	testhttp.WantRefusal(t, rg.postLaunch(t, client, idToken, ar.State), 503, httpapi.CodeReplayStoreUnavailable)
	page := rg.postForm(t, client, paths.Launch, url.Values{"id_token": {idToken}, "state": {ar.State}}, false)
	if !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("a browser gets %s", page.Header.Get("Content-Type"))
	}
	testhttp.WantRefusal(t, page, 503, httpapi.CodeReplayStoreUnavailable)
	if len(rg.learntDeployments()) != 0 {
		t.Fatal("a refused launch taught a deployment")
	}

	srv.Restart()
	if res := rg.postLaunch(t, client, idToken, ar.State); res.Status != http.StatusSeeOther {
		t.Fatalf("store back: %d %s", res.Status, res.Body)
	}
	client.Jar.SetCookies(u, cookies)
	testhttp.WantRefusal(t, rg.postLaunch(t, client, idToken, ar.State), 401, lti.CodeStateReused)
}

// The platform-storage check's single use fails closed the same way.
func TestLaunchCompleteRefusedWhileTheReplayStoreIsDown(t *testing.T) {
	rg, srv := newRedisRig(t)
	value, pending := rg.storageLaunch(t)
	complete := func() testhttp.Reply {
		return rg.postForm(t, browser(), paths.LaunchComplete, url.Values{"pending": {pending}, "value": {value}}, true)
	}
	srv.Stop()
	testhttp.WantRefusal(t, complete(), 503, httpapi.CodeReplayStoreUnavailable)
	srv.Restart()
	if done := complete(); done.Status != http.StatusSeeOther {
		t.Fatalf("store back: %d %s", done.Status, done.Body)
	}
	testhttp.WantRefusal(t, complete(), 401, lti.CodeStateReused)
}
