package e2e

import (
	"context"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
)

// devInstance is a second ltiop in dev mode, in its own namespace, on a free loopback port.
type devInstance struct {
	*app.App
	Namespace string
	Port      int
	URL       string        // its public URL: http://localhost:<port>
	Local     string        // where to reach it: http://127.0.0.1:<port>
	stopped   chan struct{} // closed when its Start returned
	stop      func()        // stops it and waits until it has
}

// startDevInstance starts one for the current spec in a new namespace ns; mutate adjusts
// its configuration.
func startDevInstance(ns string, mutate func(*config.Config)) *devInstance {
	createNamespace(ns)
	return startReplica(ns, restCfg, mutate)
}

// createNamespace makes namespace ns with the integrator's API key Secret.
func createNamespace(ns string) {
	ctx := context.Background()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ltiop-api-key"},
		StringData: map[string]string{"apiKey": apiKey}})).To(Succeed())
}

// startReplica starts an ltiop in dev mode in the existing namespace ns, reaching the API
// server through rc, until the end of the spec; it waits until the replica is ready.
func startReplica(ns string, rc *rest.Config, mutate func(*config.Config)) *devInstance {
	d := runReplica(ns, rc, mutate)
	Eventually(func() int {
		res, err := http.Get(d.Local + "/readyz")
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}).Should(Equal(200))
	return d
}

// runReplica is startReplica without waiting for readiness.
func runReplica(ns string, rc *rest.Config, mutate func(*config.Config)) *devInstance {
	ctx, cancel := context.WithCancel(context.Background())
	port := freePort()
	d := &devInstance{Namespace: ns, Port: port,
		URL: fmt.Sprintf("http://localhost:%d", port), Local: fmt.Sprintf("http://127.0.0.1:%d", port)}
	cfg := config.Default()
	cfg.ShutdownDelay.Duration = 0 // no load balancer to drain
	cfg.Namespace, cfg.PublicURL, cfg.DevMode = ns, d.URL, true
	cfg.Listen, cfg.MetricsListen = fmt.Sprintf("127.0.0.1:%d", port), "0"
	if mutate != nil {
		mutate(&cfg)
	}
	Expect(cfg.Validate()).To(Succeed())
	a, err := app.New(ctx, &cfg, rc, func(o *ctrl.Options) {
		o.Controller.SkipNameValidation = ptr.To(true) // the suite's ltiop has the same controllers
	})
	Expect(err).NotTo(HaveOccurred())
	d.App = a
	d.stopped = make(chan struct{})
	go func() { defer close(d.stopped); _ = a.Start(ctx) }()
	d.stop = func() { cancel(); <-d.stopped }
	DeferCleanup(d.stop)
	return d
}
