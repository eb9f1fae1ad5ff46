package webserver

import (
	"net/http"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// routeTable is every route the server serves.
func (s *Server) routeTable(d Handlers) []Route {
	platforms := d.Platforms
	bearer := func(f http.HandlerFunc) http.Handler { return d.APIKey.RequireBearer(f) }
	tool := d.Tool
	routes := []Route{
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
	routes = append(routes, assetProcessorRoutes(tool)...)
	// The {id} of the platforms API is a platform id: the request log line names it.
	platform := func(f http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httpapi.NotePlatform(r.Context(), r.PathValue("id"))
			bearer(f).ServeHTTP(w, r)
		})
	}
	for _, prefix := range []string{"/api/platforms", "/admin/platforms"} {
		routes = append(routes,
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
		routes = append(routes,
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
		routes = append(routes,
			Route{"POST", "/api/tools/registrations", bearer(dr.Start)},
			Route{"GET", paths.PlatformOpenIDConfiguration, http.HandlerFunc(dr.Configuration)},
			Route{"POST", paths.PlatformRegister, http.HandlerFunc(dr.Register)},
			Route{"GET", paths.PlatformRegistrationPage, http.HandlerFunc(dr.Page)},
		)
	}
	return routes
}

// assetProcessorRoutes are the integrator API of Asset Processor and the EULA service
// (docs/asset-processor.md): an ltik or a service key (or a notice key) opens them.
func assetProcessorRoutes(tool *toolmode.Tool) []Route {
	svc := func(f http.HandlerFunc) http.Handler { return tool.RequireService(f) }
	return []Route{
		{"GET", "/api/assets/{assetId}", svc(tool.DownloadAsset)},
		{"POST", "/api/reports", svc(tool.PostReport)},
		{"GET", "/api/eula", svc(tool.GetEula)},
		{"PUT", "/api/eula", svc(tool.PutEula)},
		{"POST", "/api/eula/acceptance", svc(tool.PostEulaAcceptance)},
		{"DELETE", "/api/eula/acceptance", svc(tool.DeleteEulaAcceptances)},
	}
}
