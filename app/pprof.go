package app

import (
	"net/http"
	"net/http/pprof"
)

// pprofHandlers are the net/http/pprof endpoints for the metrics server when enabled, or
// none. They go on the metrics port only: profiles show code paths and a CPU profile costs
// CPU, so the public web port never serves them (the web server routes only its own
// table; importing net/http/pprof also fills http.DefaultServeMux, which nothing in ltiop
// serves). No cmdline endpoint: a replay-store URL given as a flag may hold a password.
func pprofHandlers(enabled bool) map[string]http.Handler {
	if !enabled {
		return nil
	}
	return map[string]http.Handler{
		// Index also serves the named profiles (heap, goroutine, allocs, block, mutex…).
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}
