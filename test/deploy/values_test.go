package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

func render(t *testing.T, values map[string]any) testmanifests.Objects {
	t.Helper()
	if _, ok := values["publicUrl"]; !ok {
		values["publicUrl"] = "https://lti.example.com"
	}
	objs, err := testmanifests.Chart(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func nested(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	if u == nil {
		t.Fatalf("no object to read %v from", path)
	}
	v, _, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func podSpec(t *testing.T, objs testmanifests.Objects) map[string]any {
	t.Helper()
	return nested(t, objs.Find("Deployment", "ltiop"), "spec", "template", "spec").(map[string]any)
}

func ltiopContainer(t *testing.T, objs testmanifests.Objects) map[string]any {
	t.Helper()
	return podSpec(t, objs)["containers"].([]any)[0].(map[string]any)
}

// The security contexts, ServiceAccount, priority class, extra flags, volumes and mounts
// are the user's to set.
func TestChartOverridableValues(t *testing.T) {
	// Helm merges a map value into the default: null removes a key (OpenShift's
	// restricted-v2 assigns the UID from the project's range).
	openshift := map[string]any{"runAsUser": nil, "runAsGroup": nil}
	objs := render(t, map[string]any{
		"podSecurityContext": openshift,
		"securityContext":    map[string]any{"readOnlyRootFilesystem": nil},
		"serviceAccount":     map[string]any{"create": true, "name": "lti-sa", "annotations": map[string]any{"iam.gke.io/gcp-service-account": "lti@p.iam.gserviceaccount.com"}},
		"priorityClassName":  "business-critical",
		"extraArgs":          []any{"--key-workers=8"},
		"extraVolumes":       []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "corp-ca"}}},
		"extraVolumeMounts":  []any{map[string]any{"name": "ca", "mountPath": "/etc/ssl/corp", "readOnly": true}},
	})
	spec := podSpec(t, objs)
	if sc := spec["securityContext"].(map[string]any); sc["runAsUser"] != nil || sc["runAsGroup"] != nil || sc["runAsNonRoot"] != true {
		t.Errorf("pod securityContext = %v, want the OpenShift one (no runAsUser)", sc)
	}
	if spec["serviceAccountName"] != "lti-sa" || spec["priorityClassName"] != "business-critical" {
		t.Errorf("serviceAccountName %v, priorityClassName %v", spec["serviceAccountName"], spec["priorityClassName"])
	}
	sa := objs.Find("ServiceAccount", "lti-sa")
	if sa == nil || sa.GetAnnotations()["iam.gke.io/gcp-service-account"] == "" {
		t.Errorf("ServiceAccount lti-sa with its annotation: %v", sa)
	}
	for _, b := range append(objs.OfKind("RoleBinding"), objs.OfKind("ClusterRoleBinding")...) {
		for _, s := range nested(t, b, "subjects").([]any) {
			if s := s.(map[string]any); s["kind"] == "ServiceAccount" && s["name"] != "lti-sa" {
				t.Errorf("%s %s binds ServiceAccount %v", b.GetKind(), b.GetName(), s["name"])
			}
		}
	}
	c := ltiopContainer(t, objs)
	if sc := c["securityContext"].(map[string]any); sc["readOnlyRootFilesystem"] != nil || sc["allowPrivilegeEscalation"] != false {
		t.Errorf("container securityContext = %v, want the one given", c["securityContext"])
	}
	if args := c["args"].([]any); len(args) != 1 || args[0] != "--key-workers=8" {
		t.Errorf("args = %v", args)
	}
	if m := c["volumeMounts"].([]any); len(m) != 1 || m[0].(map[string]any)["mountPath"] != "/etc/ssl/corp" {
		t.Errorf("volumeMounts = %v", m)
	}
	if v := spec["volumes"].([]any); len(v) != 1 || v[0].(map[string]any)["name"] != "ca" {
		t.Errorf("volumes = %v", v)
	}

	// Someone else's ServiceAccount: none is made, every binding names it.
	objs = render(t, map[string]any{"serviceAccount": map[string]any{"create": false, "name": "theirs"}})
	if sas := objs.OfKind("ServiceAccount"); len(sas) != 0 {
		t.Errorf("ServiceAccounts made: %d", len(sas))
	}
	if podSpec(t, objs)["serviceAccountName"] != "theirs" {
		t.Error("the pods do not run as serviceAccount.name")
	}
	if _, err := testmanifests.Chart(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace,
		map[string]any{"publicUrl": "https://lti.example.com", "serviceAccount": map[string]any{"create": false}}); err == nil ||
		!strings.Contains(err.Error(), "serviceAccount.name is required") {
		t.Errorf("create false without a name: %v", err)
	}
}

// The config value becomes the file ltiop reads (--config): the binary loads the rendered
// file as it would in the pod, and the pods roll when it changes.
func TestChartConfigFile(t *testing.T) {
	values := map[string]any{"config": map[string]any{
		"trustedProxies": []any{"10.0.0.0/8"},
		"rateLimits":     map[string]any{"launch": map[string]any{"rate": 50, "burst": 500}},
		"toolName":       "Example Tool",
	}}
	objs := render(t, values)
	cm := objs.Find("ConfigMap", "ltiop-config")
	if cm == nil {
		t.Fatal("no ConfigMap ltiop-config")
	}
	c := ltiopContainer(t, objs)
	var configArg string
	for _, a := range c["args"].([]any) {
		if s := a.(string); strings.HasPrefix(s, "--config=") {
			configArg = strings.TrimPrefix(s, "--config=")
		}
	}
	mount := c["volumeMounts"].([]any)[0].(map[string]any)
	if configArg != filepath.Join(mount["mountPath"].(string), "config.yaml") {
		t.Fatalf("--config=%q is not the mounted file (mount %v)", configArg, mount)
	}
	// Load the rendered file with the rendered environment, as the pod would.
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(nested(t, cm, "data", "config.yaml").(string)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LTIOP_NAMESPACE": chartNamespace}
	for _, e := range c["env"].([]any) {
		if v, ok := e.(map[string]any)["value"].(string); ok {
			env[e.(map[string]any)["name"].(string)] = v
		}
	}
	cfg, err := config.Load([]string{"--config=" + file}, func(n string) string { return env[n] })
	if err != nil {
		t.Fatalf("ltiop refuses the rendered configuration: %v", err)
	}
	if cfg.ToolName != "Example Tool" || cfg.RateLimits.Launch.Burst != 500 || len(cfg.TrustedProxies) != 1 || cfg.PublicURL != "https://lti.example.com" {
		t.Errorf("loaded %+v", cfg)
	}
	sum := podAnnotation(t, objs, "checksum/config")
	values["config"].(map[string]any)["toolName"] = "Renamed"
	if podAnnotation(t, render(t, values), "checksum/config") == sum {
		t.Error("the pods' checksum/config does not change with the configuration")
	}
	// No config: no ConfigMap, no flag, no volume.
	objs = render(t, map[string]any{})
	if objs.Find("ConfigMap", "ltiop-config") != nil || ltiopContainer(t, objs)["args"] != nil || podSpec(t, objs)["volumes"] != nil {
		t.Error("an empty config renders a file")
	}
}

func podAnnotation(t *testing.T, objs testmanifests.Objects, key string) string {
	t.Helper()
	a, _ := nested(t, objs.Find("Deployment", "ltiop"), "spec", "template", "metadata", "annotations").(map[string]any)
	s, _ := a[key].(string)
	if s == "" {
		t.Fatalf("no pod annotation %s", key)
	}
	return s
}

// NOTES.txt points at each registration's own key set, not a shared /lti/keys, and warns
// when launchUrl is empty (every launch then answers 503).
func TestChartNotes(t *testing.T) {
	notes := func(values map[string]any) string {
		values["publicUrl"] = "https://lti.example.com"
		s, err := testmanifests.ChartNotes(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace, values)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	without := notes(map[string]any{})
	if !strings.Contains(without, "https://lti.example.com/lti/keys/<registration name>") || strings.Contains(without, "/lti/keys\n") {
		t.Errorf("NOTES.txt does not name the per-registration key set:\n%s", without)
	}
	if !strings.Contains(without, "WARNING: launchUrl is empty") || !strings.Contains(without, "LAUNCH_URL_NOT_CONFIGURED") {
		t.Errorf("no warning without launchUrl:\n%s", without)
	}
	if with := notes(map[string]any{"launchUrl": "https://app.example.com/launch"}); strings.Contains(with, "WARNING") {
		t.Errorf("a warning with launchUrl set:\n%s", with)
	}
}

// Chart.yaml says which Kubernetes versions the chart is for.
func TestChartKubeVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testmanifests.ChartDir(testenv.Root()), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil || !strings.HasPrefix(chart.KubeVersion, ">=") {
		t.Errorf("kubeVersion = %q (%v), want a lower bound", chart.KubeVersion, err)
	}
}
