package toolmode_test

import (
	"net/http"
	"testing"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
)

// BenchmarkLTI11LaunchWithHealth is BenchmarkLTI11Launch with launch health wired as in
// production (a Recorder whose loop is not started: its cost on the launch path alone).
func BenchmarkLTI11LaunchWithHealth(b *testing.B) {
	rg := newRig11(b, func(c *rigConfig) { c.opts.Health = launchhealth.New(launchhealth.Options{}) })
	client := benchClient()
	rg.server.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		form := rg.lms.Launch11(rg.ltiop.URL+paths.Launch, "u", nil)
		b.StartTimer()
		if res := rg.postForm(b, client, paths.Launch, form, true); res.Status != http.StatusSeeOther {
			b.Fatalf("launch: %d %s", res.Status, res.Body)
		}
	}
	b.ReportMetric(float64(rg.server.Load())/float64(b.N)/1e3, "server-µs/op")
}
