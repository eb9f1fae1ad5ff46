package admin_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testheap"
)

// Serving lists keeps nothing: after the first list has built the sorted view, unpaged
// lists and walks through every page leave the live heap where it was. (What a replica's
// RSS gains from list traffic is garbage awaiting collection; GOMEMLIMIT bounds that, see
// docs/install.md#sizing.)
func TestListsRetainNothing(t *testing.T) {
	h := manyPlatforms(t, 2000)
	serve := func() {
		rec := httptest.NewRecorder()
		h.List(rec, httptest.NewRequest("GET", "/api/platforms", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("unpaged list: %d %s", rec.Code, rec.Body)
		}
		pages := 0
		for target := "/api/platforms?limit=100"; target != ""; pages++ {
			rec := httptest.NewRecorder()
			h.List(rec, httptest.NewRequest("GET", target, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
			}
			target = ""
			if link := rec.Header().Get("Link"); link != "" {
				next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
				if err != nil {
					t.Fatal(err)
				}
				target = next.RequestURI()
			}
		}
		if pages != 20 {
			t.Fatalf("walked %d pages of 100 through 2,000 registrations, want 20", pages)
		}
	}
	serve() // builds the sorted view, which is kept until the registrations change
	// /lti/keys is rebuilt in the background after the registrations were added: let it
	// settle, so that its build does not move the live heap during the measurement.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, fresh := h.Registry.JWKS(); fresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/lti/keys was not rebuilt within a minute")
		}
	}
	before := testheap.Live()
	for range 5 {
		serve()
	}
	grew := testheap.Live() - before
	runtime.KeepAlive(h) // else the registry itself is collected before the second reading
	t.Logf("live heap %d KiB before, %+d bytes after", before>>10, grew)
	if grew > 256<<10 {
		t.Errorf("five unpaged lists and five walks through the pages left %d KiB more live heap", grew>>10)
	}
}
