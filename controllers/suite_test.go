package controllers_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/test/utils/testenv"
)

const (
	publicURL = "https://lti.test.example"
	namespace = "ltiop-controller-test"
)

var (
	env     *testenv.Env
	restCfg *rest.Config
	// k8s reads and writes straight through the API server (no cache), as a user would.
	k8s client.Client
	mgr ctrl.Manager
)

func TestControllers(t *testing.T) { testenv.RunSpecs(t, "Controllers Suite") }

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start(app.Scheme(), namespace)
	Expect(err).NotTo(HaveOccurred())
	restCfg, k8s = env.Config, env.Client

	// The production manager settings (cache restricted to the namespace and to labelled
	// Secrets), with the controllers only.
	cfg := config.Default()
	cfg.Namespace, cfg.PublicURL, cfg.MetricsListen = namespace, publicURL, "0"
	mgr, err = ctrl.NewManager(restCfg, app.ManagerOptions(&cfg))
	Expect(err).NotTo(HaveOccurred())
	Expect(app.SetupControllers(env.Context(), mgr, &cfg)).To(Succeed())
	env.Run(mgr.Start)
})

var _ = AfterSuite(func() { Expect(env.Stop()).To(Succeed()) })
