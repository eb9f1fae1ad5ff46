package oauthbroker_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testredis"
	"github.com/ltiop/ltiop/test/utils/teststore"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// With the replay store down, the callback (its state) answers a 503 error page and the
// code exchange (its one-time code) the 503 envelope, REPLAY_STORE_UNAVAILABLE; neither
// was used up, so both succeed once the store is back, and only once.
func TestReplayStoreDown(t *testing.T) {
	srv := testredis.Start(t)
	store := teststore.Redis(t, srv)
	h := newHarnessWithStore(t, nil, store)
	br := newBrowser(t)
	cb := h.authorize(t, br, "canvas", "")

	srv.Stop()
	res, body := br.get(t, cb)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Location") != "" ||
		!strings.Contains(body, "<code>"+httpapi.CodeReplayStoreUnavailable+"</code>") {
		t.Fatalf("callback, store down: %d %s", res.StatusCode, body)
	}
	srv.Restart()
	res, body = br.get(t, cb)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback, store back: %d %s", res.StatusCode, body)
	}
	code := mustURL(res.Header.Get("Location")).Query().Get("code")

	srv.Stop()
	expect(t, h.accessToken(t, "canvas", code), http.StatusServiceUnavailable, httpapi.CodeReplayStoreUnavailable)
	srv.Restart()
	if got := h.accessToken(t, "canvas", code); got.Status != http.StatusOK {
		t.Fatalf("access token, store back: %s", got.raw)
	}
	expect(t, h.accessToken(t, "canvas", code), http.StatusBadRequest, "CODE_ALREADY_USED")
}
