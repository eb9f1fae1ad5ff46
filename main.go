// Command ltiop runs the LTI 1.3 operator: controllers for the registrations and the web
// server that speaks LTI to learning platforms and JSON to the integrator.
package main

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
)

func main() {
	cfg, err := config.Load(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ltiop:", err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(cfg.DevMode)))
	logger := ctrl.Log.WithName("setup")

	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		logger.Error(err, "reading the cluster configuration")
		os.Exit(1)
	}
	restCfg.UserAgent = "ltiop"
	ctx := ctrl.SetupSignalHandler()
	a, err := app.New(ctx, cfg, restCfg)
	if err != nil {
		logger.Error(err, "setting up")
		os.Exit(1)
	}
	logger.Info("starting", "namespace", cfg.Namespace, "publicUrl", cfg.PublicURL, "listen", cfg.Listen, "devMode", cfg.DevMode)
	if err := a.Start(ctx); err != nil {
		logger.Error(err, "stopped with an error")
		os.Exit(1)
	}
}
