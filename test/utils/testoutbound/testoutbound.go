// Package testoutbound stages SSRF attacks for tests: an "internal" host on a second
// loopback address, and outbound policies under which the test LMS on 127.0.0.1 is the
// outside world and everything else is inside.
package testoutbound

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/ltiop/ltiop/internal/outbound"
)

// Internal is a host inside the network (127.0.0.2, which Public refuses) that counts the
// requests reaching it and answers with an internal page.
type Internal struct {
	*httptest.Server
	Hits atomic.Int32
}

// InternalBody is what the internal host answers: no response may ever carry it.
const InternalBody = "<html><title>Jenkins</title>internal admin console 10.0.0.7 secret=hunter2</html>"

// NewInternal starts the internal host; the test is skipped where 127.0.0.2 cannot be
// bound.
func NewInternal(tb testing.TB) *Internal {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		tb.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	in := &Internal{}
	in.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.Hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(InternalBody))
	}))
	in.Listener.Close()
	in.Listener = l
	in.Start()
	tb.Cleanup(in.Close)
	return in
}

// Untouched fails the test if anything reached the internal host.
func (in *Internal) Untouched(tb testing.TB) {
	tb.Helper()
	if n := in.Hits.Load(); n != 0 {
		tb.Errorf("the internal host served %d requests, want none", n)
	}
}

// Public is a policy under which 127.0.0.1 (the test LMS) is reachable, as a public
// address would be, and every other loopback address is refused as internal.
func Public() outbound.Policy {
	return outbound.Policy{AllowHTTP: true, AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
}

// Dev is the dev-mode policy: plain http and loopback allowed.
func Dev() outbound.Policy {
	return outbound.Policy{AllowHTTP: true, AllowLoopback: true}
}

// NewRedirector starts a host on 127.0.0.1 (public under Public) that answers every
// request with a 307 to target: a public URL leading inside, or elsewhere.
func NewRedirector(tb testing.TB, target string) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	tb.Cleanup(srv.Close)
	return srv
}
