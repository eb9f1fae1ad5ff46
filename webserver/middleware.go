package webserver

import (
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ltiop_http_requests_total",
		Help: "HTTP requests served, by route pattern, method (GET HEAD POST PUT PATCH DELETE OPTIONS, else OTHER) and status code.",
	}, []string{"route", "method", "code"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ltiop_http_request_duration_seconds",
		Help:    "Time to serve HTTP requests, by route pattern.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route"})
)

func init() {
	metrics.Registry.MustRegister(requestsTotal, requestDuration)
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observe gives each request an id (the client's X-Request-Id or traceparent, or a new
// one; see requestID), echoes it in X-Request-Id, logs the request at debug level without
// query string or headers (they can carry tokens), counts it, and turns a panic into a
// 500 envelope. Handlers log through base with the request id (log.FromContext). The
// paths that carry a secret are logged redacted (secrets).
func observe(base logr.Logger, secrets *secretPaths, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r)
		w.Header().Set("X-Request-Id", id)
		logger := requestLogger(base, id)
		ctx, info := httpapi.WithRequestInfo(log.IntoContext(r.Context(), logger))
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { //nolint:errorlint // a recovered panic value is compared by identity, as net/http does
					panic(v)
				}
				logger.Error(nil, "handler panicked", "panic", v, "method", r.Method, "path", secrets.logged(r))
				if rec.status == 0 {
					httpapi.WriteError(rec, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "An internal error occurred."))
				}
			}
			if rec.status == 0 {
				rec.status = http.StatusOK // what net/http sends for a handler that wrote nothing
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			elapsed := time.Since(start)
			requestsTotal.WithLabelValues(route, methodLabel(r.Method), strconv.Itoa(rec.status)).Inc()
			requestDuration.WithLabelValues(route).Observe(elapsed.Seconds())
			if debug := logger.V(1); debug.Enabled() { // the arguments cost allocations
				platformID := info.PlatformID()
				if platformID == "" {
					platformID = r.PathValue("platformId")
				}
				debug.Info("request", "method", r.Method, "path", secrets.logged(r), "route", route,
					"status", rec.status, "duration", elapsed.String(), "platformId", platformID)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// methodLabel is the method as the metrics label it: net/http accepts any token as a
// method, and each distinct label value is a series kept until restart, so a client's
// own methods all count as OTHER.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

// secretPaths are the paths that carry a secret (Route.SecretPath: a registration token, a
// service grant), as logs must not show them. (Metrics are labelled by pattern for every
// route, "unmatched" for none.)
type secretPaths struct {
	patterns map[string]bool // the routes' "METHOD /path/{secret}…" patterns
	prefixes []secretPrefix  // where their secret segment starts
}

// secretPrefix: the path up to a secret segment ("/lti/register/") and its wildcard ("{token}").
type secretPrefix struct{ path, wildcard string }

// newSecretPaths reads the secret paths of the route table. A route's secret is taken to
// start at its first wildcard: cutting there hides more, never less.
func newSecretPaths(routes []Route) *secretPaths {
	s := &secretPaths{patterns: map[string]bool{}}
	for _, rt := range routes {
		if !rt.SecretPath {
			continue
		}
		s.patterns[rt.Method+" "+rt.Path] = true
		open := strings.IndexByte(rt.Path, '{')
		length := strings.IndexByte(rt.Path[open:], '}') + 1
		p := secretPrefix{path: rt.Path[:open], wildcard: rt.Path[open : open+length]}
		if !slices.Contains(s.prefixes, p) {
			s.prefixes = append(s.prefixes, p)
		}
	}
	return s
}

// logged is the request's path as logs show it. A route whose path carries a secret shows
// its pattern. A request no route matched (a 404, a 405) has none: under a secret path its
// path is cut at the secret's segment, shown as the wildcard, with "/…" when more followed
// ("/lti/platform/services/{grant}/…"). The path is cleaned and decoded first, so "//" or
// "%2F" do not move the cut. Other paths are shown as they are.
func (s *secretPaths) logged(r *http.Request) string {
	switch {
	case s == nil:
		return r.URL.Path
	case s.patterns[r.Pattern]:
		return r.Pattern[strings.IndexByte(r.Pattern, ' ')+1:]
	case r.Pattern != "":
		return r.URL.Path
	}
	cleaned := path.Clean("/" + r.URL.Path)
	for _, p := range s.prefixes {
		rest, ok := strings.CutPrefix(cleaned, p.path)
		if !ok || rest == "" {
			continue
		}
		if strings.Contains(rest, "/") {
			return p.path + p.wildcard + "/…"
		}
		return p.path + p.wildcard
	}
	return r.URL.Path
}

// notFoundOrMethod answers what the ServeMux has no route for, in the error envelope:
// 405 with Allow when the path exists under another method, else 404.
func notFoundOrMethod(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// Let the mux decide between 404 and 405 on a throwaway writer, keep its Allow.
		probe := &headerProbe{header: http.Header{}}
		mux.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			httpapi.WriteError(w, httpapi.Errorf(http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed,
				r.Method+" is not allowed here; allowed: "+probe.header.Get("Allow")+"."))
			return
		}
		httpapi.WriteError(w, httpapi.Errorf(http.StatusNotFound, httpapi.CodeNotFound, "No endpoint at "+r.URL.Path+"."))
	})
}

// headerProbe is a ResponseWriter that records status and headers and drops the body.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }
