// Package webserver is ltiop's HTTP side: a manager Runnable that serves the LTI endpoints,
// the integrator API and health on every replica.
package webserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/handlers/oauthbroker"
	"github.com/ltiop/ltiop/webserver/handlers/onboarding"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

// Options configure the Server.
type Options struct {
	Listen       string
	MaxBodyBytes int64
	// DrainDelay is how long, once asked to stop, the server keeps serving with /readyz
	// failing, so load balancers take the replica out before its listener closes.
	DrainDelay time.Duration
	// ShutdownTimeout is how long requests in flight then get to finish.
	ShutdownTimeout time.Duration
	// RateLimits limit the unauthenticated routes per client IP; the zero value limits
	// nothing.
	RateLimits RateLimits
}

// RateLimits are the per-client-IP limits of the routes anyone can reach without a
// credential, by group (Route.RateLimit names a route's group in the route table; the
// routes of a group share a client's bucket). A zero Limit turns its group off.
type RateLimits struct {
	Launch            ratelimit.Limit // LimitLaunch: the launch flow
	Register          ratelimit.Limit // LimitRegister: dynamic registration, both ways
	PlatformAuthorize ratelimit.Limit // LimitPlatformAuthorize: platform mode's OIDC authorization
	PlatformToken     ratelimit.Limit // LimitPlatformToken: platform mode's token endpoint
	OAuth             ratelimit.Limit // LimitOAuth: the OAuth broker's browser steps
	Notices           ratelimit.Limit // LimitNotices: platform notices
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// MaxClients bounds the buckets kept (ratelimit.DefaultMaxClients when 0).
	MaxClients int
	// Now is the clock (time.Now when nil); tests move it.
	Now func() time.Time
}

// Server is the web server. It implements manager.Runnable and
// manager.LeaderElectionRunnable (it runs on every replica).
type Server struct {
	opts    Options
	handler http.Handler
	mux     *http.ServeMux
	routes  []Route
	ready   []ReadinessCheck

	shuttingDown atomic.Bool
	addrOnce     sync.Once
	listening    chan struct{}
	addr         string
}

// ReadinessCheck is one thing /readyz waits for: while Ready answers false, /readyz is 503
// and says Waiting. Name identifies it in /readyz?verbose.
type ReadinessCheck struct {
	Name    string
	Ready   func() bool
	Waiting string
}

// Handlers are the handler groups the server routes. The composition root (package app)
// builds them; the server only routes, guards and observes.
type Handlers struct {
	// APIKey guards the Bearer-authenticated integrator API.
	APIKey *httpapi.APIKey
	// Keys serves the key set of every registration at /lti/keys.
	Keys http.Handler
	// KeySet serves one registration's key set at /lti/keys/{id}.
	KeySet http.Handler
	// Tool serves the tool-mode launch endpoints and the launch-based API.
	Tool *toolmode.Tool
	// Onboarding serves dynamic registration and the manual setup helpers.
	Onboarding *onboarding.Onboarding
	// OAuth brokers access tokens for the LMS's own REST API.
	OAuth *oauthbroker.Broker
	// Platform serves platform mode: launching external tools for the integrator.
	Platform *platformmode.Platform
	// Platforms serves the registrations API (/api/platforms, alias /admin/platforms).
	Platforms *admin.Platforms
	// Tools serves the tool registrations API of platform mode (/api/tools).
	Tools *admin.Tools
	// ToolDynReg serves dynamic registration of tools with ltiop as the platform.
	ToolDynReg *admin.ToolDynReg
}

// New builds the server; /readyz answers ready once every check in ready is.
func New(opts Options, d Handlers, ready ...ReadinessCheck) *Server {
	s := &Server{opts: opts, ready: ready, listening: make(chan struct{})}
	limits := newRateLimits(opts.RateLimits, d.Platform)
	s.routes = s.routeTable(d)
	s.mux = http.NewServeMux()
	for _, rt := range s.routes {
		s.mux.Handle(rt.Method+" "+rt.Path, rt.handler(d, limits))
	}
	s.handler = observe(log.Log.WithName("http"), newSecretPaths(s.routes), httpapi.LimitBody(opts.MaxBodyBytes)(notFoundOrMethod(s.mux)))
	return s
}

// Routes is the route table: every served endpoint, its handler as the table names it
// (before the credential check and the rate limit).
func (s *Server) Routes() []Route { return s.routes }

// Handler is the whole HTTP handler, middleware included.
func (s *Server) Handler() http.Handler { return s.handler }

// NeedLeaderElection is false: every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Addr waits until the server listens and returns its address (useful with port 0).
func (s *Server) Addr(ctx context.Context) (string, error) {
	select {
	case <-s.listening:
		return s.addr, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Start serves until ctx ends, then shuts down gracefully: /readyz turns 503 at once and
// the server keeps serving for DrainDelay, so load balancers drain; then the listener
// closes and requests in flight get ShutdownTimeout to finish.
func (s *Server) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("webserver")
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("web server: %w", err)
	}
	s.addrOnce.Do(func() { s.addr = ln.Addr().String(); close(s.listening) })
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("serving", "address", s.addr)

	select {
	case err := <-served:
		return fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}
	s.shuttingDown.Store(true)
	if s.opts.DrainDelay > 0 {
		logger.Info("draining: /readyz fails, requests are still served", "for", s.opts.DrainDelay)
		select {
		case err := <-served:
			return fmt.Errorf("web server: %w", err)
		case <-time.After(s.opts.DrainDelay):
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("web server shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready once every readiness check is, and until shutdown begins. With
// ?verbose it lists every check and its state, ready or not.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("verbose") {
		s.readyzVerbose(w)
		return
	}
	if s.shuttingDown.Load() {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The server is shutting down."))
		return
	}
	for _, c := range s.ready {
		if !c.Ready() {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, c.Waiting))
			return
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// readinessState is one check in /readyz?verbose.
type readinessState struct {
	Name    string `json:"name"`
	Ready   bool   `json:"ready"`
	Waiting string `json:"waiting,omitempty"`
}

// shutdownCheck is the check /readyz?verbose names for the graceful shutdown.
const shutdownCheck = "shutdown"

func (s *Server) readyzVerbose(w http.ResponseWriter) {
	status, code := "ready", http.StatusOK
	checks := make([]readinessState, 0, len(s.ready)+1)
	for _, c := range s.ready {
		st := readinessState{Name: c.Name, Ready: c.Ready()}
		if !st.Ready {
			st.Waiting = c.Waiting
			status, code = "not ready", http.StatusServiceUnavailable
		}
		checks = append(checks, st)
	}
	st := readinessState{Name: shutdownCheck, Ready: !s.shuttingDown.Load()}
	if !st.Ready {
		st.Waiting = "The server is shutting down."
		status, code = "not ready", http.StatusServiceUnavailable
	}
	checks = append(checks, st)
	httpapi.WriteJSON(w, code, struct {
		Status string           `json:"status"`
		Checks []readinessState `json:"checks"`
	}{status, checks})
}
