package toolmode_test

import (
	"testing"

	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
)

// BenchmarkLTI11LaunchWithHealth is BenchmarkLTI11Launch with launch health wired as in
// production (a Recorder whose loop is not started: its cost on the launch path alone).
func BenchmarkLTI11LaunchWithHealth(b *testing.B) {
	benchmarkLTI11Launch(b, newRig11(b, func(c *rigConfig) { c.opts.Health = launchhealth.New(launchhealth.Options{}) }))
}
