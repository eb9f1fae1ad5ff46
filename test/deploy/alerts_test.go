package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ltiop/ltiop/test/utils/testenv"
)

// externalMetrics are the metrics the alerts read that ltiop does not export, with who does.
var externalMetrics = map[string]string{
	"kube_deployment_status_replicas_unavailable": "kube-state-metrics",
}

// ltiopSource is the text of ltiop's non-test Go sources: a metric ltiop exports appears in
// it as a quoted name.
func ltiopSource() (string, error) {
	var source strings.Builder
	for _, dir := range []string{"app", "internal", "webserver", "controllers"} {
		err := filepath.WalkDir(filepath.Join(testenv.Root(), dir), func(path string, _ os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				b, err := os.ReadFile(path) //nolint:gosec // the repository's own sources
				source.Write(b)
				return err
			}
			return err
		})
		if err != nil {
			return "", err
		}
	}
	return source.String(), nil
}

// githubAnchors are the anchors GitHub gives the headings of a Markdown file.
func githubAnchors(md string) map[string]bool {
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	out := map[string]bool{}
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		out[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return out
}

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// ruleGroups renders the chart's PrometheusRule and returns its spec (the rule file
// Prometheus loads) and its rules.
func ruleGroups(t *testing.T, values map[string]any) ([]byte, []alertRule) {
	t.Helper()
	rule := render(t, values).Find("PrometheusRule", "ltiop")
	if rule == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	spec, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(spec, &parsed); err != nil {
		t.Fatal(err)
	}
	var rules []alertRule
	for _, g := range parsed.Groups {
		rules = append(rules, g.Rules...)
	}
	return spec, rules
}

// The PrometheusRule is off by default; on, each alert names only metrics that exist
// (ltiop's, read from its sources, or kube-state-metrics'), has a severity, and links a
// runbook section that docs/troubleshooting.md has.
func TestChartPrometheusRule(t *testing.T) {
	if r := render(t, map[string]any{}).Find("PrometheusRule", "ltiop"); r != nil {
		t.Fatal("a PrometheusRule rendered by default")
	}
	_, rules := ruleGroups(t, map[string]any{"prometheusRule": map[string]any{"enabled": true}})
	if len(rules) < 8 {
		t.Fatalf("%d alerts", len(rules))
	}
	source, err := ltiopSource()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(testenv.Root(), "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := githubAnchors(string(doc))
	metric := regexp.MustCompile(`\b(ltiop|kube)_[a-z_]+\b`)
	const base = "https://github.com/ltiop/ltiop/blob/main/docs/troubleshooting.md#"
	for _, r := range rules {
		names := metric.FindAllString(r.Expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: its expression names no metric: %s", r.Alert, r.Expr)
		}
		for _, n := range names {
			if _, ok := externalMetrics[n]; !ok && !strings.Contains(source, `"`+n+`"`) {
				t.Errorf("%s reads %s, which ltiop does not export", r.Alert, n)
			}
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s has no severity", r.Alert)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], base)
		if !ok || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q is not a section of docs/troubleshooting.md", r.Alert, r.Annotations["runbook_url"])
		}
	}
}

// promtool (Debian's prometheus package; .ci/run installs it) loads the rules and runs
// the unit tests of testdata/alerts/: each alert fires on the series that should fire it
// and not on healthy ones.
func TestChartPrometheusRulePromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not on PATH (Debian package prometheus)")
		}
		t.Skip("no promtool on this machine (install Debian's prometheus package; CI does)")
	}
	spec, _ := ruleGroups(t, map[string]any{"prometheusRule": map[string]any{"enabled": true}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "rules.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil { //nolint:gosec // a file of the test's temporary directory
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "alerts_test.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// The dashboard ConfigMap is off by default; on, it holds config/grafana's dashboard,
// labelled for Grafana's sidecar.
func TestChartGrafanaDashboard(t *testing.T) {
	if cm := render(t, map[string]any{}).Find("ConfigMap", "ltiop-dashboard"); cm != nil {
		t.Fatal("a dashboard ConfigMap rendered by default")
	}
	cm := render(t, map[string]any{"grafanaDashboard": map[string]any{"enabled": true, "annotations": map[string]any{"grafana_folder": "LTI"}}}).
		Find("ConfigMap", "ltiop-dashboard")
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "LTI" {
		t.Errorf("labels %v, annotations %v", cm.GetLabels(), cm.GetAnnotations())
	}
	want, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "grafana", "ltiop-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := nested(t, cm, "data", "ltiop-dashboard.json").(string)
	if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Error("the ConfigMap's dashboard differs from config/grafana/ltiop-dashboard.json (run hack/sync-chart.sh)")
	}
}

// reachabilityProbe.interval becomes LTIOP_REACHABILITY_PROBE_INTERVAL, which ltiop accepts;
// left empty, ltiop's default holds.
func TestChartReachabilityProbeInterval(t *testing.T) {
	env, err := chartEnv(t, map[string]any{"publicUrl": "https://lti.example.com", "reachabilityProbe": map[string]any{"interval": "30m"}})
	if err != nil {
		t.Fatal(err)
	}
	if env["LTIOP_REACHABILITY_PROBE_INTERVAL"] != "30m" {
		t.Errorf("env %v", env)
	}
	env, err = chartEnv(t, map[string]any{"publicUrl": "https://lti.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env["LTIOP_REACHABILITY_PROBE_INTERVAL"]; ok {
		t.Error("the default sets the interval")
	}
	if _, err := chartEnv(t, map[string]any{"publicUrl": "https://lti.example.com", "reachabilityProbe": map[string]any{"interval": "30s"}}); err == nil {
		t.Error("the chart takes an interval ltiop refuses (30s)")
	}
}
