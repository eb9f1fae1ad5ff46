package webserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// countingSink counts the WithValues calls reaching the real sink.
type countingSink struct {
	logr.LogSink
	withValues *atomic.Int32
}

func (c countingSink) WithValues(kv ...any) logr.LogSink {
	c.withValues.Add(1)
	return countingSink{c.LogSink.WithValues(kv...), c.withValues}
}

func (c countingSink) WithName(name string) logr.LogSink {
	return countingSink{c.LogSink.WithName(name), c.withValues}
}

// A handler's log line carries the request id of X-Request-Id; a request that logs
// nothing costs the real sink no WithValues.
func TestRequestLogger(t *testing.T) {
	var lines []string
	var withValues atomic.Int32
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	base = logr.New(countingSink{base.GetSink(), &withValues}).WithName("http")

	h := observe(base, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/log" {
			log.FromContext(r.Context()).WithName("tool").WithValues("step", "launch").Info("refused", "code", "X")
		}
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/quiet", nil))
	if len(lines) != 0 || withValues.Load() != 0 {
		t.Fatalf("a quiet request logged %q and made %d WithValues calls", lines, withValues.Load())
	}

	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/log", nil))
	id := w.Header().Get("X-Request-Id")
	if len(lines) != 1 || !strings.Contains(lines[0], `"requestId"="`+id+`"`) || !strings.Contains(lines[0], `"step"="launch"`) ||
		!strings.Contains(lines[0], "http/tool") || len(id) != 32 {
		t.Errorf("log %q, request id %q", lines, id)
	}
}

func BenchmarkObserve(b *testing.B) {
	h := observe(log.Log.WithName("http"), nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest("GET", "/lti/login", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}
