package precomputed_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/stores/precomputed"
)

// big compresses well, so it has a gzip encoding.
var big = []byte(`{"keys":[` + strings.Repeat(`{"kty":"RSA","e":"AQAB","use":"sig"},`, 40) + `{}]}`)

func serve(b *precomputed.Body, method string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/doc", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	b.Serve(rec, req)
	return rec
}

func gunzip(t *testing.T, p []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestServesIdentityWithoutAcceptEncoding(t *testing.T) {
	b := precomputed.New(big)
	rec := serve(b, "GET", nil)
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), big) || rec.Header().Get("Content-Encoding") != "" {
		t.Fatalf("got %d %q encoding %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Encoding"))
	}
	if rec.Header().Get("ETag") != b.ETag() || !strings.HasPrefix(b.ETag(), `"`) || rec.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("headers %v", rec.Header())
	}
}

func TestServesGzipWhenAccepted(t *testing.T) {
	b := precomputed.New(big)
	for _, ae := range []string{"gzip", "br, gzip;q=0.5", "GZIP", "*", "deflate, x-gzip"} {
		rec := serve(b, "GET", map[string]string{"Accept-Encoding": ae})
		if rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("Accept-Encoding %q: not gzipped", ae)
		}
		if got := gunzip(t, rec.Body.Bytes()); !bytes.Equal(got, big) {
			t.Fatalf("Accept-Encoding %q: gunzipped %q", ae, got)
		}
		if rec.Header().Get("ETag") == b.ETag() {
			t.Fatalf("the gzip encoding shares the identity ETag %s", b.ETag())
		}
	}
}

func TestRefusedGzipIsNotSent(t *testing.T) {
	b := precomputed.New(big)
	for _, ae := range []string{"gzip;q=0", "gzip; q=0.000, br", "identity", "br", "gzipx"} {
		if rec := serve(b, "GET", map[string]string{"Accept-Encoding": ae}); rec.Header().Get("Content-Encoding") != "" ||
			!bytes.Equal(rec.Body.Bytes(), big) {
			t.Fatalf("Accept-Encoding %q: encoding %q", ae, rec.Header().Get("Content-Encoding"))
		}
	}
}

func TestTinyBodyIsNotCompressed(t *testing.T) {
	b := precomputed.New([]byte(`{}`))
	if rec := serve(b, "GET", map[string]string{"Accept-Encoding": "gzip"}); rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != `{}` {
		t.Fatalf("a body gzip makes larger was compressed: %q", rec.Body.String())
	}
}

func TestIfNoneMatch(t *testing.T) {
	b := precomputed.New(big)
	gzTag := serve(b, "GET", map[string]string{"Accept-Encoding": "gzip"}).Header().Get("ETag")
	for _, inm := range []string{b.ETag(), gzTag, "W/" + b.ETag(), `"other", ` + b.ETag(), "*"} {
		rec := serve(b, "GET", map[string]string{"If-None-Match": inm, "Accept-Encoding": "gzip"})
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != gzTag {
			t.Fatalf("If-None-Match %q: %d, %d bytes, ETag %q", inm, rec.Code, rec.Body.Len(), rec.Header().Get("ETag"))
		}
	}
	other := precomputed.New(append([]byte(nil), append(big, ' ')...))
	if other.ETag() == b.ETag() {
		t.Fatal("different content, same ETag")
	}
	if rec := serve(b, "GET", map[string]string{"If-None-Match": other.ETag()}); rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), big) {
		t.Fatalf("a stale ETag got %d", rec.Code)
	}
}

func TestHeadSendsNoBody(t *testing.T) {
	rec := serve(precomputed.New(big), "HEAD", nil)
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Fatalf("HEAD: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// A body as large as /lti/keys at scale (compressed by klauspost's gzip, not the standard
// library's) is still plain gzip: the standard reader restores it, and it is smaller.
func TestLargeBodyIsGzip(t *testing.T) {
	var large []byte
	for i := 0; len(large) < 1<<20; i++ {
		large = append(large, `{"kty":"RSA","kid":"`...)
		large = append(large, strings.Repeat(string(rune('a'+i%26)), 1+i%43)...)
		large = append(large, `","e":"AQAB","use":"sig"},`...)
	}
	rec := serve(precomputed.New(large), "GET", map[string]string{"Accept-Encoding": "gzip"})
	if rec.Header().Get("Content-Encoding") != "gzip" || rec.Body.Len() >= len(large) {
		t.Fatalf("a %d-byte body: encoding %q, %d bytes", len(large), rec.Header().Get("Content-Encoding"), rec.Body.Len())
	}
	if got := gunzip(t, rec.Body.Bytes()); !bytes.Equal(got, large) {
		t.Fatal("the gunzipped large body differs")
	}
}
