// Package testmanifests renders what ltiop ships (the kustomizations under config/ and the
// Helm chart) in-process, as `kustomize build` and `helm template` would, and applies the
// result to an API server, so tests check the manifests a user installs and not copies.
package testmanifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Objects are rendered manifests, in the order they were rendered.
type Objects []*unstructured.Unstructured

// Find returns the object of kind and name, or nil.
func (o Objects) Find(kind, name string) *unstructured.Unstructured {
	for _, u := range o {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// OfKind returns the objects of kind.
func (o Objects) OfKind(kind string) Objects {
	var out Objects
	for _, u := range o {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// Kustomize renders the kustomization in dir, as `kustomize build dir` does.
func Kustomize(dir string) (Objects, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	raw, err := res.AsYaml()
	if err != nil {
		return nil, err
	}
	return Decode(raw)
}

// Chart renders the chart in dir for a release named release in namespace, as
// `helm template release dir --namespace namespace --include-crds` does: values are
// checked against values.schema.json, the CRDs under crds/ (if any: ltiop's are
// templates) come first, templates follow in file-name order.
func Chart(dir, release, namespace string, values map[string]any) (Objects, error) {
	ch, rendered, err := renderChart(dir, release, namespace, values)
	if err != nil {
		return nil, err
	}
	var out Objects
	for _, crd := range ch.CRDObjects() {
		objs, err := Decode(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", crd.Filename, err)
		}
		out = append(out, objs...)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		objs, err := Decode([]byte(rendered[name]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// ChartFiles renders the chart's templates and returns each one's text by its name
// (ltiop/templates/…), before Helm splits and parses them.
func ChartFiles(dir, release, namespace string, values map[string]any) (map[string]string, error) {
	_, rendered, err := renderChart(dir, release, namespace, values)
	return rendered, err
}

// ChartNotes renders the chart's NOTES.txt, what `helm install` prints.
func ChartNotes(dir, release, namespace string, values map[string]any) (string, error) {
	ch, rendered, err := renderChart(dir, release, namespace, values)
	if err != nil {
		return "", err
	}
	return rendered[ch.Name()+"/templates/NOTES.txt"], nil
}

func renderChart(dir, release, namespace string, values map[string]any) (*chartv2.Chart, map[string]string, error) {
	ch, err := chartloader.LoadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	rendered, err := engine.Render(ch, vals)
	return ch, rendered, err
}

// ReadValues reads a values file.
func ReadValues(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return common.ReadValues(raw)
}

// Decode splits a YAML stream into objects, skipping empty documents.
func Decode(raw []byte) (Objects, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out Objects
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// Apply applies every object with server-side apply under fieldOwner, in order; with
// dryRun the API server validates and admits each one (schema, defaults, RBAC escalation
// checks) and stores nothing. Objects of a kind in skipKinds are left out.
func Apply(ctx context.Context, c client.Client, objs Objects, fieldOwner string, dryRun bool, skipKinds ...string) error {
	opts := []client.ApplyOption{client.FieldOwner(fieldOwner), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	var errs []error
	for _, u := range objs {
		if slices.Contains(skipKinds, u.GetKind()) {
			continue
		}
		// A copy: Apply writes the answer back into its argument (managedFields and all).
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// ChartDir is the chart's folder under the repository root.
func ChartDir(root string) string { return filepath.Join(root, "charts", "ltiop") }
