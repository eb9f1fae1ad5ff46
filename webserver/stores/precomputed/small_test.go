package precomputed

import (
	"bytes"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A small body keeps no gzip encoding in memory, and serves the same gzip bytes a kept
// encoding would be, under the same ETag; a large one keeps its encoding.
func TestSmallBodiesAreCompressedWhenAsked(t *testing.T) {
	small := []byte(`{"keys":[` + strings.Repeat(`{"kty":"RSA","e":"AQAB"},`, 10) + `{}]}`)
	b := New(small)
	if !b.gzip || b.gz != nil {
		t.Fatalf("a %d-byte body: gzip %v, kept %d bytes of it; want served, not kept", len(small), b.gzip, len(b.gz))
	}
	req := httptest.NewRequest("GET", "/doc", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	b.Serve(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("ETag") != b.gzETag ||
		!bytes.Equal(rec.Body.Bytes(), compress(small)) || rec.Header().Get("Content-Length") != strconv.Itoa(len(compress(small))) {
		t.Fatalf("headers %v, %d bytes", rec.Header(), rec.Body.Len())
	}

	large := []byte(`{"keys":[` + strings.Repeat(`{"kty":"RSA","e":"AQAB"},`, 200) + `{}]}`)
	if b := New(large); !b.gzip || b.gz == nil {
		t.Fatalf("a %d-byte body keeps its gzip encoding", len(large))
	}
}
