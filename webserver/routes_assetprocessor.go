package webserver

import (
	"net/http"

	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

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
