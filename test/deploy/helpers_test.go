package deploy

import (
	"os"
	"path/filepath"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

func readFile(path string) []byte {
	raw, err := os.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return raw
}

// serviceMonitorProbe is an empty ServiceMonitor, to learn when its CRD is served.
func serviceMonitorProbe() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("monitoring.coreos.com/v1")
	u.SetKind("ServiceMonitor")
	u.SetNamespace(chartNamespace)
	u.SetName("probe")
	return u
}

func kustomize(dir string) testmanifests.Objects {
	objs, err := testmanifests.Kustomize(dir)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return objs
}

func configDir(name string) string { return filepath.Join(testenv.Root(), "config", name) }

func chartDir() string { return testmanifests.ChartDir(testenv.Root()) }

// renderChart renders the chart as release "ltiop" in chartNamespace.
func renderChart(values map[string]any) (testmanifests.Objects, error) {
	return testmanifests.Chart(chartDir(), "ltiop", chartNamespace, values)
}

func mustRenderChart(values map[string]any) testmanifests.Objects {
	objs, err := renderChart(values)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return objs
}

func defaultValues() map[string]any { return map[string]any{"publicUrl": "https://lti.example.com"} }

func fullValues() map[string]any {
	v, err := testmanifests.ReadValues(filepath.Join(chartDir(), "ci", "full-values.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return v
}

// field reads a nested field of u, failing the test when it is absent.
func field(u *unstructured.Unstructured, path ...string) any {
	ExpectWithOffset(1, u).NotTo(BeNil())
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, ok).To(BeTrue(), "%s %s has no %v", u.GetKind(), u.GetName(), path)
	return v
}

// container is the ltiop container of a Deployment.
func container(deploy *unstructured.Unstructured) map[string]any {
	cs := field(deploy, "spec", "template", "spec", "containers").([]any)
	ExpectWithOffset(1, cs).To(HaveLen(1))
	return cs[0].(map[string]any)
}
