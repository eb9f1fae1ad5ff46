package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/integratorsim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/stdwebhook"
)

// demoWebhookSecret signs the notices ltiop delivers to the demo integrator and its
// platform data API calls (a demo value: a real one is random, 24 to 64 bytes).
const demoWebhookSecret = "whsec_ZGVtby13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVm"

const registrationName = "lms-simulator"

// startDemoLMS serves the LMS simulator and the integrator's tool-mode app together on
// listen: the LMS at /start, /auth and /jwks; the app's Launch URL at /app/launch.
func startDemoLMS(listen, ltiopURL, apiKey string) (*integratorsim.App, error) {
	key, err := stdwebhook.ParseSecret(demoWebhookSecret)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("LMS simulator: %w", err)
	}
	base := "http://" + ln.Addr().String()
	sim, err := lmssim.New(base, "demo-client", "demo-deployment")
	if err != nil {
		ln.Close()
		return nil, err
	}
	sim.ToolLoginURL, sim.ToolRedirectURI = ltiopURL+paths.Login, ltiopURL+paths.Launch
	sim.EnableServices(ltiopURL + paths.KeySet(registrationName)) // rosters, grades and deep linking, verified with its key set
	sim.EnablePNS(nil)                                            // platform notices
	hook := integratorsim.NewWebhook(key)
	hook.SetStatus(http.StatusNoContent)
	app := &integratorsim.App{LMS: sim, Base: base, LTIOP: ltiopURL, APIKey: apiKey, Hook: hook}
	srv := &http.Server{Handler: app.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return app, nil
}

// registerLMS creates the PlatformRegistration of the LMS simulator.
func registerLMS(ctx context.Context, k8s client.Client, cfg *config.Config, app *integratorsim.App) error {
	return k8s.Create(ctx, &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: registrationName},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL(app.Base), ClientID: app.LMS.ClientID, Name: "LMS simulator",
			AuthenticationEndpoint: ltiv1.EndpointURL(app.Base + lmssim.AuthPath),
			AccesstokenEndpoint:    ltiv1.EndpointURL(app.Base + lmssim.TokenPath),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: app.Base + lmssim.JWKSPath},
		},
	})
}
