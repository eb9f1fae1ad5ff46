package deploy

import (
	"encoding/json"
	"os"
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
		var source strings.Builder
		for _, dir := range []string{"app", "internal", "webserver", "controllers"} {
			Expect(filepath.WalkDir(filepath.Join(testenv.Root(), dir), func(path string, _ os.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
					source.Write(readFile(path))
				}
				return err
			})).To(Succeed())
		}
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
						Expect(source.String()).To(ContainSubstring(`"`+n+`"`), "panel %q charts %s, which no code exports", p.Title, n)
					}
				}
			}
		}
		Expect(queries).To(BeNumerically(">=", 10))
	})
})
