package outbound

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/version"
)

// server is an httptest server bound to a chosen loopback address that counts the
// connections it accepts and the requests it serves.
type server struct {
	*httptest.Server
	conns, reqs atomic.Int32
}

func startServer(t *testing.T, ip string, tls bool, h http.HandlerFunc) *server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reqs.Add(1)
		h(w, r)
	}))
	s.Listener.Close()
	s.Listener = l
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) assertUntouched(t *testing.T, name string) {
	t.Helper()
	if n := s.conns.Load(); n != 0 {
		t.Errorf("%s accepted %d connections, want none", name, n)
	}
	if n := s.reqs.Load(); n != 0 {
		t.Errorf("%s served %d requests, want none", name, n)
	}
}

func hello(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello "+r.UserAgent()) }

func port(s *server) string {
	u, _ := url.Parse(s.URL)
	return u.Port()
}

// asError asserts err carries an *Error whose reason contains want.
func asError(t *testing.T, err error, want string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) does not carry an *Error", err, err)
	}
	if !strings.Contains(e.Reason, want) {
		t.Errorf("reason %q, want it to contain %q", e.Reason, want)
	}
	return e
}

// fakeLookup resolves the names in m, and nothing else.
func fakeLookup(m map[string][]netip.Addr) lookupFunc {
	return func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if ips, ok := m[host]; ok {
			return ips, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
}

func get(t *testing.T, c *http.Client, u string) (string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := ReadLimited(resp.Body, 1<<20)
	return string(b), err
}

func TestLoopbackRefused(t *testing.T) {
	s := startServer(t, "127.0.0.1", false, hello)
	p := Policy{AllowHTTP: true}
	c := NewClient(p)

	_, err := get(t, c, s.URL+"/cfg?registration_token=s3cret")
	e := asError(t, err, "blocked address 127.0.0.1 (loopback)")
	if strings.Contains(e.Error(), "s3cret") || strings.Contains(Redact(err).Error(), "s3cret") {
		t.Errorf("error leaks the query: %v", Redact(err))
	}
	if !strings.Contains(e.URL, "/cfg") {
		t.Errorf("Error.URL = %q", e.URL)
	}

	// The dialler and the socket hook refuse on their own, without the URL check.
	d := &dialer{policy: p, lookup: fakeLookup(nil), net: &net.Dialer{ControlContext: p.control}}
	if _, err := d.dialContext(context.Background(), "tcp", "127.0.0.1:"+port(s)); err == nil {
		t.Error("dialContext reached 127.0.0.1")
	} else {
		_ = asError(t, err, "loopback")
	}
	if _, err := (&net.Dialer{ControlContext: p.control}).Dial("tcp", "127.0.0.1:"+port(s)); err == nil {
		t.Error("control hook let 127.0.0.1 through")
	} else {
		_ = asError(t, err, "loopback")
	}
	s.assertUntouched(t, "server")
}

func TestLoopbackAllowed(t *testing.T) {
	s := startServer(t, "127.0.0.1", false, hello)
	c := NewClient(Policy{AllowHTTP: true, AllowLoopback: true})
	body, err := get(t, c, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello " + version.UserAgent(); body != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if n := s.reqs.Load(); n != 1 {
		t.Errorf("server served %d requests, want 1", n)
	}

	// A request's own User-Agent is kept; the policy's replaces the default.
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	req.Header.Set("User-Agent", "caller/1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ReadLimited(resp.Body, 100)
	resp.Body.Close()
	if string(b) != "hello caller/1" {
		t.Errorf("body %q", b)
	}
	c = NewClient(Policy{AllowHTTP: true, AllowLoopback: true, UserAgent: "custom/2"})
	if body, _ := get(t, c, s.URL); body != "hello custom/2" {
		t.Errorf("body %q", body)
	}
}

func TestRedirectToBlockedAddress(t *testing.T) {
	second := startServer(t, "127.0.0.2", false, hello)
	allowFirst := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

	t.Run("IP literal", func(t *testing.T) {
		first := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, second.URL+"/next?token=s3cret", http.StatusFound)
		})
		c := NewClient(Policy{AllowHTTP: true, AllowPrefixes: allowFirst})
		_, err := get(t, c, first.URL)
		e := asError(t, err, "blocked address 127.0.0.2 (loopback)")
		if strings.Contains(e.Error(), "s3cret") {
			t.Errorf("error leaks the query: %v", e)
		}
		if n := first.reqs.Load(); n != 1 {
			t.Errorf("first server served %d requests, want 1", n)
		}
	})

	t.Run("host name resolved at dial time", func(t *testing.T) {
		// The redirect names a host; only the dialler, after resolution, can refuse it.
		first := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://lms-b.test:"+port(second)+"/next", http.StatusFound)
		})
		lookup := fakeLookup(map[string][]netip.Addr{
			"lms-a.test": {netip.MustParseAddr("127.0.0.1")},
			"lms-b.test": {netip.MustParseAddr("127.0.0.2")},
		})
		c := newClient(Policy{AllowHTTP: true, AllowPrefixes: allowFirst}, lookup)
		_, err := get(t, c, "http://lms-a.test:"+port(first)+"/")
		e := asError(t, err, "blocked address 127.0.0.2 (loopback) for host lms-b.test")
		if !strings.HasPrefix(e.URL, "http://lms-b.test:") {
			t.Errorf("Error.URL = %q, want the redirect target", e.URL)
		}
		if n := first.reqs.Load(); n != 1 {
			t.Errorf("first server served %d requests, want 1", n)
		}

		// Allowing the second address lets the same redirect through.
		both := append([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, allowFirst...)
		c = newClient(Policy{AllowHTTP: true, AllowPrefixes: both}, lookup)
		if _, err := get(t, c, "http://lms-a.test:"+port(first)+"/"); err != nil {
			t.Fatalf("redirect to an allowed address: %v", err)
		}
		if n := second.reqs.Load(); n != 1 {
			t.Errorf("second server served %d requests, want 1", n)
		}
		second.reqs.Store(0)
		second.conns.Store(0)
	})

	second.assertUntouched(t, "second server")
}

func TestHTTPSOnly(t *testing.T) {
	plain := startServer(t, "127.0.0.1", false, hello)
	secure := startServer(t, "127.0.0.1", true, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			http.Redirect(w, r, plain.URL+"/cfg", http.StatusFound)
			return
		}
		hello(w, r)
	})
	p := Policy{AllowLoopback: true}
	c := NewClient(p)
	pool := x509.NewCertPool()
	pool.AddCert(secure.Certificate())
	c.Transport.(*guard).base.TLSClientConfig.RootCAs = pool

	if body, err := get(t, c, secure.URL+"/"); err != nil || !strings.HasPrefix(body, "hello ") {
		t.Fatalf("https fetch: %q, %v", body, err)
	}

	if err := p.Check(plain.URL); err == nil {
		t.Error("Check accepted http")
	} else {
		_ = asError(t, err, "https required")
	}
	_, err := get(t, c, plain.URL)
	_ = asError(t, err, "https required")

	_, err = get(t, c, secure.URL+"/down")
	_ = asError(t, err, "https required")
	plain.assertUntouched(t, "http server")

	// Certificates are verified: without the test CA the server is refused.
	_, err = get(t, NewClient(p), secure.URL+"/")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("untrusted certificate: got %v, want x509.UnknownAuthorityError", err)
	}
}

func TestTooManyRedirects(t *testing.T) {
	s := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		http.Redirect(w, r, fmt.Sprintf("/%d?token=s3cret", n+1), http.StatusFound)
	})
	for _, tt := range []struct {
		max, wantReqs int
		reason        string
	}{
		{0, 1 + DefaultMaxRedirects, "more than 3"},
		{2, 3, "more than 2"},
		{-1, 1, "more than 0"},
	} {
		s.reqs.Store(0)
		c := NewClient(Policy{AllowHTTP: true, AllowLoopback: true, MaxRedirects: tt.max})
		_, err := get(t, c, s.URL+"/0")
		e := asError(t, err, "too many redirects ("+tt.reason+")")
		if strings.Contains(e.Error(), "s3cret") {
			t.Errorf("error leaks the query: %v", e)
		}
		if n := int(s.reqs.Load()); n != tt.wantReqs {
			t.Errorf("MaxRedirects %d: server served %d requests, want %d", tt.max, n, tt.wantReqs)
		}
	}

	// Within the limit, redirects are followed.
	s2 := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/3" {
			_, _ = io.WriteString(w, "done")
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		http.Redirect(w, r, fmt.Sprintf("/%d", n+1), http.StatusFound)
	})
	if body, err := get(t, NewClient(Policy{AllowHTTP: true, AllowLoopback: true}), s2.URL+"/0"); err != nil || body != "done" {
		t.Errorf("3 redirects: %q, %v", body, err)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	s := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			_, _ = io.WriteString(w, "start")
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release) // before s.Close (registered with t.Cleanup), which waits for handlers
	c := NewClient(Policy{AllowHTTP: true, AllowLoopback: true, Timeout: 200 * time.Millisecond})

	for _, path := range []string{"/slow-headers", "/slow-body"} {
		start := time.Now()
		_, err := get(t, c, s.URL+path)
		elapsed := time.Since(start)
		if err == nil {
			t.Fatalf("%s: no error", path)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%s: error %v is not a timeout", path, err)
		}
		if elapsed > 3*time.Second {
			t.Errorf("%s: took %v with a 200ms timeout", path, elapsed)
		}
	}
}

func TestDNS(t *testing.T) {
	s := startServer(t, "127.0.0.1", false, hello)
	u := "http://localhost:" + port(s) + "/"

	_, err := get(t, NewClient(Policy{AllowHTTP: true}), u)
	_ = asError(t, err, "for host localhost")
	s.assertUntouched(t, "server")

	if _, err := get(t, NewClient(Policy{AllowHTTP: true, AllowLoopback: true}), u); err != nil {
		t.Fatalf("localhost with AllowLoopback: %v", err)
	}
	if n := s.reqs.Load(); n != 1 {
		t.Errorf("server served %d requests, want 1", n)
	}

	lookup := fakeLookup(map[string][]netip.Addr{
		// One inside address spoils the name, whatever the others are.
		"mixed.test":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.1")},
		"mapped.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
		"empty.test":    {},
	})
	c := newClient(Policy{AllowHTTP: true}, lookup)
	for host, want := range map[string]string{
		"mixed.test":    "blocked address 10.0.0.1 (private) for host mixed.test",
		"mapped.test":   "(loopback) for host mapped.test",
		"metadata.test": "cloud metadata",
		"empty.test":    "has no address",
	} {
		_, err := get(t, c, "http://"+host+"/")
		_ = asError(t, err, want)
	}
	_, err = get(t, c, "http://unknown.test/")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("unknown host: got %v, want *net.DNSError", err)
	}
}

func TestClientSetup(t *testing.T) {
	c := NewClient(Policy{})
	if c.Timeout != DefaultTimeout {
		t.Errorf("Timeout = %v", c.Timeout)
	}
	tr := c.Transport.(*guard).base
	if tr.Proxy != nil {
		t.Error("transport uses a proxy")
	}
	if tr.TLSClientConfig.InsecureSkipVerify {
		t.Error("TLS not verified")
	}

	// The policy is copied: changing the caller's slice later changes nothing.
	prefixes := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	c = NewClient(Policy{AllowPrefixes: prefixes})
	prefixes[0] = netip.MustParsePrefix("127.0.0.0/8")
	if why := c.Transport.(*guard).policy.Blocked(netip.MustParseAddr("127.0.0.1")); why == "" {
		t.Error("client policy follows the caller's slice")
	}
}
