package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// The CRDs follow the release. The Helm CLI (go tool helm) installs the chart as it was
// before (CRDs in crds/, which Helm installs once and never upgrades), upgrades a release of
// it to this chart (CRDs as templates), upgrades again with a changed CRD, and uninstalls,
// on an API server of its own that starts without the CRDs.
var _ = Describe("helm install, upgrade and uninstall", Ordered, func() {
	const (
		release   = "helmtest"
		namespace = "lti-helm"
		platCRD   = "platformregistrations.lti.ltiop.dev"
		toolCRD   = "toolregistrations.lti.ltiop.dev"
	)
	var (
		apiServer          *envtest.Environment
		c                  client.Client
		kubeconfig         string
		oldChart, newChart string
	)
	ctx := context.Background()

	helm := func(args ...string) (string, error) {
		GinkgoHelper()
		cmd := exec.Command("go", append([]string{"tool", "helm", "--kubeconfig", kubeconfig}, args...)...) //nolint:gosec // G204: the test's own arguments
		cmd.Dir = testenv.Root()
		home := GinkgoT().TempDir()
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		GinkgoWriter.Printf("helm %s:\n%s\n", strings.Join(args, " "), out.String())
		return out.String(), err
	}
	crd := func(name string) *unstructured.Unstructured {
		GinkgoHelper()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, u)).To(Succeed())
		return u
	}
	printerColumns := func(u *unstructured.Unstructured) []any {
		GinkgoHelper()
		var names []any
		for _, col := range field(u, "spec", "versions").([]any)[0].(map[string]any)["additionalPrinterColumns"].([]any) {
			names = append(names, col.(map[string]any)["name"])
		}
		return names
	}
	// copyChart copies this chart to a temporary directory for a test to change.
	copyChart := func(cfg *rest.Config) string {
		GinkgoHelper()
		dir := filepath.Join(GinkgoT().TempDir(), "ltiop")
		Expect(os.CopyFS(dir, os.DirFS(chartDir()))).To(Succeed())
		// kube-apiserver built from the module without a version stamp says v0.0.0-master,
		// which the chart's kubeVersion (>=1.31) refuses; TestChartKubeVersion checks it.
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		v, err := dc.ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		if strings.HasPrefix(v.GitVersion, "v0.0.0") {
			chartYAML := filepath.Join(dir, "Chart.yaml")
			raw, err := os.ReadFile(chartYAML)
			Expect(err).NotTo(HaveOccurred())
			var kept []string
			for _, line := range strings.Split(string(raw), "\n") {
				if !strings.HasPrefix(line, "kubeVersion:") {
					kept = append(kept, line)
				}
			}
			Expect(os.WriteFile(chartYAML, []byte(strings.Join(kept, "\n")), 0o600)).To(Succeed())
		}
		return dir
	}

	BeforeAll(func() {
		apiServer = &envtest.Environment{} // no CRDs: the chart brings them
		cfg, err := apiServer.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(apiServer.Stop)
		c, err = client.New(cfg, client.Options{Scheme: app.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		kc := clientcmdapi.NewConfig()
		kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
		kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
		kc.CurrentContext = "envtest"
		Expect(clientcmd.WriteToFile(*kc, kubeconfig)).To(Succeed())

		newChart = copyChart(cfg)
		// The chart before this change: the generated CRDs in crds/, no templates/crds.
		oldChart = copyChart(cfg)
		Expect(os.RemoveAll(filepath.Join(oldChart, "templates", "crds"))).To(Succeed())
		Expect(os.CopyFS(filepath.Join(oldChart, "crds"), os.DirFS(filepath.Join(testenv.Root(), "config", "crd", "bases")))).To(Succeed())
	})

	It("upgrades a release of the chart with crds/ once --take-ownership lets it adopt them", func() {
		_, err := helm("install", release, oldChart, "-n", namespace, "--create-namespace", "--set", "publicUrl=https://lti.example.com")
		Expect(err).NotTo(HaveOccurred())
		Expect(crd(platCRD).GetAnnotations()).NotTo(HaveKey("meta.helm.sh/release-name"), "crds/ are not the release's")

		out, err := helm("upgrade", release, newChart, "-n", namespace, "--reuse-values")
		Expect(err).To(HaveOccurred(), "Helm adopts no object that is not the release's")
		Expect(out).To(ContainSubstring(platCRD))
		Expect(out).To(ContainSubstring("invalid ownership metadata"))

		_, err = helm("upgrade", release, newChart, "-n", namespace, "--reuse-values", "--take-ownership")
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{platCRD, toolCRD} {
			a := crd(name).GetAnnotations()
			Expect(a).To(HaveKeyWithValue("meta.helm.sh/release-name", release), name)
			Expect(a).To(HaveKeyWithValue("meta.helm.sh/release-namespace", namespace), name)
			Expect(a).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"), name)
		}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-ltiop"}, &appsv1.Deployment{})).To(Succeed())
	})

	It("applies a changed CRD on helm upgrade", func() {
		Expect(printerColumns(crd(platCRD))).NotTo(ContainElement("Upgraded"))
		// The next version of the chart, whose CRD has one more printer column.
		file := filepath.Join(newChart, "templates", "crds", "lti.ltiop.dev_platformregistrations.yaml")
		raw, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		changed := strings.Replace(string(raw), "  - additionalPrinterColumns:\n",
			"  - additionalPrinterColumns:\n    - jsonPath: .spec.name\n      name: Upgraded\n      type: string\n", 1)
		Expect(changed).NotTo(Equal(string(raw)))
		Expect(os.WriteFile(file, []byte(changed), 0o600)).To(Succeed())

		_, err = helm("upgrade", release, newChart, "-n", namespace, "--reuse-values")
		Expect(err).NotTo(HaveOccurred())
		Expect(printerColumns(crd(platCRD))).To(ContainElement("Upgraded"))
	})

	It("leaves the CRDs, the registrations and the API key on helm uninstall, and a new install takes them up", func() {
		samples, err := testmanifests.Decode(readFile(filepath.Join(testenv.Root(), "config", "samples", "lti_v1alpha1_platformregistration.yaml")))
		Expect(err).NotTo(HaveOccurred())
		for _, s := range samples {
			s.SetNamespace(namespace)
		}
		Expect(testmanifests.Apply(ctx, c, samples, "test", false)).To(Succeed())

		_, err = helm("uninstall", release, "-n", namespace)
		Expect(err).NotTo(HaveOccurred())
		err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-ltiop"}, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment is gone: %v", err)
		for _, name := range []string{platCRD, toolCRD} {
			Expect(crd(name).GetDeletionTimestamp()).To(BeNil(), name)
		}
		for _, s := range samples {
			Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s.DeepCopy())).To(Succeed(), "registration %s", s.GetName())
		}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release + "-ltiop-api-key"}, &corev1.Secret{})).To(Succeed())

		_, err = helm("install", release, newChart, "-n", namespace, "--set", "publicUrl=https://lti.example.com")
		Expect(err).NotTo(HaveOccurred(), "the kept CRDs still name the release: a new install of it adopts them")
	})
})
