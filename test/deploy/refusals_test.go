package deploy

import (
	"maps"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// chartEnv renders the chart with values and returns the ltiop container's plain
// environment variables: what the binary reads.
func chartEnv(t *testing.T, values map[string]any) (map[string]string, error) {
	t.Helper()
	objs, err := testmanifests.Chart(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace, values)
	if err != nil {
		return nil, err
	}
	deploy := objs.Find("Deployment", "ltiop")
	if deploy == nil {
		t.Fatal("no Deployment rendered")
	}
	env := map[string]string{}
	cs := deploy.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	for _, e := range cs[0].(map[string]any)["env"].([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			env[e["name"].(string)] = v
		}
	}
	return env, nil
}

// The chart refuses, with a message a person reads, each URL value ltiop's configuration
// refuses at start (else the install succeeds and the pod crash-loops), and the binary's
// validation refuses the very same value: it is handed to config.Load through the
// environment variable the chart renders for it.
func TestChartRefusesWhatLtiopRefuses(t *testing.T) {
	const base = "https://lti.example.com"
	// Which environment variable carries each value, learnt from a rendering that passes.
	valid := map[string]any{"publicUrl": base, "launchUrl": base + "/launch", "deepLinkingUrl": base + "/deep",
		"submissionReviewUrl": base + "/review", "noticeWebhookUrl": base + "/notices"}
	env, err := chartEnv(t, valid)
	if err != nil {
		t.Fatalf("the chart refuses valid URLs: %v", err)
	}
	envOf := map[string]string{}
	for key, v := range valid {
		for name, got := range env {
			if got == v {
				envOf[key] = name
			}
		}
		if envOf[key] == "" {
			t.Fatalf("the chart passes %s to no environment variable", key)
		}
	}
	load := func(env map[string]string) error {
		env = maps.Clone(env)
		env["LTIOP_NAMESPACE"] = chartNamespace
		_, err := config.Load(nil, func(name string) string { return env[name] })
		return err
	}
	if err := load(env); err != nil {
		t.Fatalf("ltiop refuses what the chart renders from valid values: %v", err)
	}

	for _, tc := range []struct {
		key, value string
		chartSays  string // in the chart's refusal
		ltiopSays  string // in ltiop's refusal
	}{
		{"publicUrl", "", "publicUrl is required", "publicUrl: required"},
		{"publicUrl", "http://lti.example.com", "must use https", "must use https"},
		{"publicUrl", "lti.example.com", "must be an absolute https URL", "must be an absolute https URL"},
		{"publicUrl", "ftp://lti.example.com", "must be an absolute https URL", "must be an absolute https URL"},
		{"publicUrl", "https://user:pw@lti.example.com", "no user information", "no user information"},
		{"publicUrl", "https://lti.example.com/?tenant=1", "must not carry a query or fragment", "must not carry a query or fragment"},
		{"publicUrl", "https://lti.example.com/#x", "must not carry a query or fragment", "must not carry a query or fragment"},
		{"launchUrl", "notaurl", "launchUrl \"notaurl\" must be an absolute https URL", "launchUrl"},
		{"launchUrl", "http://app.example.com/launch", "must use https", "must use https"},
		{"deepLinkingUrl", "/deep", "must be an absolute https URL", "deepLinkingUrl"},
		{"submissionReviewUrl", "https://", "must have a host", "must have a host"},
		{"noticeWebhookUrl", "http://hooks.example.com", "must use https", "notices.webhookUrl"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			values := maps.Clone(valid)
			values[tc.key] = tc.value
			if _, err := chartEnv(t, values); err == nil || !strings.Contains(err.Error(), tc.chartSays) || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("the chart: %v, want a refusal naming %s and saying %q", err, tc.key, tc.chartSays)
			}
			bad := maps.Clone(env)
			bad[envOf[tc.key]] = tc.value
			if err := load(bad); err == nil || !strings.Contains(err.Error(), tc.ltiopSays) {
				t.Errorf("ltiop: %v, want a refusal saying %q", err, tc.ltiopSays)
			}
		})
	}

	// With config.devMode, both accept http (local clusters).
	dev := maps.Clone(valid)
	dev["publicUrl"] = "http://localhost:3000"
	dev["config"] = map[string]any{"devMode": true}
	devEnv, err := chartEnv(t, dev)
	if err != nil {
		t.Fatalf("the chart refuses http in dev mode: %v", err)
	}
	devEnv["LTIOP_DEV_MODE"] = "true" // what the configuration file says
	if err := load(devEnv); err != nil {
		t.Errorf("ltiop refuses http in dev mode: %v", err)
	}
}
