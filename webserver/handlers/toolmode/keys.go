// Package toolmode serves the endpoints an LMS calls when ltiop acts as its tool.
// So far: the tool's public key sets.
package toolmode

import (
	"fmt"
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/precomputed"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// keySetMaxAge is how long an LMS may cache a key set. Short, so a new or rotated key is
// seen soon; ETag revalidation makes the refetch cheap.
const keySetMaxAge = "public, max-age=300"

// Keys serves GET /lti/keys: the public key of every active registration (T-JWKS-04), for installs
// whose LMSs were given this URL before registrations had their own. The registry rebuilds
// it in the background after a change; a request gets the last build at once, and one
// that is behind a change is marked no-cache, so no LMS keeps it.
func Keys(reg *registry.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set, fresh := reg.JWKS()
		cacheControl := keySetMaxAge
		if !fresh {
			cacheControl = "no-cache"
		}
		serveKeySet(w, r, set, cacheControl)
	})
}

// KeySet serves GET /lti/keys/{id}: one registration's own keys (T-JWKS-04), the URL in
// its status.jwksUrl. The document is built when the key changes, not per request.
func KeySet(reg *registry.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		set, found := reg.KeySet(id)
		switch {
		case !found:
			httpapi.WriteError(w, httpapi.Errorf(http.StatusNotFound, httpapi.CodeKeySetNotFound,
				fmt.Sprintf("No registration has the key set %q.", id)))
		case set == nil:
			// T-JWKS-03: an LMS treats a 5xx as passing, not as a key set without keys.
			w.Header().Set("Retry-After", "1")
			httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady,
				fmt.Sprintf("The key of registration %q is not made yet; try again in a moment.", id)))
		default:
			serveKeySet(w, r, set, keySetMaxAge)
		}
	})
}

func serveKeySet(w http.ResponseWriter, r *http.Request, set *precomputed.Body, cacheControl string) {
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", cacheControl)
	set.Serve(w, r)
}
