package deploy

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/test/utils/testenv"
)

// pendingMetrics are charted before their code lands (branch outbound); they may be
// missing from the source until then.
var pendingMetrics = map[string]bool{
	"ltiop_outbound_requests_total":           true,
	"ltiop_outbound_request_duration_seconds": true,
}

var _ = Describe("The Grafana dashboard", func() {
	It("is valid JSON whose queries name only metrics ltiop exports", func() {
		raw := readFile(filepath.Join(testenv.Root(), "config", "grafana", "ltiop-dashboard.json"))
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		Expect(json.Unmarshal(raw, &dash)).To(Succeed())
		source, err := ltiopSource()
		Expect(err).NotTo(HaveOccurred())
		metric := regexp.MustCompile(`ltiop_[a-z_]+`)
		queries := 0
		for _, p := range dash.Panels {
			for _, t := range p.Targets {
				queries++
				names := metric.FindAllString(t.Expr, -1)
				Expect(names).NotTo(BeEmpty(), "panel %q: %s", p.Title, t.Expr)
				for _, n := range names {
					n = strings.TrimSuffix(n, "_bucket")
					if !pendingMetrics[n] {
						Expect(source).To(ContainSubstring(`"`+n+`"`), "panel %q charts %s, which no code exports", p.Title, n)
					}
				}
			}
		}
		Expect(queries).To(BeNumerically(">=", 10))
	})
})
