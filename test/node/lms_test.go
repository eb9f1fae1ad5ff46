package node_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

// lmsCA is the CA of the simulated LMS's https certificate; the ltiop pods trust it through
// SSL_CERT_FILE, as an on-premises LMS's private CA would be trusted.
type lmsCA struct {
	certPEM []byte
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
}

func newLMSCA() *lmsCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ltiop node test LMS CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return &lmsCA{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key}
}

// serverCert is a certificate for ip signed by the CA.
func (ca *lmsCA) serverCert(ip string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	Expect(err).NotTo(HaveOccurred())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// lmsServer is the simulated LMS, served over https on the node's bridge address, where the
// pods reach it.
type lmsServer struct {
	*lmssim.LMS
	URL string
}

func startLMS(ca *lmsCA, clientID, publicURL string) *lmsServer {
	var sim *lmssim.LMS
	base := serveTLS(ca, func(base string) http.Handler {
		var err error
		sim, err = lmssim.New(base, clientID, "deployment-1")
		Expect(err).NotTo(HaveOccurred())
		sim.ToolLoginURL, sim.ToolRedirectURI = publicURL+"/lti/login", publicURL+"/lti/launch"
		return sim.Handler()
	})
	return &lmsServer{LMS: sim, URL: base}
}

// browser is a user agent with a cookie jar that trusts the LMS's CA. Requests to ltiop's
// public URL go to the Service's cluster IP (kube-proxy's rules on this host), so cookies,
// origins and redirects behave as behind an ingress; it stops at the integrator's page.
type browser struct {
	client *http.Client
	jar    http.CookieJar
	// how it was made, for fresh
	ca                    *lmsCA
	serviceURL, appPrefix string
}

// fresh is a new browser like b, with an empty cookie jar.
func (b *browser) fresh() *browser { return newBrowser(b.ca, b.serviceURL, b.appPrefix) }

func newBrowser(ca *lmsCA, serviceURL, appPrefix string) *browser {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return &browser{jar: jar, ca: ca, serviceURL: serviceURL, appPrefix: appPrefix,
		client: &http.Client{Jar: jar, Transport: publicTransport(ca, serviceURL, false), Timeout: 20 * time.Second,
			CheckRedirect: func(req *http.Request, _ []*http.Request) error {
				if strings.HasPrefix(req.URL.String(), appPrefix) {
					return http.ErrUseLastResponse
				}
				return nil
			}}}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// launchAttempt is what one launch came to.
type launchAttempt struct {
	ltik    string // the ltik of the redirect to the integrator's page; "" if none
	status  int    // ltiop's answer to the form post, or to the login; 0 when no answer
	body    string
	action  string         // where the LMS's auto-submitting form posts (to replay it)
	form    url.Values     // the form
	cookies []*http.Cookie // ltiop's cookies in the browser when it posted the form
}

// launch clicks the LMS's link, lets the LMS answer the authentication request with its
// auto-submitting form, and submits it to ltiop.
func (b *browser) launch(lms *lmsServer, query string) launchAttempt {
	a := b.untilForm(lms, query)
	if a.form == nil {
		return a
	}
	got := b.post(a.action, a.form)
	got.cookies = a.cookies
	return got
}

// untilForm is launch up to the LMS's form, not posted: the form, where it posts, and the
// cookies ltiop set at login (or the answer that ended the launch before).
func (b *browser) untilForm(lms *lmsServer, query string) launchAttempt {
	res, err := b.client.Get(lms.URL + lmssim.StartPath + "?" + query)
	if err != nil {
		return launchAttempt{body: err.Error()}
	}
	page := readAll(res)
	if res.Request.URL.Path != lmssim.AuthPath || res.StatusCode != http.StatusOK {
		return launchAttempt{status: res.StatusCode, body: page}
	}
	action, form, ok := lmssim.ParseAutoSubmit(page)
	if !ok {
		return launchAttempt{status: res.StatusCode, body: "no auto-submitting form: " + page}
	}
	to, err := url.Parse(action)
	if err != nil {
		return launchAttempt{status: res.StatusCode, body: "form action: " + err.Error()}
	}
	// The cookies the browser sends with the form post (they are scoped to ltiop's paths).
	return launchAttempt{action: action, form: form, cookies: b.jar.Cookies(to)}
}

// replay posts a's form again from a new browser holding the cookies a's browser had when
// it posted: the strongest replay, which only the replay store can refuse.
func (b *browser) replay(a launchAttempt) launchAttempt {
	r := b.fresh()
	if to, err := url.Parse(a.action); err == nil {
		r.jar.SetCookies(to, a.cookies)
	}
	return r.post(a.action, a.form)
}

// post submits a form to ltiop.
func (b *browser) post(action string, form url.Values) launchAttempt {
	out := launchAttempt{action: action, form: form}
	res, err := b.client.PostForm(action, form)
	if err != nil {
		out.body = err.Error()
		return out
	}
	out.status, out.body = res.StatusCode, readAll(res)
	if loc, err := url.Parse(res.Header.Get("Location")); err == nil {
		out.ltik = loc.Query().Get("ltik")
	}
	return out
}

// serveTLS serves the handler made for its base URL over https on the node's bridge
// address (the pods reach it there), with a certificate of the CA, until the suite ends,
// and returns the base URL.
func serveTLS(ca *lmsCA, handler func(base string) http.Handler) string {
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	Expect(err).NotTo(HaveOccurred())
	base := "https://" + ln.Addr().String()
	srv := &http.Server{Handler: handler(base), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.serverCert(nodeIP)}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	DeferCleanup(srv.Close)
	return base
}

// publicTransport sends requests for ltiop's public URL to the Service at base (keeping the
// public Host header, as an ingress would) and trusts the CA. Without keep-alives, every
// request opens a new connection, which kube-proxy balances afresh over the ready pods.
func publicTransport(ca *lmsCA, base string, keepAlives bool) http.RoundTripper {
	public, _ := url.Parse(publicURL)
	service, _ := url.Parse(base)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, DisableKeepAlives: !keepAlives}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == public.Host {
			r = r.Clone(r.Context())
			r.URL.Scheme, r.URL.Host = service.Scheme, service.Host
		}
		return tr.RoundTrip(r)
	})
}

// publicClient is a client of publicTransport that follows no redirect.
func publicClient(ca *lmsCA, base string) *http.Client {
	c := testhttp.NoRedirects(nil)
	c.Transport = publicTransport(ca, base, true)
	return c
}
