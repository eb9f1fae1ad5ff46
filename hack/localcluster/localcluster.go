// Package localcluster is the embedded control plane (kube-apiserver and etcd from
// KUBEBUILDER_ASSETS) that the demo and the measurement tools under hack/ run ltiop
// against, with ltiop's CRDs installed.
package localcluster

import (
	"context"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// New returns the control plane of the repository at root, not yet started: Start it,
// and Stop it when done.
func New(root string) *envtest.Environment {
	return &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
}

// CreateNamespace creates namespace with the integrator's API key Secret in it, under the
// default name and data key ltiop reads.
func CreateNamespace(ctx context.Context, c client.Client, namespace, apiKey string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	return c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ltiop-api-key"},
		StringData: map[string]string{"apiKey": apiKey},
	})
}

// LogTail is the end of a process's log file (its last 2,000 bytes), for an error that
// says why the process failed.
func LogTail(file string) string {
	b, _ := os.ReadFile(file)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
