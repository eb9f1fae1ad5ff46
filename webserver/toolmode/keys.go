// Package toolmode serves the endpoints an LMS calls when ltiop acts as its tool.
// So far: the tool's public key set.
package toolmode

import (
	"net/http"

	"github.com/ltiop/ltiop/webserver/registry"
)

// Keys serves GET /lti/keys: the public key of every active registration (T-JWKS-04). The bytes
// are marshalled once per change by the registry, not per request.
func Keys(reg *registry.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/jwk-set+json")
		h.Set("X-Content-Type-Options", "nosniff")
		// LMSs cache key sets; a short max-age keeps a new registration's key visible soon.
		h.Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(reg.JWKS())
	})
}
