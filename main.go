// Command ltiop runs the LTI 1.3 operator: controllers for the registrations and the web
// server that speaks LTI to learning platforms and JSON to the integrator.
package main

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/logging"
	"github.com/ltiop/ltiop/internal/memlimit"
	"github.com/ltiop/ltiop/internal/version"
)

func main() {
	cfg, err := config.Load(os.Args[1:], os.Getenv)
	switch {
	case errors.Is(err, config.ErrVersion):
		fmt.Println(version.Get())
		return
	case errors.Is(err, config.ErrHelp):
		config.Usage(os.Stdout)
		return
	case err != nil:
		fmt.Fprintln(os.Stderr, "ltiop:", err)
		os.Exit(2)
	}
	logger, _ := logging.New(cfg.LogLevel, cfg.LogFormat, os.Stderr) // Load has checked both
	ctrl.SetLogger(logger)
	// client-go logs through klog (e.g. when no kubeconfig is found): the same logger, so
	// no text line lands in the JSON stream.
	klog.SetLogger(logger.WithName("client-go"))
	logger = ctrl.Log.WithName("setup")
	build := version.Get()
	logger.Info("ltiop", "version", build.Version, "commit", build.Commit, "goVersion", build.GoVersion)
	if limit, from, err := memlimit.Apply(os.Getenv, memlimit.CgroupRoot); err != nil {
		logger.Error(err, "reading the container's memory limit; the Go runtime has none")
	} else if limit > 0 {
		logger.Info("Go memory limit set from the container's", "bytes", limit, "from", from)
	}

	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		logger.Error(err, "reading the cluster configuration")
		os.Exit(1)
	}
	restCfg.UserAgent = version.UserAgent()
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
