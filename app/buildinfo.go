package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/internal/version"
)

// buildInfo is the usual build_info gauge: always 1, its labels say which build runs, so
// dashboards can join it to other series and see a rollout happen.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "ltiop_build_info",
	Help: "Always 1; the labels name the running build: version, commit and Go version.",
}, []string{"version", "commit", "goversion"})

func init() {
	metrics.Registry.MustRegister(buildInfo)
	i := version.Get()
	buildInfo.WithLabelValues(i.Version, i.Commit, i.GoVersion).Set(1)
}
