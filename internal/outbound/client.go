package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxResponseHeaderBytes bounds the response headers (the body is bounded by ReadLimited).
const maxResponseHeaderBytes = 64 << 10

// lookupFunc resolves a host name; net.DefaultResolver.LookupNetIP in production.
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// NewClient returns a client that enforces p on every request it sends, the first and each
// redirect:
//
//   - the URL passes p.Check (scheme, no user information, IP literal allowed), checked
//     again by the transport, so a request built without calling Check is refused too;
//   - every connection goes only to addresses p allows: the dialler resolves the host
//     itself, refuses the connection if any resolved address is blocked, and dials the
//     checked addresses, never the name; the socket's Control hook checks the address
//     actually connected to once more;
//   - a redirect never steps down from https to http and, with SameHostRedirects, stays
//     on the first request's scheme, host and port;
//   - no HTTP proxy, whatever the environment says;
//   - TLS verified against the system roots, TLS 1.2 or later;
//   - at most p.MaxRedirects redirects, the whole exchange (body included) within p.Timeout,
//     response headers at most 64 KiB; User-Agent set when the request has none.
//
// Refusals come back from Do as a *url.Error wrapping an *Error (errors.As finds it).
// The body is not limited: read it with ReadLimited. The client is safe for concurrent use
// and keeps idle connections: make one per Policy and reuse it.
func NewClient(p Policy) *http.Client {
	return newClient(p, net.DefaultResolver.LookupNetIP)
}

func newClient(p Policy, lookup lookupFunc) *http.Client {
	p.AllowPrefixes = slices.Clone(p.AllowPrefixes) // the caller's slice may change later
	timeout := p.timeout()
	d := &dialer{
		policy: p,
		lookup: lookup,
		net: &net.Dialer{
			Timeout:        timeout,
			KeepAlive:      30 * time.Second,
			ControlContext: p.control,
		},
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.dialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{
		Transport:     &guard{policy: p, base: tr},
		CheckRedirect: p.checkRedirect,
		Timeout:       timeout,
	}
}

// checkRedirect runs before each redirect is followed: the limit, no step down from https
// to http, the same host when the policy says so, and the URL check. A refusal is counted.
func (p Policy) checkRedirect(req *http.Request, via []*http.Request) error {
	err := p.redirectAllowed(req.URL, via[0].URL, len(via))
	if err != nil {
		countRefused(targetOf(req.Context(), p.Target))
	}
	return err
}

func (p Policy) redirectAllowed(next, first *url.URL, hops int) error {
	fail := func(reason string) error { return &Error{URL: RedactURL(next.String()), Reason: reason} }
	if maxHops := p.maxRedirects(); hops > maxHops {
		return fail("too many redirects (more than " + strconv.Itoa(maxHops) + ")")
	}
	if err := p.Check(next.String()); err != nil {
		return err
	}
	if first.Scheme == "https" && next.Scheme != "https" {
		return fail("redirect from https to " + next.Scheme + " refused")
	}
	if p.SameHostRedirects && !SameOrigin(first, next) {
		return fail("redirect to another host refused (the request carries a credential)")
	}
	return nil
}

// SameOrigin reports whether a and b have the same scheme, host (case aside) and port
// (default ports made explicit): where a credential for a may go.
func SameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// guard checks each request's URL before handing it to the transport, and names the URL
// in the dialler's refusals.
type guard struct {
	policy Policy
	base   *http.Transport
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	target := targetOf(req.Context(), g.policy.Target)
	if err := g.policy.Check(req.URL.String()); err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper always closes the body
		}
		countRefused(target)
		return nil, err
	}
	if req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context()) // a RoundTripper must not modify its request
		req.Header.Set("User-Agent", g.policy.userAgent())
	}
	start := time.Now()
	resp, err := g.base.RoundTrip(req)
	observe(target, start, resp, err)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.URL == "" {
			return nil, &Error{URL: RedactURL(req.URL.String()), Reason: e.Reason}
		}
	}
	return resp, err
}

// CloseIdleConnections lets (*http.Client).CloseIdleConnections reach the transport.
func (g *guard) CloseIdleConnections() { g.base.CloseIdleConnections() }

type dialer struct {
	policy Policy
	lookup lookupFunc
	net    *net.Dialer
}

// dialContext resolves the host, refuses it if any of its addresses is blocked (a name
// that also points inside is not trusted with its other addresses), then dials the checked
// addresses in turn.
func (d *dialer) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Error{Reason: "invalid address " + strconv.Quote(addr)}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, &Error{Reason: "invalid port " + strconv.Quote(portStr)}
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		if ips, err = d.lookup(ctx, "ip", host); err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &Error{Reason: "host " + host + " has no address"}
		}
	}
	for _, ip := range ips {
		if why := d.policy.Blocked(ip); why != "" {
			return nil, &Error{Reason: blockedReason(ip, host, why)}
		}
	}
	var first error
	for _, ip := range ips {
		target := netip.AddrPortFrom(ip.Unmap(), uint16(port)).String()
		conn, err := d.net.DialContext(ctx, network, target)
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// control runs on the socket just before it connects: the last check, on the address the
// kernel is asked to connect to.
func (p Policy) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &Error{Reason: "cannot check dialled address " + strconv.Quote(address)}
	}
	if why := p.Blocked(ap.Addr()); why != "" {
		return &Error{Reason: blockedReason(ap.Addr(), "", why)}
	}
	return nil
}
