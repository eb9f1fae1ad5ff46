package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

const keepAnnotation = "    helm.sh/resource-policy: keep\n"

// generatedCRDs are config/crd/bases' files (controller-gen's output) by file name.
func generatedCRDs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.Root(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 2 {
		t.Fatalf("config/crd/bases: %v %v", files, err)
	}
	out := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(raw)
	}
	return out
}

func renderCRDTemplates(t *testing.T, crds map[string]any) map[string]string {
	t.Helper()
	values := map[string]any{"publicUrl": "https://lti.example.com"}
	if crds != nil {
		values["crds"] = crds
	}
	files, err := testmanifests.ChartFiles(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace, values)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, text := range files {
		if dir, file := filepath.Split(name); dir == "ltiop/templates/crds/" {
			out[file] = text
		}
	}
	return out
}

// The chart's CRDs are templates, so that `helm upgrade` applies them (Helm installs crds/
// once and never again), and each renders as the generated file, byte for byte, plus
// the keep annotation: hack/sync-chart.sh wraps them in template lines and nothing else.
func TestChartCRDsAreTheGeneratedFiles(t *testing.T) {
	ch, err := chartloader.LoadDir(testmanifests.ChartDir(testenv.Root()))
	if err != nil {
		t.Fatal(err)
	}
	if crds := ch.CRDObjects(); len(crds) != 0 {
		t.Errorf("the chart has %d CRDs under crds/, which helm upgrade never upgrades", len(crds))
	}

	generated := generatedCRDs(t)
	withoutKeep := renderCRDTemplates(t, map[string]any{"keep": false})
	byDefault := renderCRDTemplates(t, nil)
	if len(withoutKeep) != len(generated) || len(byDefault) != len(generated) {
		t.Fatalf("templates/crds renders %d (keep=false) and %d files, config/crd/bases has %d", len(withoutKeep), len(byDefault), len(generated))
	}
	for file, src := range generated {
		// The only byte the wrapper adds is the line break after its first line.
		if got := strings.TrimPrefix(withoutKeep[file], "\n"); got != src {
			t.Errorf("templates/crds/%s with crds.keep=false is not config/crd/bases/%s (run make manifests)", file, file)
		}
		want := strings.Replace(src, "\n  annotations:\n", "\n  annotations:\n"+keepAnnotation, 1)
		if want == src {
			t.Fatalf("config/crd/bases/%s has no metadata.annotations", file)
		}
		if got := strings.TrimPrefix(byDefault[file], "\n"); got != want {
			t.Errorf("templates/crds/%s by default is not config/crd/bases/%s with the keep annotation:\n%s", file, file, got)
		}
	}

	// crds.install=false: no CRD at all (whoever installs them, not this release).
	for file, text := range renderCRDTemplates(t, map[string]any{"install": false}) {
		if strings.TrimSpace(text) != "" {
			t.Errorf("crds.install=false renders templates/crds/%s:\n%s", file, text)
		}
	}
	objs := render(t, map[string]any{"crds": map[string]any{"install": false}})
	if crds := objs.OfKind("CustomResourceDefinition"); len(crds) != 0 {
		t.Errorf("crds.install=false renders %d CRDs", len(crds))
	}
	if objs.Find("Deployment", "ltiop") == nil {
		t.Error("crds.install=false renders no Deployment")
	}
	objs = render(t, map[string]any{})
	if crds := objs.OfKind("CustomResourceDefinition"); len(crds) != 2 {
		t.Errorf("by default the chart renders %d CRDs, want 2", len(crds))
	}
	for _, crd := range objs.OfKind("CustomResourceDefinition") {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s is not kept on uninstall: %v", crd.GetName(), crd.GetAnnotations())
		}
	}
}
