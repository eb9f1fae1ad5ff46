package e2e

import (
	"bytes"
	"context"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// findChromium returns the headless browser, or "" when the machine has none.
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// coursePage is the LMS page that shows the tool in an iframe and answers the LTI
// platform-storage postMessages (lti.put_data / lti.get_data) from the tool's origin.
var coursePage = template.Must(template.New("course").Parse(`<!doctype html>
<html><body>
<h1>Course</h1>
<iframe name="tool" src="/start?storage_target=_parent&amp;user=browser-user" width="800" height="600"></iframe>
<script>
var store = {};
var toolOrigin = {{.ToolOrigin}};
window.addEventListener("message", function (e) {
  if (e.origin !== toolOrigin) { return; }
  var d = e.data || {};
  if (d.subject === "lti.put_data") {
    store[d.key] = d.value;
    fetch("/seen?subject=put_data");
    e.source.postMessage({subject: "lti.put_data.response", message_id: d.message_id, key: d.key, value: d.value}, e.origin);
  } else if (d.subject === "lti.get_data") {
    fetch("/seen?subject=get_data");
    // T-PS-03: an answer for another message id must be ignored by the tool page; were
    // it taken, the launch would fail with a wrong binding value.
    e.source.postMessage({subject: "lti.get_data.response", message_id: "not-" + d.message_id, key: d.key, value: "forged"}, e.origin);
    e.source.postMessage({subject: "lti.get_data.response", message_id: d.message_id, key: d.key,
      value: Object.prototype.hasOwnProperty.call(store, d.key) ? store[d.key] : null}, e.origin);
  }
});
</script>
</body></html>`))

var _ = Describe("Platform storage in a real browser", Ordered, func() {
	It("completes a launch inside a cross-site iframe without cookies (T-PS-01, T-PS-02, T-PS-03)", func() {
		chromium := findChromium()
		if chromium == "" {
			if os.Getenv("LTIOP_REQUIRE_BROWSER") != "" {
				Fail("LTIOP_REQUIRE_BROWSER is set but no chromium is installed")
			}
			Skip("no chromium on this machine (install Debian's chromium package; CI does)")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		// The LMS lives on 127.0.0.1, ltiop on localhost: two sites, so the tool is a
		// third party in the LMS page and its (Lax, dev-mode) cookie is not sent.
		lmsSrv := httptest.NewServer(nil)
		DeferCleanup(lmsSrv.Close)
		toolOrigin := "" // known once the instance is started, below
		lms, err := lmssim.New(lmsSrv.URL, "browser-client", "browser-deployment")
		Expect(err).NotTo(HaveOccurred())

		var mu sync.Mutex
		seen := map[string]bool{}
		ltiks := make(chan string, 1)

		mux := http.NewServeMux()
		mux.Handle("/", lms.Handler())
		mux.HandleFunc("GET /course", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = coursePage.Execute(w, map[string]string{"ToolOrigin": toolOrigin})
		})
		mux.HandleFunc("GET /seen", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Query().Get("subject")] = true
			mu.Unlock()
		})
		mux.HandleFunc("GET /app/launch", func(w http.ResponseWriter, r *http.Request) {
			select {
			case ltiks <- r.URL.Query().Get("ltik"):
			default:
			}

			_, _ = w.Write([]byte("launched"))
		})
		lmsSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			GinkgoWriter.Printf("LMS: %s %s\n", r.Method, r.URL.Path)
			mux.ServeHTTP(w, r)
		})

		// A second ltiop, in dev mode, in its own namespace.
		second := startDevInstance("ltiop-browser", func(c *config.Config) { c.LaunchURL = lmsSrv.URL + "/app/launch" })
		ns := second.Namespace
		toolOrigin = second.URL
		lms.ToolLoginURL, lms.ToolRedirectURI = toolOrigin+"/lti/login", toolOrigin+"/lti/launch"

		Expect(k8s.Create(ctx, &ltiv1.PlatformRegistration{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "browser-lms"},
			Spec: ltiv1.PlatformRegistrationSpec{
				URL: ltiv1.EndpointURL(lms.Issuer), ClientID: lms.ClientID, Name: "Browser LMS",
				AuthenticationEndpoint: ltiv1.EndpointURL(lms.Issuer + lmssim.AuthPath),
				AccesstokenEndpoint:    ltiv1.EndpointURL(lms.Issuer + lmssim.TokenPath),
				AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms.Issuer + lmssim.JWKSPath},
			},
		})).To(Succeed())
		Eventually(func() bool {
			p := second.Registry.Get("browser-lms")
			return p != nil && p.Ready && p.Key != nil
		}).Should(BeTrue())

		// Third-party cookies blocked too, as Safari and Chrome's tracking protection do.
		profile := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(profile, "Default"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(profile, "Default", "Preferences"),
			[]byte(`{"profile":{"block_third_party_cookies":true,"cookie_controls_mode":1}}`), 0o644)).To(Succeed())
		// The browser runs in real time (remote debugging keeps headless Chromium open)
		// until the integrator's page is reached; then it is stopped.
		var output lockedBuffer
		cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir="+profile, "--enable-logging=stderr", "--v=0", "--remote-debugging-port=0", lmsSrv.URL+"/course")
		cmd.Stdout, cmd.Stderr = &output, &output
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

		var ltik string
		Eventually(ltiks, 60*time.Second).Should(Receive(&ltik), func() string {
			return "the integrator's page was not reached; browser output:\n" + output.String()
		})
		mu.Lock()
		Expect(seen).To(HaveKey("put_data"), "the login stored the state in the platform")
		Expect(seen).To(HaveKey("get_data"), "the launch read it back before handing over")
		mu.Unlock()

		req, _ := http.NewRequest("GET", second.Local+"/api/idtoken", nil)
		req.Header.Set("Authorization", "LTIK-AUTH-V2 "+apiKey+":"+ltik)
		res, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(readBody(res)).To(ContainSubstring(`"id":"browser-user"`))
	})
})

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a child process's output safely.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
