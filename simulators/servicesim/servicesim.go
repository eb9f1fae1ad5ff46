// Package servicesim plays a Kubernetes Service in front of ltiop replicas, for the demo and
// the multi-replica tests: one address, requests spread over the replicas in turn.
package servicesim

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

// RoundRobin sends each request to the next backend in turn, with its Host header kept, so
// every replica sees the public host it was configured with.
type RoundRobin struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64
	// Last is the index of the backend the last request went to.
	Last atomic.Int64
}

// NewRoundRobin proxies to backends (base URLs such as http://127.0.0.1:3011).
func NewRoundRobin(backends ...string) (*RoundRobin, error) {
	rr := &RoundRobin{}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return nil, err
		}
		p := httputil.NewSingleHostReverseProxy(u)
		// Director, deprecated for Rewrite, on purpose: it keeps the client's X-Forwarded-For
		// and appends to it, as the load balancer simulated here does; Rewrite drops it.
		director := p.Director               //nolint:staticcheck // SA1019: see above
		p.Director = func(r *http.Request) { //nolint:staticcheck // SA1019: see above
			host := r.Host
			director(r)
			r.Host = host // the public host, not the backend's
		}
		rr.proxies = append(rr.proxies, p)
	}
	return rr, nil
}

// ServeHTTP sends r to the next backend.
func (rr *RoundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := (rr.next.Add(1) - 1) % uint64(len(rr.proxies))
	rr.Last.Store(int64(i)) //nolint:gosec // G115: i < len(rr.proxies)
	rr.proxies[i].ServeHTTP(w, r)
}
