package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

func getStatus(url string) (int, string) {
	res, err := http.Get(url)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var _ = Describe("Readiness", func() {
	It("reports not ready until the registrations and keys are loaded, and shuts down gracefully", func() {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		reg := registry.New()
		srv := webserver.New(webserver.Options{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20, ShutdownTimeout: 5 * time.Second},
			webserver.Handlers{APIKey: httpapi.NewAPIKey("ltiop-api-key", "apiKey"), Keys: toolmode.Keys(reg), KeySet: toolmode.KeySet(reg)},
			webserver.ReadinessCheck{Ready: reg.HasSynced, Waiting: "Registrations are still loading."})
		serverDone := make(chan error, 1)
		go func() { serverDone <- srv.Start(ctx) }()
		addr, err := srv.Addr(ctx)
		Expect(err).NotTo(HaveOccurred())

		status, body := getStatus("http://" + addr + "/readyz")
		Expect(status).To(Equal(503))
		Expect(body).To(ContainSubstring("NOT_READY"))
		status, _ = getStatus("http://" + addr + "/healthz")
		Expect(status).To(Equal(200), "alive while not ready")

		// Attach the registry to informers and start them: the server becomes ready.
		cfg := config.Default()
		cfg.Namespace = namespace
		opts := app.ManagerOptions(&cfg)
		cacheOpts := opts.Cache
		cacheOpts.Scheme = opts.Scheme
		c, err := cache.New(restCfg, cacheOpts)
		Expect(err).NotTo(HaveOccurred())
		Expect(reg.Attach(ctx, c)).To(Succeed())
		Consistently(func() int { s, _ := getStatus("http://" + addr + "/readyz"); return s }, 300*time.Millisecond).Should(Equal(503))
		go func() { _ = c.Start(ctx) }()
		Eventually(func() int { s, _ := getStatus("http://" + addr + "/readyz"); return s }).Should(Equal(200))

		stop()
		Eventually(serverDone).Should(Receive(BeNil()), "graceful shutdown returns no error")
	})
})

var _ = Describe("Readiness report", func() {
	It("names every check of the running app in /readyz?verbose, and /livez answers", func() {
		res := call("GET", "/readyz?verbose", nil, nil)
		Expect(res.Status).To(Equal(200), string(res.Raw))
		var report struct {
			Status string
			Checks []struct {
				Name  string
				Ready bool
			}
		}
		Expect(json.Unmarshal(res.Raw, &report)).To(Succeed())
		Expect(report.Status).To(Equal("ready"))
		var names []string
		for _, c := range report.Checks {
			Expect(c.Ready).To(BeTrue(), c.Name)
			names = append(names, c.Name)
		}
		Expect(names).To(Equal([]string{"registrations", "sealing-keys", "platform-key", "tool-registrations", "api-key", "shutdown"}))
		Expect(call("GET", "/livez", nil, nil).Status).To(Equal(200))
	})
})

var _ = Describe("OpenAPI document", func() {
	It("is OpenAPI 3.1.0 for API version 2.0 exactly (this build in info.x-build) and describes every registered route", func() {
		res := call("GET", "/api/openapi.json", nil, nil)
		Expect(res.Status).To(Equal(200))
		var doc struct {
			OpenAPI string `json:"openapi"`
			Info    struct {
				Version string            `json:"version"`
				Build   map[string]string `json:"x-build"`
			} `json:"info"`
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		Expect(json.Unmarshal(res.Raw, &doc)).To(Succeed())
		Expect(doc.OpenAPI).To(Equal("3.1.0"))
		Expect(doc.Info.Version).To(Equal("2.0"))
		Expect(doc.Info.Build).To(Equal(map[string]string{"version": version.Version, "commit": version.Get().Commit}))

		var missing []string
		for _, rt := range ltiop.Server.Routes() {
			if _, ok := doc.Paths[rt.Path][strings.ToLower(rt.Method)]; !ok {
				missing = append(missing, rt.Method+" "+rt.Path)
			}
		}
		Expect(missing).To(BeEmpty(), "routes missing from the OpenAPI document")

		// And nothing documented that is not served.
		served := map[string]bool{}
		for _, rt := range ltiop.Server.Routes() {
			served[strings.ToLower(rt.Method)+" "+rt.Path] = true
		}
		var extra []string
		for path, ops := range doc.Paths {
			for method := range ops {
				if slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) && !served[method+" "+path] {
					extra = append(extra, method+" "+path)
				}
			}
		}
		Expect(extra).To(BeEmpty(), "documented operations that are not served")
	})
})
