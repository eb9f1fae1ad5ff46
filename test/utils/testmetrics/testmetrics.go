// Package testmetrics reads ltiop's metrics from controller-runtime's registry, where every
// package registers them, so that tests can see a counter move.
package testmetrics

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Value is the sum of the counters and gauges named name whose labels include every pair
// of labels (0 when none exists yet).
func Value(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
