package e2e

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/internal/config"
)

// The profiler (setting pprof) is for operators on the metrics port: never on the public
// web port, and off unless asked for.
var _ = Describe("pprof", func() {
	status := func(url string) func() int {
		return func() int {
			res, err := http.Get(url)
			if err != nil {
				return 0
			}
			res.Body.Close()
			return res.StatusCode
		}
	}
	withMetrics := func(pprof bool) (*devInstance, string) {
		port := freePort()
		d := startDevInstance(fmt.Sprintf("pprof-%t", pprof), func(c *config.Config) {
			c.MetricsListen, c.Pprof = fmt.Sprintf("127.0.0.1:%d", port), pprof
		})
		metrics := fmt.Sprintf("http://127.0.0.1:%d", port)
		Eventually(status(metrics + "/metrics")).Should(Equal(200))
		return d, metrics
	}

	It("serves profiles on the metrics port only, when enabled", func() {
		d, metrics := withMetrics(true)
		Expect(status(metrics + "/debug/pprof/")()).To(Equal(200))
		Expect(status(metrics + "/debug/pprof/heap")()).To(Equal(200))
		Expect(status(metrics + "/debug/pprof/profile?seconds=1")()).To(Equal(200))
		Expect(status(metrics+"/debug/pprof/cmdline")()).To(Equal(404), "a flag may hold the replay store's password")

		// The attack: an outsider asks the public port for a profile.
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline"} {
			res := callAt(d.Local, "GET", path, nil, nil)
			Expect(res.Status).To(Equal(404), path)
			Expect(res.errorCode()).To(Equal("NOT_FOUND"), path)
		}
	})

	It("is off by default", func() {
		Expect(config.Default().Pprof).To(BeFalse())
		d, metrics := withMetrics(false)
		Expect(status(metrics + "/debug/pprof/")()).To(Equal(404))
		Expect(status(metrics + "/debug/pprof/heap")()).To(Equal(404))
		Expect(callAt(d.Local, "GET", "/debug/pprof/", nil, nil).Status).To(Equal(404))
	})
})
