package outbound

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func count(target, outcome string) float64 {
	return testutil.ToFloat64(requestsTotal.WithLabelValues(target, outcome))
}

// A credential-bearing call (SameHostRedirects) is not sent on to another host, not even
// another port of the same address; the body of a 307 (a client assertion) never leaves.
func TestSameHostRedirectsKeepTheCredentialHome(t *testing.T) {
	var leaked []string
	other := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		leaked = append(leaked, r.Header.Get("Authorization")+string(b))
	})
	first := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		case "/home":
			http.Redirect(w, r, "/done", http.StatusTemporaryRedirect)
		default:
			_, _ = io.WriteString(w, "done")
		}
	})
	p := Policy{AllowHTTP: true, AllowLoopback: true, SameHostRedirects: true, Target: TargetToken}
	c := NewClient(p)
	post := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, first.URL+path, strings.NewReader("client_assertion=secret"))
		req.Header.Set("Authorization", "Bearer secret")
		return c.Do(req)
	}
	before := count(TargetToken, OutcomeRefused)
	if _, err := post("/away"); err == nil {
		t.Fatal("a redirect to another host was followed")
	} else {
		_ = asError(t, err, "redirect to another host refused")
	}
	other.assertUntouched(t, "other host")
	if len(leaked) != 0 {
		t.Errorf("credential sent to another host: %q", leaked)
	}
	if got := count(TargetToken, OutcomeRefused) - before; got != 1 {
		t.Errorf("refused redirects counted %v, want 1", got)
	}

	res, err := post("/home")
	if err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}
	res.Body.Close()

	// Without SameHostRedirects the same redirect is followed (a key set may move).
	p.SameHostRedirects = false
	res, err = NewClient(p).Get(first.URL + "/away")
	if err != nil {
		t.Fatalf("cross-host redirect without SameHostRedirects: %v", err)
	}
	res.Body.Close()
}

// An https URL never leads to http through a redirect, even when http is allowed.
func TestRedirectFromHTTPSToHTTPRefused(t *testing.T) {
	plain := startServer(t, "127.0.0.1", false, hello)
	secure := startServer(t, "127.0.0.1", true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/keys", http.StatusFound)
	})
	c := NewClient(Policy{AllowHTTP: true, AllowLoopback: true})
	pool := x509.NewCertPool()
	pool.AddCert(secure.Certificate())
	c.Transport.(*guard).base.TLSClientConfig.RootCAs = pool
	_, err := get(t, c, secure.URL+"/")
	_ = asError(t, err, "redirect from https to http refused")
	plain.assertUntouched(t, "http server")
}

// A public-looking host whose redirect leads to a metadata address is refused when the
// redirect is dialled, even with the broadest allowed range.
func TestRedirectToMetadataRefusedDespiteBroadRanges(t *testing.T) {
	first := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://metadata.test/latest/meta-data/iam/security-credentials/", http.StatusFound)
	})
	lookup := fakeLookup(map[string][]netip.Addr{
		"lms.test":      {netip.MustParseAddr("127.0.0.1")},
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	})
	all := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
	c := newClient(Policy{AllowHTTP: true, AllowPrefixes: all, Target: TargetJWKS}, lookup)
	before := count(TargetJWKS, OutcomeRefused)
	u, _ := url.Parse(first.URL)
	_, err := get(t, c, "http://lms.test:"+u.Port()+"/jwks")
	_ = asError(t, err, "cloud metadata")
	if got := count(TargetJWKS, OutcomeRefused) - before; got != 1 {
		t.Errorf("refused dials counted %v, want 1", got)
	}
}

// Proxy variables are ignored: a request goes to its host, never to the proxy they name.
func TestProxyEnvironmentIgnored(t *testing.T) {
	proxy := startServer(t, "127.0.0.1", false, hello)
	lms := startServer(t, "127.0.0.2", false, hello)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	// The environment is in effect: a client honouring it would use the proxy for this host.
	lookup := fakeLookup(map[string][]netip.Addr{"lms.test": {netip.MustParseAddr("127.0.0.2")}})
	target := "http://lms.test:" + port(lms) + "/"
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	if u, err := http.ProxyFromEnvironment(req); err != nil || u == nil {
		t.Fatalf("the proxy environment is not in effect (%v, %v): the test would prove nothing", u, err)
	}
	c := newClient(Policy{AllowHTTP: true, AllowLoopback: true}, lookup)
	if _, err := get(t, c, target); err != nil {
		t.Fatal(err)
	}
	proxy.assertUntouched(t, "proxy")
	if n := lms.reqs.Load(); n != 1 {
		t.Errorf("LMS served %d requests, want 1", n)
	}
}

func TestMetricsOutcomes(t *testing.T) {
	s := startServer(t, "127.0.0.1", false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/404":
			http.NotFound(w, r)
		case "/500":
			http.Error(w, "down", http.StatusInternalServerError)
		default:
			hello(w, r)
		}
	})
	c := NewClient(Policy{AllowHTTP: true, AllowLoopback: true, Target: TargetNRPS})
	for path, outcome := range map[string]string{"/": OutcomeSuccess, "/404": OutcomeClientError, "/500": OutcomeServerError} {
		before := count(TargetNRPS, outcome)
		_, _ = get(t, c, s.URL+path)
		if got := count(TargetNRPS, outcome) - before; got != 1 {
			t.Errorf("%s: %s counted %v, want 1", path, outcome, got)
		}
	}
	// The context's target wins over the policy's; unknown names are "other".
	before := count(TargetAGS, OutcomeSuccess)
	req, _ := http.NewRequestWithContext(WithTarget(context.Background(), TargetAGS), http.MethodGet, s.URL, nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := count(TargetAGS, OutcomeSuccess) - before; got != 1 {
		t.Errorf("ags success counted %v, want 1", got)
	}
	if got := targetOf(WithTarget(context.Background(), "x\x00y"), ""); got != TargetOther {
		t.Errorf("unknown target labelled %q", got)
	}
	// A refused URL is counted, nothing sent.
	before = count(TargetNRPS, OutcomeRefused)
	if _, err := NewClient(Policy{Target: TargetNRPS}).Get(s.URL); err == nil {
		t.Error("a loopback URL was not refused")
	}
	if got := count(TargetNRPS, OutcomeRefused) - before; got != 1 {
		t.Errorf("refused counted %v, want 1", got)
	}
}

// The metrics cost of one request: label lookup and counting.
func BenchmarkObserve(b *testing.B) {
	ctx := WithTarget(context.Background(), TargetNRPS)
	res := &http.Response{StatusCode: http.StatusOK}
	b.ReportAllocs()
	for b.Loop() {
		observe(targetOf(ctx, TargetToken), time.Now(), res, nil)
	}
}
