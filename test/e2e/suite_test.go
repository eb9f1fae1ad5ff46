package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/test/utils/testenv"
)

const (
	namespace = "ltiop-e2e"
	apiKey    = "test-api-key-0123456789-abcdefghijklmn"
	publicURL = "https://lti.test.example"
)

var (
	env     *testenv.Env
	restCfg *rest.Config
	k8s     client.Client // straight to the API server, no cache
	ltiop   *app.App
	baseURL string
)

func TestWebServer(t *testing.T) { testenv.RunSpecs(t, "Whole-app Suite") }

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start(app.Scheme(), namespace)
	Expect(err).NotTo(HaveOccurred())
	restCfg, k8s = env.Config, env.Client
	ctx := env.Context()
	Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ltiop-api-key"},
		StringData: map[string]string{"apiKey": apiKey},
	})).To(Succeed())

	cfg := config.Default()
	cfg.ShutdownDelay.Duration = 0 // no load balancer to drain
	cfg.Namespace, cfg.PublicURL = namespace, publicURL
	cfg.Listen, cfg.MetricsListen = "127.0.0.1:0", "0"
	cfg.MaxBodyBytes = 64 << 10
	cfg.KeyWait.Duration = 15 * time.Second
	cfg.LaunchURL, cfg.DeepLinkingURL = launchURL, deepLinkingURL
	cfg.SubmissionReviewURL = submissionReviewURL
	cfg.MessageLaunchURLs = map[string]string{"LtiEulaRequest": eulaLaunchURL}
	cfg.AssetProcessor.MaxAssetBytes = maxAssetBytes
	// The simulated LMSs and tools listen on loopback: the outbound guard must let ltiop
	// reach them (in production it refuses loopback).
	cfg.OutboundAllowLoopback = true
	// The periodic probe would write to every test's registrations; its tests probe by hand.
	cfg.ReachabilityProbeInterval.Duration = 0
	Expect(cfg.Validate()).To(Succeed())

	ltiop, err = app.New(ctx, &cfg, restCfg)
	Expect(err).NotTo(HaveOccurred())
	env.Run(ltiop.Start)
	listening, cancel := context.WithTimeout(ctx, time.Minute) // not forever when Start fails
	defer cancel()
	addr, err := ltiop.Server.Addr(listening)
	Expect(err).NotTo(HaveOccurred())
	baseURL = "http://" + addr
	Eventually(func() int { return call("GET", "/readyz", nil, nil).Status }).Should(Equal(200))
})

var _ = AfterSuite(func() { Expect(env.Stop()).To(Succeed()) })

// response is what a test needs of an HTTP answer.
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	JSON   map[string]any
}

// errorCode is details.message of an error envelope.
func (r response) errorCode() string {
	d, _ := r.JSON["details"].(map[string]any)
	s, _ := d["message"].(string)
	return s
}

func (r response) errorDescription() string {
	d, _ := r.JSON["details"].(map[string]any)
	s, _ := d["description"].(string)
	return s
}

var bearer = map[string]string{"Authorization": "Bearer " + apiKey}

// call makes a real HTTP request over loopback. body may be nil, a string (sent as is)
// or a value (sent as JSON).
func call(method, path string, body any, headers map[string]string) response {
	return callAt(baseURL, method, path, body, headers)
}

// callAt is call against another ltiop instance.
func callAt(base, method, path string, body any, headers map[string]string) response {
	var rd io.Reader
	contentType := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, contentType = bytes.NewBufferString(b), "application/json"
	default:
		raw, err := json.Marshal(b)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		rd, contentType = bytes.NewReader(raw), "application/json"
	}
	req, err := http.NewRequest(method, base+path, rd)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		ExpectWithOffset(1, json.Unmarshal(raw, &out.JSON)).To(Succeed(), string(raw))
	}
	return out
}
