package node_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The bundle's namespace (config/default).
const bundleNamespace = "ltiop-system"

// bundleSpecs apply dist/install.yaml to the fresh cluster as docs/install.md's Way 2 says
// (the public URL set in it), launch once through it, and delete it, before the chart is
// installed. env gives the LMS's CA and the LMS.
func bundleSpecs(env func() (*lmsCA, *lmsServer)) {
	ctx := context.Background()
	var bundle string

	It("applies dist/install.yaml with the image, becomes Available and takes a launch", func() {
		ca, lms := env()
		bundle = renderBundle(ca)
		kubectl("apply", "--server-side", "-f", bundle)
		// The integrator's API key: the Secret the bundle's Deployment reads by default.
		key := make([]byte, 24)
		_, _ = rand.Read(key)
		apiKey := hex.EncodeToString(key)
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bundleNamespace, Name: "ltiop-api-key"},
			StringData: map[string]string{"apiKey": apiKey}})).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: bundleNamespace, Name: "lms-ca"},
			Data: map[string]string{"ca.crt": string(ca.certPEM)}})).To(Succeed())
		kubectl("-n", bundleNamespace, "rollout", "status", "deployment/ltiop", "--timeout", "3m")
		svc, err := clientset.CoreV1().Services(bundleNamespace).Get(ctx, "ltiop", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		base := "http://" + svc.Spec.ClusterIP + ":80"
		Eventually(func() (int, error) { return get(base + "/readyz") }).Should(Equal(200))
		smokeLaunch(ctx, ca, lms, bundleNamespace, base, apiKey)
	})

	It("is removed by kubectl delete -f, CRDs and namespace with it", func() {
		kubectl("delete", "-f", bundle, "--wait", "--timeout", "3m")
		Eventually(func() bool {
			_, err := clientset.CoreV1().Namespaces().Get(ctx, bundleNamespace, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue(), "the namespace is gone")
		out, _ := command(true, kubectlBin, "get", "crd", "platformregistrations.lti.ltiop.dev")
		Expect(out).To(ContainSubstring("NotFound"))
	})
}

// renderBundle renders dist/install.yaml with the loaded image (hack/build-installer.sh,
// what make build-installer writes) and makes the edits an operator makes: the public URL
// (docs/install.md's sed), the integrator's launch page, and for the simulated LMS its
// address allowed and its CA trusted. It returns the file's path.
func renderBundle(ca *lmsCA) string {
	out, _ := command(false, filepath.Join(root, "hack", "build-installer.sh"), imageRef)
	out = strings.ReplaceAll(out, "https://lti.example.com", publicURL)
	docs := strings.Split(out, "\n---\n")
	found := false
	for i, doc := range docs {
		if !strings.Contains(doc, "kind: Deployment") {
			continue
		}
		dep := &appsv1.Deployment{}
		Expect(yaml.Unmarshal([]byte(doc), dep)).To(Succeed())
		c := &dep.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal(imageRef))
		c.ImagePullPolicy = corev1.PullNever
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "LTIOP_LAUNCH_URL", Value: appURL + "/launch"},
			corev1.EnvVar{Name: "LTIOP_OUTBOUND_ALLOW_CIDRS", Value: nodeIP + "/32"},
			corev1.EnvVar{Name: "SSL_CERT_FILE", Value: "/etc/lms-ca/ca.crt"})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "lms-ca", MountPath: "/etc/lms-ca", ReadOnly: true})
		dep.Spec.Template.Spec.Volumes = append(dep.Spec.Template.Spec.Volumes, corev1.Volume{Name: "lms-ca",
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "lms-ca"}}}})
		b, err := yaml.Marshal(dep)
		Expect(err).NotTo(HaveOccurred())
		docs[i], found = string(b), true
	}
	Expect(found).To(BeTrue(), "the bundle has a Deployment")
	file := filepath.Join(stateDir, "install.yaml") // kept for the delete spec; down removes it
	Expect(os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o600)).To(Succeed())
	return file
}
