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

	"github.com/ltiop/ltiop/internal/paths"
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
// credential, by group (the routes of a group share a client's bucket). A zero Limit
// turns its group off.
type RateLimits struct {
	Launch            ratelimit.Limit // /lti/login, /lti/launch, /lti/launch/complete
	Register          ratelimit.Limit // /lti/register, /lti/register/{token}
	PlatformAuthorize ratelimit.Limit // /lti/platform/authorize
	PlatformToken     ratelimit.Limit // /lti/platform/token
	OAuth             ratelimit.Limit // /oauth/start/{platformId}, /oauth/callback
	Notices           ratelimit.Limit // /lti/notices/{platformId}
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
	routes  []Route
	ready   []ReadinessCheck

	shuttingDown atomic.Bool
	addrOnce     sync.Once
	listening    chan struct{}
	addr         string
}

// Route is one endpoint. Every route must appear in the OpenAPI document (a test checks).
type Route struct {
	Method, Path string
	Handler      http.Handler
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
	platforms := d.Platforms
	bearer := func(f http.HandlerFunc) http.Handler { return d.APIKey.RequireBearer(f) }
	tool := d.Tool
	limits := newRateLimits(opts.RateLimits, d.Platform)

	s.routes = []Route{
		{"GET", "/healthz", http.HandlerFunc(s.healthz)},
		{"GET", "/livez", http.HandlerFunc(s.healthz)},
		{"GET", "/readyz", http.HandlerFunc(s.readyz)},
		{"GET", "/api/openapi.json", http.HandlerFunc(serveOpenAPI)},
		{"GET", paths.Keys, d.Keys},
		{"GET", paths.KeySet("{id}"), d.KeySet},
		{"GET", paths.Login, http.HandlerFunc(tool.Login)},
		{"POST", paths.Login, http.HandlerFunc(tool.Login)},
		{"POST", paths.Launch, http.HandlerFunc(tool.Launch)},
		{"POST", paths.LaunchComplete, http.HandlerFunc(tool.LaunchComplete)},
		{"GET", "/api/idtoken", tool.RequireLtik(http.HandlerFunc(tool.IDToken))},
		{"GET", "/api/memberships", tool.RequireService(http.HandlerFunc(tool.Memberships))},
		{"GET", "/api/lineitems", tool.RequireService(http.HandlerFunc(tool.LineItems))},
		{"POST", "/api/lineitems", tool.RequireService(http.HandlerFunc(tool.CreateLineItem))},
		{"GET", "/api/lineitems/{id}", tool.RequireService(http.HandlerFunc(tool.GetLineItem))},
		{"PUT", "/api/lineitems/{id}", tool.RequireService(http.HandlerFunc(tool.UpdateLineItem))},
		{"DELETE", "/api/lineitems/{id}", tool.RequireService(http.HandlerFunc(tool.DeleteLineItem))},
		{"POST", "/api/lineitems/{id}/scores", tool.RequireService(http.HandlerFunc(tool.PostScore))},
		{"GET", "/api/lineitems/{id}/scores", tool.RequireService(http.HandlerFunc(tool.Scores))},
		{"GET", "/api/groups", tool.RequireService(http.HandlerFunc(tool.Groups))},
		{"GET", "/api/groupsets", tool.RequireService(http.HandlerFunc(tool.GroupSets))},
		{"GET", "/api/outcomes", tool.RequireService(http.HandlerFunc(tool.ReadOutcome))},
		{"PUT", "/api/outcomes", tool.RequireService(http.HandlerFunc(tool.ReplaceOutcome))},
		{"POST", "/api/outcomes", tool.RequireService(http.HandlerFunc(tool.ReplaceOutcome))},
		{"DELETE", "/api/outcomes", tool.RequireService(http.HandlerFunc(tool.DeleteOutcome))},
		{"POST", "/api/deeplinking/form", tool.RequireLtik(http.HandlerFunc(tool.DeepLinkingForm))},
		{"POST", "/api/deeplinking", tool.RequireLtik(http.HandlerFunc(tool.DeepLinkingMessage))},
		{"POST", "/api/deeplinking/message", tool.RequireLtik(http.HandlerFunc(tool.DeepLinkingMessage))},
		{"GET", "/api/notices/handlers", tool.RequireService(http.HandlerFunc(tool.NoticeHandlers))},
		{"PUT", "/api/notices/handlers", tool.RequireService(http.HandlerFunc(tool.SetNoticeHandler))},
		{"DELETE", "/api/notices/handlers", tool.RequireService(http.HandlerFunc(tool.DeleteNoticeHandler))},
		{"POST", paths.Notices, http.HandlerFunc(tool.Notices)},
		{"GET", paths.Register, http.HandlerFunc(d.Onboarding.Register)},
		{"GET", paths.RegisterWithToken, http.HandlerFunc(d.Onboarding.RegisterWithToken)},
		{"GET", paths.CanvasConfiguration, http.HandlerFunc(d.Onboarding.CanvasConfiguration)},
		{"GET", "/api/registrations/{id}", bearer(d.Onboarding.Get)},
		{"POST", "/api/registrations/{id}/complete", bearer(d.Onboarding.Complete)},
		{"GET", "/oauth/start/{platformId}", http.HandlerFunc(d.OAuth.Start)},
		{"GET", "/oauth/callback", http.HandlerFunc(d.OAuth.Callback)},
		{"POST", "/api/oauth/access-token/{platformId}", bearer(d.OAuth.AccessToken)},
		{"POST", "/api/oauth/access-token/{platformId}/refresh", bearer(d.OAuth.Refresh)},
		{"GET", paths.PlatformJWKS, http.HandlerFunc(d.Platform.JWKS)},
		{"GET", paths.PlatformAuthorize, http.HandlerFunc(d.Platform.Authorize)},
		{"POST", paths.PlatformAuthorize, http.HandlerFunc(d.Platform.Authorize)},
		{"POST", paths.PlatformToken, http.HandlerFunc(d.Platform.Token)},
		{"POST", paths.PlatformDeepLinkingReturn, http.HandlerFunc(d.Platform.DeepLinkingReturn)},
		{"POST", "/api/launches", bearer(d.Platform.CreateLaunch)},
		{"POST", "/api/launches/idtoken", bearer(d.Platform.AnswerLaunch)},
		{"POST", "/api/launches/content-items", bearer(d.Platform.ContentItems)},
		{"POST", "/api/tokens/introspect", bearer(d.Platform.Introspect)},
		{"GET", paths.PlatformServices + "/memberships", http.HandlerFunc(d.Platform.Memberships)},
		{"GET", paths.PlatformServices + "/lineitems", http.HandlerFunc(d.Platform.LineItems)},
		{"POST", paths.PlatformServices + "/lineitems", http.HandlerFunc(d.Platform.CreateLineItem)},
		{"GET", paths.PlatformServices + "/lineitems/{lineItem}", http.HandlerFunc(d.Platform.GetLineItem)},
		{"PUT", paths.PlatformServices + "/lineitems/{lineItem}", http.HandlerFunc(d.Platform.UpdateLineItem)},
		{"DELETE", paths.PlatformServices + "/lineitems/{lineItem}", http.HandlerFunc(d.Platform.DeleteLineItem)},
		{"POST", paths.PlatformServices + "/lineitems/{lineItem}/scores", http.HandlerFunc(d.Platform.PostScore)},
		{"GET", paths.PlatformServices + "/lineitems/{lineItem}/results", http.HandlerFunc(d.Platform.Results)},
	}
	s.routes = append(s.routes, assetProcessorRoutes(tool)...)
	// The {id} of the platforms API is a platform id: the request log line names it.
	platform := func(f http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httpapi.NotePlatform(r.Context(), r.PathValue("id"))
			bearer(f).ServeHTTP(w, r)
		})
	}
	for _, prefix := range []string{"/api/platforms", "/admin/platforms"} {
		s.routes = append(s.routes,
			Route{"GET", prefix, bearer(platforms.List)},
			Route{"POST", prefix, bearer(platforms.Create)},
			Route{"GET", prefix + "/{id}", platform(platforms.Get)},
			Route{"PUT", prefix + "/{id}", platform(platforms.Update)},
			Route{"DELETE", prefix + "/{id}", platform(platforms.Delete)},
			Route{"POST", prefix + "/{id}/activate", platform(platforms.Activate)},
			Route{"POST", prefix + "/{id}/deactivate", platform(platforms.Deactivate)},
			Route{"POST", prefix + "/{id}/check", platform(platforms.Check)},
		)
	}
	if t := d.Tools; t != nil {
		s.routes = append(s.routes,
			Route{"GET", "/api/tools", bearer(t.List)},
			Route{"POST", "/api/tools", bearer(t.Create)},
			Route{"GET", "/api/tools/{id}", bearer(t.Get)},
			Route{"PUT", "/api/tools/{id}", bearer(t.Update)},
			Route{"DELETE", "/api/tools/{id}", bearer(t.Delete)},
			Route{"POST", "/api/tools/{id}/activate", bearer(t.Activate)},
			Route{"POST", "/api/tools/{id}/deactivate", bearer(t.Deactivate)},
		)
	}
	if dr := d.ToolDynReg; dr != nil {
		s.routes = append(s.routes,
			Route{"POST", "/api/tools/registrations", bearer(dr.Start)},
			Route{"GET", paths.PlatformOpenIDConfiguration, http.HandlerFunc(dr.Configuration)},
			Route{"POST", paths.PlatformRegister, http.HandlerFunc(dr.Register)},
			Route{"GET", paths.PlatformRegistrationPage, http.HandlerFunc(dr.Page)},
		)
	}
	mux := http.NewServeMux()
	for i, rt := range s.routes {
		rt.Handler = limits.wrap(rt.Method+" "+rt.Path, rt.Handler)
		s.routes[i] = rt
		mux.Handle(rt.Method+" "+rt.Path, rt.Handler)
	}
	s.handler = observe(log.Log.WithName("http"), httpapi.LimitBody(opts.MaxBodyBytes)(notFoundOrMethod(mux)))
	return s
}

// Routes lists the served endpoints.
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
