package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/test/utils/testenv"
)

const (
	publicURL = "https://lti.test.example"
	namespace = "ltiop-controller-test"
)

var (
	testEnv *envtest.Environment
	restCfg *rest.Config
	// k8s reads and writes straight through the API server (no cache), as a user would.
	k8s     client.Client
	mgr     ctrl.Manager
	cancel  context.CancelFunc
	stopped chan struct{}
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Controllers Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	testEnv, restCfg, err = testenv.Start()
	Expect(err).NotTo(HaveOccurred())

	k8s, err = client.New(restCfg, client.Options{Scheme: app.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(context.Background(), namespaceObject(namespace))).To(Succeed())

	// The production manager settings (cache restricted to the namespace and to labelled
	// Secrets), with the controllers only.
	cfg := config.Default()
	cfg.Namespace, cfg.PublicURL, cfg.MetricsListen = namespace, publicURL, "0"
	mgr, err = ctrl.NewManager(restCfg, app.ManagerOptions(&cfg))
	Expect(err).NotTo(HaveOccurred())
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	Expect(app.SetupControllers(ctx, mgr, &cfg)).To(Succeed())
	stopped = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(stopped)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
		<-stopped // the manager stops before the control plane does
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
