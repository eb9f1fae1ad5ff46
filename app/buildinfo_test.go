package app

import (
	"runtime"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/internal/version"
)

// The metrics endpoint (controller-runtime's registry) carries ltiop_build_info with the
// build's version, commit and Go version, valued 1.
func TestBuildInfoMetric(t *testing.T) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := version.Get()
	for _, f := range families {
		if f.GetName() != "ltiop_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("ltiop_build_info has %d series, want 1", len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != want.Version || labels["commit"] != want.Commit || labels["goversion"] != runtime.Version() {
			t.Errorf("labels = %v, want version %q commit %q goversion %q", labels, want.Version, want.Commit, runtime.Version())
		}
		if v := m.GetGauge().GetValue(); v != 1 {
			t.Errorf("value = %v, want 1", v)
		}
		return
	}
	t.Fatal("ltiop_build_info is not registered")
}
