package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

const (
	helmNamespace = "ltiop-helm"
	release       = "ltiop"
	publicURL     = "https://lti.node.test"
	appURL        = "https://app.node.test"
)

var _ = Describe("The chart on a one-node cluster", Ordered, func() {
	ctx := context.Background()
	var ca *lmsCA
	var lms *lmsServer
	var serviceURL, apiKey string

	BeforeAll(func() {
		ca = newLMSCA()
		// The simulated LMS serves until the last spec ends (launches under load use it).
		lms = startLMS(ca, "node-client-1", publicURL)
	})

	It("keeps every packet on this machine: Service range routed to the bridge, forwarding out dropped, no DNS upstream", func() {
		out, err := command(true, filepath.Join(root, "hack", "nodecluster.sh"), "check")
		Expect(err).NotTo(HaveOccurred(), out)
		cm, err := clientset.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cm.Data["Corefile"]).NotTo(ContainSubstring("forward"), "CoreDNS has no upstream")
		// What a pod sees: a name inside the cluster resolves, through the cluster's DNS.
		Expect(cm.Data["Corefile"]).To(ContainSubstring("kubernetes cluster.local"))
	})

	bundleSpecs(func() (*lmsCA, *lmsServer) { return ca, lms })

	It("installs with only publicUrl and the image: the Deployment becomes Available", func() {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: helmNamespace}})).To(Succeed())
		// The LMS's private CA, which the pods trust (SSL_CERT_FILE) to fetch its key set.
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: helmNamespace, Name: "lms-ca"},
			Data: map[string]string{"ca.crt": string(ca.certPEM)}})).To(Succeed())
		file := writeValues(installValues())
		start := time.Now()
		helm("install", release, "charts/ltiop", "-n", helmNamespace, "-f", file, "--wait", "--timeout", "4m")
		GinkgoWriter.Printf("helm install --wait: %s\n", time.Since(start).Round(time.Second))

		dep := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: release}, dep)).To(Succeed())
		Expect(deploymentAvailable(dep)).To(BeTrue())
		Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(imageRef))
	})

	It("runs the pod as 65532 with a read-only root filesystem, as the kernel sees it", func() {
		Eventually(func() int { return len(readyPods(ctx, ltiopPods)) }).Should(Equal(1))
		pod := readyPods(ctx, ltiopPods)[0]
		pid := containerPID(pod.Status.ContainerStatuses[0].ContainerID)
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		Expect(err).NotTo(HaveOccurred())
		Expect(procField(string(status), "Uid")).To(Equal([]string{"65532", "65532", "65532", "65532"}))
		Expect(procField(string(status), "Gid")).To(Equal([]string{"65532", "65532", "65532", "65532"}))
		mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		Expect(err).NotTo(HaveOccurred())
		Expect(rootMountOptions(string(mounts))).To(ContainElement("ro"), "the container's / is mounted read-only")
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		Expect(err).NotTo(HaveOccurred())
		Expect(exe).To(Equal("/ltiop"))
	})

	It("answers /readyz through the Service", func() {
		svc, err := clientset.CoreV1().Services(helmNamespace).Get(ctx, release, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		serviceURL = "http://" + svc.Spec.ClusterIP + ":80"
		Eventually(func() (int, error) { return get(serviceURL + "/readyz") }).Should(Equal(200))
	})

	It("lets a person bound to the chart's viewer ClusterRole run kubectl get platreg, and not create one", func() {
		kubectl("create", "clusterrolebinding", "node-test-viewer", "--clusterrole", release+"-platformregistration-viewer", "--user", "viewer@node.test")
		DeferCleanup(func() { kubectl("delete", "clusterrolebinding", "node-test-viewer") })
		Eventually(func() error {
			_, err := command(true, kubectlBin, "--as", "viewer@node.test", "-n", helmNamespace, "get", "platreg")
			return err
		}).Should(Succeed())
		out, err := command(true, kubectlBin, "--as", "viewer@node.test", "-n", helmNamespace, "auth", "can-i", "create", "platformregistrations.lti.ltiop.dev")
		Expect(err).To(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(Equal("no"))
	})

	It("takes a launch from an LMS registered through the platforms API, and hands the integrator its ltik and id token", func() {
		secret, err := clientset.CoreV1().Secrets(helmNamespace).Get(ctx, release+"-api-key", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		apiKey = string(secret.Data["apiKey"])
		Expect(len(apiKey)).To(BeNumerically(">=", 32))
		smokeLaunch(ctx, ca, lms, helmNamespace, serviceURL, apiKey)

		// The replays of the load below come from a new browser holding the cookies ltiop set
		// at login: such a browser launches (the replays could succeed), and only once.
		b := newBrowser(ca, serviceURL, appURL)
		form := b.untilForm(lms, "user=teacher-2")
		Expect(form.form).NotTo(BeNil(), form.body)
		Expect(form.cookies).NotTo(BeEmpty(), "ltiop's login set its binding cookie")
		first := b.replay(form)
		Expect(first.ltik).NotTo(BeEmpty(), "%d %s", first.status, first.body)
		again := b.replay(form)
		Expect(again.ltik).To(BeEmpty(), "the same form and cookies a second time")
		Expect(again.status).To(BeNumerically(">=", 400))
	})

	haSpecs(func() (*lmsCA, *lmsServer, string) { return ca, lms, serviceURL })

	It("uninstalls, leaving what docs/install.md says it leaves: CRDs, the registrations and their key Secrets, the API key", func() {
		helm("uninstall", release, "-n", helmNamespace, "--wait", "--timeout", "2m")
		// Gone: the workload and everything namespaced the chart made, but the API key.
		Eventually(func() bool {
			_, err := clientset.AppsV1().Deployments(helmNamespace).Get(ctx, release, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		for _, name := range []string{release} {
			_, err := clientset.CoreV1().Services(helmNamespace).Get(ctx, name, metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service %s", name)
			_, err = clientset.CoreV1().ServiceAccounts(helmNamespace).Get(ctx, name, metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceAccount %s", name)
		}
		// Stays.
		_, err := clientset.CoreV1().Secrets(helmNamespace).Get(ctx, release+"-api-key", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the generated API key stays")
		for _, crd := range []string{"platformregistrations.lti.ltiop.dev", "toolregistrations.lti.ltiop.dev"} {
			Expect(kubectl("get", "crd", crd, "-o", "name")).To(ContainSubstring(crd))
		}
		regs := &ltiv1.PlatformRegistrationList{}
		Expect(k8s.List(ctx, regs, client.InNamespace(helmNamespace))).To(Succeed())
		Expect(regs.Items).NotTo(BeEmpty(), "the registrations stay")
		for _, reg := range regs.Items {
			Expect(reg.Status.KeySecretName).NotTo(BeEmpty())
			_, err := clientset.CoreV1().Secrets(helmNamespace).Get(ctx, reg.Status.KeySecretName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "the key Secret %s stays", reg.Status.KeySecretName)
		}
	})
})

// smokeLaunch registers the LMS through the platforms API of the ltiop serving base (in
// namespace), waits until the controller judges it Ready, launches, and reads the id token
// with the ltik: the first launch of docs/install.md.
func smokeLaunch(ctx context.Context, ca *lmsCA, lms *lmsServer, namespace, serviceURL, apiKey string) {
	id := registerPlatform(serviceURL, apiKey, lms)
	Eventually(func() bool {
		reg := &ltiv1.PlatformRegistration{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: id}, reg); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(reg.Status.Conditions, "Ready")
	}).Should(BeTrue(), "the controller in the pod judges the registration Ready")

	b := newBrowser(ca, serviceURL, appURL)
	var ltik string
	Eventually(func() string {
		got := b.launch(lms, "user=teacher-1")
		ltik = got.ltik
		if ltik == "" {
			return fmt.Sprintf("%d %s", got.status, got.body)
		}
		return ""
	}).Should(BeEmpty(), "the launch reaches the integrator's page with an ltik")

	tok := apiCall(serviceURL, "GET", "/api/idtoken", "LTIK-AUTH-V2 "+apiKey+":"+ltik, nil)
	Expect(tok.Status).To(Equal(200), tok.Body)
	idToken := tok.JSON(GinkgoTB())
	Expect(idToken).To(HaveKeyWithValue("ltiVersion", "1.3.0"))
	Expect(idToken["user"]).To(HaveKeyWithValue("id", "teacher-1"))
	Expect(idToken["platform"]).To(HaveKeyWithValue("id", id))
	Expect(idToken["platform"]).To(HaveKeyWithValue("url", lms.URL))
}

// installValues are the values of the first install: publicUrl and the image, and what the
// simulated LMS needs (its address allowed, its CA trusted).
func installValues() map[string]any {
	repo, tag := imageRepoTag()
	return map[string]any{
		"publicUrl": publicURL,
		"launchUrl": appURL + "/launch",
		"image":     map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		// The simulated LMS listens on the node's bridge address, a private one.
		"config":            map[string]any{"outboundAllowCidrs": []string{nodeIP + "/32"}},
		"extraEnv":          []any{map[string]any{"name": "SSL_CERT_FILE", "value": "/etc/lms-ca/ca.crt"}},
		"extraVolumes":      []any{map[string]any{"name": "lms-ca", "configMap": map[string]any{"name": "lms-ca"}}},
		"extraVolumeMounts": []any{map[string]any{"name": "lms-ca", "mountPath": "/etc/lms-ca", "readOnly": true}},
	}
}

// writeValues writes a values file for helm -f.
func writeValues(values map[string]any) string {
	b, err := yaml.Marshal(values)
	Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(GinkgoTB().TempDir(), "values.yaml")
	Expect(os.WriteFile(file, b, 0o600)).To(Succeed())
	return file
}

func deploymentAvailable(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// containerPID is the host PID of a container's first process, from containerd.
func containerPID(containerID string) int {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := command(true, "ctr", "--address", filepath.Join(stateDir, "containerd.sock"), "--namespace", "k8s.io", "tasks", "ls")
	Expect(err).NotTo(HaveOccurred(), out)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			var pid int
			_, err := fmt.Sscan(f[1], &pid)
			Expect(err).NotTo(HaveOccurred())
			return pid
		}
	}
	Fail("containerd runs no task " + id + ":\n" + out)
	return 0
}

// procField is the values of a "Name:\tv1\tv2" line of /proc/PID/status.
func procField(status, name string) []string {
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.Fields(v)
		}
	}
	return nil
}

// rootMountOptions are the mount options of / in a /proc/PID/mountinfo.
func rootMountOptions(mountinfo string) []string {
	var opts []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts = strings.Split(f[5], ",") // the last mount on / is the one seen
		}
	}
	return opts
}

func get(u string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

func readAll(res *http.Response) string {
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return string(b)
}

// apiCall calls ltiop's JSON API at base with an Authorization header (testhttp's request
// and reply, as the other suites).
func apiCall(base, method, path, auth string, body any) testhttp.Reply {
	return testhttp.Do(GinkgoTB(), &http.Client{Timeout: 20 * time.Second},
		testhttp.NewRequest(GinkgoTB(), method, base+path, body, "Authorization", auth))
}

// registerPlatform registers the LMS through the platforms API and returns its id.
func registerPlatform(base, apiKey string, lms *lmsServer) string {
	res := apiCall(base, "POST", "/api/platforms", "Bearer "+apiKey, map[string]any{
		"url": lms.URL, "clientId": lms.ClientID, "name": "LMS simulator on the node's bridge",
		"authenticationEndpoint": lms.URL + lmssim.AuthPath, "accesstokenEndpoint": lms.URL + lmssim.TokenPath,
		"authConfig": map[string]any{"method": "JWK_SET", "key": lms.URL + lmssim.JWKSPath},
	})
	ExpectWithOffset(1, res.Status).To(Equal(201), res.Body)
	return res.JSON(GinkgoTB())["id"].(string)
}
