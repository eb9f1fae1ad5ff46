// Package deploy tests what ltiop ships for installing it: config/default and its
// components, and the Helm chart. Each is rendered in-process (kustomize's krusty, Helm's
// engine), checked by envtest's real API server (server-side dry-run) and compared with
// the other, so the two ways to install describe the same ltiop.
package deploy

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// chartNamespace is where the chart is installed in the tests: not ltiop-system, so
// nothing passes only because the names happen to match.
const chartNamespace = "lti-chart"

var (
	env *testenv.Env
	k8s client.Client
)

func TestDeploy(t *testing.T) { testenv.RunSpecs(t, "Deploy Suite") }

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start(app.Scheme(), chartNamespace)
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
	thirdParty, err := testmanifests.Decode(readFile(filepath.Join("testdata", "crds", "third-party.yaml")))
	Expect(err).NotTo(HaveOccurred())
	Expect(testmanifests.Apply(context.Background(), k8s, thirdParty, "test", false)).To(Succeed())
	Eventually(func() error { // the CRDs are served once established
		return testmanifests.Apply(context.Background(), k8s, testmanifests.Objects{serviceMonitorProbe()}, "test", true)
	}).Should(Succeed())
})

var _ = AfterSuite(func() { Expect(env.Stop()).To(Succeed()) })
