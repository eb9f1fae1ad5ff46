package webserver

import (
	"net/http"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// Route is one entry of the route table: what answers Method Path, the credential it asks
// for and the rate limit it is held to. The router, the rate limits and the tests all read
// the table; every route is in the OpenAPI document (openapi.json), the LTI wire endpoints
// and the probes included (TestRouteTableIsTheOpenAPIDocument).
type Route struct {
	Method, Path string
	// Handler answers once Auth has let the request through.
	Handler http.HandlerFunc
	// Auth is the credential the route asks for.
	Auth Auth
	// RateLimit is the per-client limit group of a route anyone can reach ("" for none).
	RateLimit RateLimitGroup
	// Unlimited says why a route anyone can reach (AuthNone) has no rate limit.
	Unlimited string
	// SecretPath: the path carries a secret; request logs show the route pattern instead.
	SecretPath bool
	// PlatformParam is the path wildcard holding a platform id, which the request log
	// line names (it reads {platformId} itself).
	PlatformParam string
}

// Auth is the credential a route asks for, named as the OpenAPI document's security
// schemes name it. The router checks Bearer, ltik and service credentials before the
// handler runs.
type Auth string

const (
	// AuthNone is anyone (browsers, LMSs, tools, probes). What the LTI wire protocol
	// signs or seals, the handler checks.
	AuthNone Auth = "none"
	// AuthBearer is the integrator API key (Bearer).
	AuthBearer Auth = "Bearer"
	// AuthLtik is a launch's ltik with the API key (LTIK-AUTH-V2, or the legacy LTIK-AUTH-V1).
	AuthLtik Auth = "LTIK-AUTH-V2"
	// AuthService is what AuthLtik accepts, or a service key (SERVICE-AUTH-V1) or a notice
	// key (NOTICE-AUTH-V1) with the API key.
	AuthService Auth = "SERVICE-AUTH-V1"
	// AuthToolToken is a platform-mode access token from /lti/platform/token
	// (ToolAccessToken). The handler checks it: it answers tools in their wire format.
	AuthToolToken Auth = "ToolAccessToken"
)

// RateLimitGroup is a set of routes sharing one limit (RateLimits) and one bucket per client.
type RateLimitGroup string

// The rate-limit groups, named as their configuration keys (rateLimits.launch, …).
const (
	LimitLaunch            RateLimitGroup = "launch"
	LimitRegister          RateLimitGroup = "register"
	LimitPlatformAuthorize RateLimitGroup = "platformAuthorize"
	LimitPlatformToken     RateLimitGroup = "platformToken"
	LimitOAuth             RateLimitGroup = "oauth"
	LimitNotices           RateLimitGroup = "notices"
)

// routeTable is every route the server serves.
func (s *Server) routeTable(d Handlers) []Route {
	tool, p := d.Tool, d.Platform
	const (
		probe = "a probe: answers from memory and keeps nothing"
		fixed = "a fixed document"
		keys  = "a key set from memory; keeps nothing"
	)
	routes := []Route{
		{Method: "GET", Path: "/healthz", Handler: s.healthz, Auth: AuthNone, Unlimited: probe},
		{Method: "GET", Path: "/livez", Handler: s.healthz, Auth: AuthNone, Unlimited: probe},
		{Method: "GET", Path: "/readyz", Handler: s.readyz, Auth: AuthNone, Unlimited: probe},
		{Method: "GET", Path: "/api/openapi.json", Handler: serveOpenAPI, Auth: AuthNone, Unlimited: fixed},

		// Tool mode: the LMS's launches and key sets, the notices its servers send.
		{Method: "GET", Path: paths.Keys, Handler: d.Keys.ServeHTTP, Auth: AuthNone, Unlimited: keys},
		{Method: "GET", Path: paths.KeySet("{id}"), Handler: d.KeySet.ServeHTTP, Auth: AuthNone, Unlimited: keys},
		{Method: "GET", Path: paths.Login, Handler: tool.Login, Auth: AuthNone, RateLimit: LimitLaunch},
		{Method: "POST", Path: paths.Login, Handler: tool.Login, Auth: AuthNone, RateLimit: LimitLaunch},
		{Method: "POST", Path: paths.Launch, Handler: tool.Launch, Auth: AuthNone, RateLimit: LimitLaunch},
		{Method: "POST", Path: paths.LaunchComplete, Handler: tool.LaunchComplete, Auth: AuthNone, RateLimit: LimitLaunch},
		{Method: "POST", Path: paths.Notices, Handler: tool.Notices, Auth: AuthNone, RateLimit: LimitNotices},

		// Tool mode: the integrator's API of a launch.
		{Method: "GET", Path: "/api/idtoken", Handler: tool.IDToken, Auth: AuthLtik},
		{Method: "GET", Path: "/api/memberships", Handler: tool.Memberships, Auth: AuthService},
		{Method: "GET", Path: "/api/lineitems", Handler: tool.LineItems, Auth: AuthService},
		{Method: "POST", Path: "/api/lineitems", Handler: tool.CreateLineItem, Auth: AuthService},
		{Method: "GET", Path: "/api/lineitems/{id}", Handler: tool.GetLineItem, Auth: AuthService},
		{Method: "PUT", Path: "/api/lineitems/{id}", Handler: tool.UpdateLineItem, Auth: AuthService},
		{Method: "DELETE", Path: "/api/lineitems/{id}", Handler: tool.DeleteLineItem, Auth: AuthService},
		{Method: "POST", Path: "/api/lineitems/{id}/scores", Handler: tool.PostScore, Auth: AuthService},
		{Method: "GET", Path: "/api/lineitems/{id}/scores", Handler: tool.Scores, Auth: AuthService},
		{Method: "GET", Path: "/api/groups", Handler: tool.Groups, Auth: AuthService},
		{Method: "GET", Path: "/api/groupsets", Handler: tool.GroupSets, Auth: AuthService},
		{Method: "GET", Path: "/api/outcomes", Handler: tool.ReadOutcome, Auth: AuthService},
		{Method: "PUT", Path: "/api/outcomes", Handler: tool.ReplaceOutcome, Auth: AuthService},
		{Method: "POST", Path: "/api/outcomes", Handler: tool.ReplaceOutcome, Auth: AuthService},
		{Method: "DELETE", Path: "/api/outcomes", Handler: tool.DeleteOutcome, Auth: AuthService},
		{Method: "POST", Path: "/api/deeplinking/form", Handler: tool.DeepLinkingForm, Auth: AuthLtik},
		{Method: "POST", Path: "/api/deeplinking", Handler: tool.DeepLinkingMessage, Auth: AuthLtik},
		{Method: "POST", Path: "/api/deeplinking/message", Handler: tool.DeepLinkingMessage, Auth: AuthLtik},
		{Method: "GET", Path: "/api/notices/handlers", Handler: tool.NoticeHandlers, Auth: AuthService},
		{Method: "PUT", Path: "/api/notices/handlers", Handler: tool.SetNoticeHandler, Auth: AuthService},
		{Method: "DELETE", Path: "/api/notices/handlers", Handler: tool.DeleteNoticeHandler, Auth: AuthService},
		// Asset Processor and the EULA service (docs/asset-processor.md).
		{Method: "GET", Path: "/api/assets/{assetId}", Handler: tool.DownloadAsset, Auth: AuthService},
		{Method: "POST", Path: "/api/reports", Handler: tool.PostReport, Auth: AuthService},
		{Method: "GET", Path: "/api/eula", Handler: tool.GetEula, Auth: AuthService},
		{Method: "PUT", Path: "/api/eula", Handler: tool.PutEula, Auth: AuthService},
		{Method: "POST", Path: "/api/eula/acceptance", Handler: tool.PostEulaAcceptance, Auth: AuthService},
		{Method: "DELETE", Path: "/api/eula/acceptance", Handler: tool.DeleteEulaAcceptances, Auth: AuthService},

		// Onboarding: dynamic registration (one bucket for both URLs: guessing tokens costs
		// the same as registering) and its pre-approvals.
		{Method: "GET", Path: paths.Register, Handler: d.Onboarding.Register, Auth: AuthNone, RateLimit: LimitRegister},
		{Method: "GET", Path: paths.RegisterWithToken, Handler: d.Onboarding.RegisterWithToken, Auth: AuthNone, RateLimit: LimitRegister,
			SecretPath: true},
		{Method: "GET", Path: paths.CanvasConfiguration, Handler: d.Onboarding.CanvasConfiguration, Auth: AuthNone, Unlimited: fixed},
		{Method: "GET", Path: "/api/registrations/{id}", Handler: d.Onboarding.Get, Auth: AuthBearer},
		{Method: "POST", Path: "/api/registrations/{id}/complete", Handler: d.Onboarding.Complete, Auth: AuthBearer},

		// The OAuth broker for the LMS's own REST API.
		{Method: "GET", Path: "/oauth/start/{platformId}", Handler: d.OAuth.Start, Auth: AuthNone, RateLimit: LimitOAuth},
		{Method: "GET", Path: "/oauth/callback", Handler: d.OAuth.Callback, Auth: AuthNone, RateLimit: LimitOAuth},
		{Method: "POST", Path: "/api/oauth/access-token/{platformId}", Handler: d.OAuth.AccessToken, Auth: AuthBearer},
		{Method: "POST", Path: "/api/oauth/access-token/{platformId}/refresh", Handler: d.OAuth.Refresh, Auth: AuthBearer},

		// Platform mode: the tool's side of its launches and services.
		{Method: "GET", Path: paths.PlatformJWKS, Handler: p.JWKS, Auth: AuthNone, Unlimited: keys},
		{Method: "GET", Path: paths.PlatformAuthorize, Handler: p.Authorize, Auth: AuthNone, RateLimit: LimitPlatformAuthorize},
		{Method: "POST", Path: paths.PlatformAuthorize, Handler: p.Authorize, Auth: AuthNone, RateLimit: LimitPlatformAuthorize},
		{Method: "POST", Path: paths.PlatformToken, Handler: p.Token, Auth: AuthNone, RateLimit: LimitPlatformToken},
		{Method: "POST", Path: paths.PlatformDeepLinkingReturn, Handler: p.DeepLinkingReturn, Auth: AuthNone,
			Unlimited: "opens only a return context ltiop sealed, then the JWT the tool signed"},
		// The service URLs carry the sealed grant of a launch: logs show the pattern.
		{Method: "GET", Path: paths.PlatformServices + "/memberships", Handler: p.Memberships, Auth: AuthToolToken, SecretPath: true},
		{Method: "GET", Path: paths.PlatformServices + "/lineitems", Handler: p.LineItems, Auth: AuthToolToken, SecretPath: true},
		{Method: "POST", Path: paths.PlatformServices + "/lineitems", Handler: p.CreateLineItem, Auth: AuthToolToken, SecretPath: true},
		{Method: "GET", Path: paths.PlatformServices + "/lineitems/{lineItem}", Handler: p.GetLineItem, Auth: AuthToolToken, SecretPath: true},
		{Method: "PUT", Path: paths.PlatformServices + "/lineitems/{lineItem}", Handler: p.UpdateLineItem, Auth: AuthToolToken, SecretPath: true},
		{Method: "DELETE", Path: paths.PlatformServices + "/lineitems/{lineItem}", Handler: p.DeleteLineItem, Auth: AuthToolToken, SecretPath: true},
		{Method: "POST", Path: paths.PlatformServices + "/lineitems/{lineItem}/scores", Handler: p.PostScore, Auth: AuthToolToken, SecretPath: true},
		{Method: "GET", Path: paths.PlatformServices + "/lineitems/{lineItem}/results", Handler: p.Results, Auth: AuthToolToken, SecretPath: true},
		// Platform mode: the integrator's API.
		{Method: "POST", Path: "/api/launches", Handler: p.CreateLaunch, Auth: AuthBearer},
		{Method: "POST", Path: "/api/launches/idtoken", Handler: p.AnswerLaunch, Auth: AuthBearer},
		{Method: "POST", Path: "/api/launches/content-items", Handler: p.ContentItems, Auth: AuthBearer},
		{Method: "POST", Path: "/api/tokens/introspect", Handler: p.Introspect, Auth: AuthBearer},
	}

	// The registrations API, under its name and its older alias.
	for _, prefix := range []string{"/api/platforms", "/admin/platforms"} {
		a := d.Platforms
		routes = append(routes,
			Route{Method: "GET", Path: prefix, Handler: a.List, Auth: AuthBearer},
			Route{Method: "POST", Path: prefix, Handler: a.Create, Auth: AuthBearer},
			Route{Method: "GET", Path: prefix + "/{id}", Handler: a.Get, Auth: AuthBearer, PlatformParam: "id"},
			Route{Method: "PUT", Path: prefix + "/{id}", Handler: a.Update, Auth: AuthBearer, PlatformParam: "id"},
			Route{Method: "DELETE", Path: prefix + "/{id}", Handler: a.Delete, Auth: AuthBearer, PlatformParam: "id"},
			Route{Method: "POST", Path: prefix + "/{id}/activate", Handler: a.Activate, Auth: AuthBearer, PlatformParam: "id"},
			Route{Method: "POST", Path: prefix + "/{id}/deactivate", Handler: a.Deactivate, Auth: AuthBearer, PlatformParam: "id"},
			Route{Method: "POST", Path: prefix + "/{id}/check", Handler: a.Check, Auth: AuthBearer, PlatformParam: "id"},
		)
	}
	if t := d.Tools; t != nil {
		routes = append(routes,
			Route{Method: "GET", Path: "/api/tools", Handler: t.List, Auth: AuthBearer},
			Route{Method: "POST", Path: "/api/tools", Handler: t.Create, Auth: AuthBearer},
			Route{Method: "GET", Path: "/api/tools/{id}", Handler: t.Get, Auth: AuthBearer},
			Route{Method: "PUT", Path: "/api/tools/{id}", Handler: t.Update, Auth: AuthBearer},
			Route{Method: "DELETE", Path: "/api/tools/{id}", Handler: t.Delete, Auth: AuthBearer},
			Route{Method: "POST", Path: "/api/tools/{id}/activate", Handler: t.Activate, Auth: AuthBearer},
			Route{Method: "POST", Path: "/api/tools/{id}/deactivate", Handler: t.Deactivate, Auth: AuthBearer},
		)
	}
	if dr := d.ToolDynReg; dr != nil {
		routes = append(routes,
			Route{Method: "POST", Path: "/api/tools/registrations", Handler: dr.Start, Auth: AuthBearer},
			Route{Method: "GET", Path: paths.PlatformOpenIDConfiguration, Handler: dr.Configuration, Auth: AuthNone, Unlimited: fixed},
			// A tool registering with ltiop as the platform: the bucket of /lti/register.
			Route{Method: "POST", Path: paths.PlatformRegister, Handler: dr.Register, Auth: AuthNone, RateLimit: LimitRegister},
			Route{Method: "GET", Path: paths.PlatformRegistrationPage, Handler: dr.Page, Auth: AuthNone, RateLimit: LimitRegister},
		)
	}
	return routes
}

// handler is what the router serves for rt: Handler behind the credential check, then the
// platform note for the request log, then the rate limit.
func (rt Route) handler(d Handlers, limits *rateLimits) http.Handler {
	var h http.Handler
	switch rt.Auth {
	case AuthNone, AuthToolToken:
		h = rt.Handler
	case AuthBearer:
		h = d.APIKey.RequireBearer(rt.Handler)
	case AuthLtik:
		h = d.Tool.RequireLtik(rt.Handler)
	case AuthService:
		h = d.Tool.RequireService(rt.Handler)
	default:
		panic("route table: " + rt.Method + " " + rt.Path + " has no known Auth (" + string(rt.Auth) + ")")
	}
	if param := rt.PlatformParam; param != "" {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httpapi.NotePlatform(r.Context(), r.PathValue(param))
			inner.ServeHTTP(w, r)
		})
	}
	return limits.wrap(rt.RateLimit, h)
}
