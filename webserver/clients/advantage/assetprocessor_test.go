package advantage

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testoutbound"
)

const testAssetScope = "https://purl.imsglobal.org/spec/lti/scope/asset.readonly"

// assetServer serves assets with the token server's tokens; /redirect sends elsewhere.
func assetServer(t *testing.T, ts *tokenServer, redirectTo string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ts.valid(bearer(r), testAssetScope) {
			http.Error(w, "token", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/asset":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "essay")
		case "/redirect":
			http.Redirect(w, r, redirectTo, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDownloadAssetRedirects(t *testing.T) {
	ts := newTokenServer(t)
	c := NewClient(HTTPClient(testoutbound.Dev()))
	var leaked string
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, "stored")
	}))
	t.Cleanup(store.Close)
	lms := assetServer(t, ts, store.URL+"/file")

	dl, err := c.DownloadAsset(context.Background(), ts.cred(), lms.URL+"/asset", testAssetScope, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if string(body) != "essay" || dl.ContentType != "text/plain" {
		t.Fatalf("got %q %q", body, dl.ContentType)
	}

	// T-AP-05: a redirect to another host is followed without the token.
	dl, err = c.DownloadAsset(context.Background(), ts.cred(), lms.URL+"/redirect", testAssetScope, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(dl.Body)
	dl.Body.Close()
	if string(body) != "stored" || leaked != "" {
		t.Fatalf("got %q; Authorization sent to the other host: %q", body, leaked)
	}
}

// T-AP-06: the limit holds with and without an announced length.
func TestDownloadAssetLimit(t *testing.T) {
	ts := newTokenServer(t)
	c := NewClient(HTTPClient(testoutbound.Dev()))
	lms := assetServer(t, ts, "")
	if _, err := c.DownloadAsset(context.Background(), ts.cred(), lms.URL+"/asset", testAssetScope, 4); !errors.Is(err, ErrAssetTooLarge) {
		t.Fatalf("announced 5 bytes, limit 4: %v", err)
	}
	dl, err := c.DownloadAsset(context.Background(), ts.cred(), lms.URL+"/asset", testAssetScope, 5)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(dl.Body)
	dl.Body.Close()
	if err != nil || string(body) != "essay" {
		t.Fatalf("exactly the limit: %q %v", body, err)
	}
	lb := &limitedBody{r: io.NopCloser(strings.NewReader("essay")), left: 3, cancel: func() {}}
	body, err = io.ReadAll(lb)
	if !errors.Is(err, ErrAssetTooLarge) || string(body) != "ess" {
		t.Fatalf("stream past the limit: %q %v", body, err)
	}
	// A scope the token endpoint does not grant: nothing is downloaded.
	ts.grant = func(requested []string) (any, bool) { return "https://purl.imsglobal.org/spec/lti/scope/report", true }
	c = NewClient(HTTPClient(testoutbound.Dev())) // no cached token
	if _, err := c.DownloadAsset(context.Background(), ts.cred(), lms.URL+"/asset", testAssetScope, 5); !errors.Is(err, ErrScopeNotGranted) {
		t.Fatalf("scope not granted: %v", err)
	}
}

// T-CC-09 for the Asset Service: a 401 drops the token and the download is tried once more
// with a fresh one; a second 401 is an UpstreamError.
func TestDownloadAssetRetriesOnce(t *testing.T) {
	ts := newTokenServer(t)
	c := NewClient(HTTPClient(testoutbound.Dev()))
	lms := assetServer(t, ts, "")
	get := func() (string, error) {
		dl, err := c.DownloadAsset(context.Background(), ts.cred(), lms.URL+"/asset", testAssetScope, 1<<20)
		if err != nil {
			return "", err
		}
		defer dl.Body.Close()
		body, err := io.ReadAll(dl.Body)
		return string(body), err
	}
	if body, err := get(); err != nil || body != "essay" {
		t.Fatalf("first download: %q %v", body, err)
	}
	ts.revokeAll() // the LMS forgets the token before it expires
	if body, err := get(); err != nil || body != "essay" {
		t.Fatalf("after revocation: %q %v", body, err)
	}
	if n := ts.requests.Load(); n != 2 {
		t.Fatalf("%d token requests, want 2", n)
	}

	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Invalid access token", http.StatusUnauthorized)
	}))
	t.Cleanup(never.Close)
	_, err := c.DownloadAsset(context.Background(), ts.cred(), never.URL+"/asset", testAssetScope, 1<<20)
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Status != http.StatusUnauthorized || ue.Op != "asset" {
		t.Fatalf("two 401s: %v", err)
	}
	if n := ts.requests.Load(); n != 3 {
		t.Fatalf("%d token requests, want 3 (the cached token, then one fresh one)", n)
	}
}
