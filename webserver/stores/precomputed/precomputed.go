// Package precomputed serves response bodies that are computed once per change instead of
// once per request: the bytes, their gzip encoding and a strong ETag from a hash of the
// content. A request then costs a header comparison and a write, whatever the body's size.
package precomputed

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"

	kgzip "github.com/klauspost/compress/gzip"
)

// Body is an immutable response body. The zero value is not usable; call New.
type Body struct {
	raw, gz []byte // gz is nil for a small body (compressed when asked) or one gzip does not shrink
	// gzip says a gzip encoding is served: compressing makes the body smaller.
	gzip         bool
	etag, gzETag string
}

// smallBody is the size under which a body is compressed when a request asks for gzip,
// not kept compressed: a registration's key set (~460 bytes, fetched by its LMS a few
// times an hour) compresses in microseconds, and 10,000 of them kept compressed held
// 4 MB. The encoding is the same bytes either way.
const smallBody = 2 << 10

// New hashes and compresses raw, which must not be modified afterwards.
func New(raw []byte) *Body {
	sum := sha256.Sum256(raw)
	tag := base64.RawURLEncoding.EncodeToString(sum[:18])
	b := &Body{raw: raw, etag: `"` + tag + `"`, gzETag: `"` + tag + `-gzip"`}
	if gz := compress(raw); len(gz) < len(raw) {
		b.gzip = true
		if len(raw) >= smallBody {
			b.gz = gz
		}
	}
	return b
}

// Bytes returns the uncompressed body; callers must not modify it.
func (b *Body) Bytes() []byte { return b.raw }

// ETag is the strong entity tag of the uncompressed body (the gzip encoding, a different
// representation, has its own).
func (b *Body) ETag() string { return b.etag }

// Serve answers r with the body: 304 when If-None-Match names it, gzip when the client
// accepts it. The caller sets Content-Type and Cache-Control first.
func (b *Body) Serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Accept-Encoding")
	body, etag := b.raw, b.etag
	gzipped := b.gzip && acceptsGzip(r.Header.Values("Accept-Encoding"))
	if gzipped {
		etag = b.gzETag
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", etag)
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && b.matches(inm) {
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if gzipped {
		if body = b.gz; body == nil {
			body = compress(b.raw) // a small body: see smallBody
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// matches reports whether an If-None-Match list names this body in either encoding. The
// comparison is weak, as RFC 9110 §13.1.2 asks: a W/ prefix is ignored.
func (b *Body) matches(lists []string) bool {
	for _, list := range lists {
		for tag := range strings.SplitSeq(list, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == b.etag || tag == b.gzETag {
				return true
			}
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding allows gzip (by name or *, with q > 0).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			if !zeroQuality(params) {
				return true
			}
		}
	}
	return false
}

// zeroQuality reports whether the parameters of a coding carry q=0 (refused).
func zeroQuality(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q <= 0
		}
	}
	return false
}

// writers reuses gzip writers: each holds about a megabyte of compressor state.
var writers = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// largeWriters are klauspost's gzip writers, for bodies of largeBody bytes or more: the
// same format at a quarter less CPU, which matters for /lti/keys, rebuilt in the background
// as registrations change (at 10,000 registrations a 4 MB body, whose gzip was four fifths
// of a rebuild). On a body as small as one registration's key set its BestSpeed does not
// shrink it at all, so small bodies keep the standard library's.
var largeWriters = sync.Pool{New: func() any {
	w, _ := kgzip.NewWriterLevel(nil, kgzip.BestSpeed)
	return w
}}

// largeBody is the size from which largeWriters compress.
const largeBody = 64 << 10

func compress(raw []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(raw)/2 + 64)
	if len(raw) >= largeBody {
		zw := largeWriters.Get().(*kgzip.Writer)
		zw.Reset(&buf)
		_, _ = zw.Write(raw) // writing to a bytes.Buffer does not fail
		_ = zw.Close()
		largeWriters.Put(zw)
		return bytes.Clone(buf.Bytes())
	}
	zw := writers.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	writers.Put(zw)
	// The body is kept until the next change: a copy of its own size, not the buffer,
	// whose growth left up to twice the room (at 10,000 registrations, ~4 MB of it).
	return bytes.Clone(buf.Bytes())
}
