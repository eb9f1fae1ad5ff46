// Package node_test runs ltiop as pods: the chart and the bundle installed on a real
// one-node cluster (hack/nodecluster.sh: a kubelet with runc containers, kube-proxy and
// CoreDNS), with the image `make image` built, and launches sent through the cluster.
// `make test-node` (hack/test-node.sh) starts the cluster and runs it; without
// LTIOP_NODE_KUBECONFIG it skips, unless LTIOP_REQUIRE_NODE is set.
package node_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/test/utils/testenv"
)

// The cluster and what the suite installs on it.
var (
	kubeconfig string // LTIOP_NODE_KUBECONFIG
	stateDir   string // LTIOP_NODE_DIR: hack/nodecluster.sh's state (containerd's socket)
	kubectlBin string // LTIOP_NODE_KUBECTL: a kubectl of the cluster's version
	imageRef   string // LTIOP_NODE_IMAGE: the ltiop image loaded into the node
	restConfig *rest.Config
	clientset  *kubernetes.Clientset
	k8s        client.Client
	root       = testenv.Root()
)

// The node's bridge address: the host side of every pod's network, where the simulated
// LMS listens.
const nodeIP = "10.244.0.1"

func TestNode(t *testing.T) {
	kubeconfig = os.Getenv("LTIOP_NODE_KUBECONFIG")
	if kubeconfig == "" {
		if os.Getenv("LTIOP_REQUIRE_NODE") != "" {
			t.Fatal("LTIOP_REQUIRE_NODE is set but LTIOP_NODE_KUBECONFIG is not: run make test-node")
		}
		t.Skip("no one-node cluster (LTIOP_NODE_KUBECONFIG unset): make test-node runs this suite")
	}
	stateDir, kubectlBin, imageRef = os.Getenv("LTIOP_NODE_DIR"), os.Getenv("LTIOP_NODE_KUBECTL"), os.Getenv("LTIOP_NODE_IMAGE")
	if stateDir == "" || kubectlBin == "" || imageRef == "" {
		t.Fatal("LTIOP_NODE_DIR, LTIOP_NODE_KUBECTL and LTIOP_NODE_IMAGE are required with LTIOP_NODE_KUBECONFIG")
	}
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "One-node cluster Suite")
}

var _ = BeforeSuite(func() {
	var err error
	restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(restConfig)
	Expect(err).NotTo(HaveOccurred())
	scheme := k8sruntime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(ltiv1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(restConfig, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

// command runs name with args in the repository root against the cluster, and returns its
// combined output; it fails the spec when the command fails, unless allowFail.
func command(allowFail bool, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+filepath.Join(stateDir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(stateDir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(stateDir, "helm", "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if !allowFail {
		ExpectWithOffset(2, err).NotTo(HaveOccurred(), name+" "+strings.Join(args, " ")+"\n"+out.String())
	}
	return out.String(), err
}

// helm runs the Helm of go.mod's tools.
func helm(args ...string) string {
	out, _ := command(false, "go", append([]string{"tool", "helm"}, args...)...)
	return out
}

// kubectl runs the cluster's kubectl.
func kubectl(args ...string) string {
	out, _ := command(false, kubectlBin, args...)
	return out
}

// imageRepoTag splits imageRef into repository and tag.
func imageRepoTag() (string, string) {
	i := strings.LastIndex(imageRef, ":")
	return imageRef[:i], imageRef[i+1:]
}
