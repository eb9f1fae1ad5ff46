package toolmode

import (
	"encoding/json"
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// RequireLtik admits requests with "Authorization: LTIK-AUTH-V2 <API_KEY>:<ltik>" or the
// legacy "LTIK-AUTH-V1 Token=<ltik>, Additional=Bearer <API_KEY>", and puts the launch's
// grant in the request context (credential.go).
func (t *Tool) RequireLtik(next http.Handler) http.Handler {
	return t.authenticator().require(next, false)
}

// IDToken serves GET /api/idtoken: the launch's simplified ID token (service interface
// §2.3), or with raw=true the platform's claims as received.
func (t *Tool) IDToken(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	launch := g.launch
	if raw := r.URL.Query().Get("raw"); raw == "true" || raw == "1" {
		var claims map[string]json.RawMessage
		var err error
		if launch.LTIVersion != "" {
			claims, err = lti11.RawParams(launch.Claims)
			if err == nil {
				httpapi.WriteJSON(w, http.StatusOK, claims)
				return
			}
		} else {
			err = json.Unmarshal(launch.Claims, &claims)
		}
		if err != nil {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The launch claims could not be read."))
			return
		}
		claims["ltiVersion"] = json.RawMessage(`"1.3.0"`)
		httpapi.WriteJSON(w, http.StatusOK, claims)
		return
	}
	claims := g.claims
	info := lti.PlatformInfo{ID: launch.PlatformID, URL: launch.Issuer, ClientID: launch.ClientID, Name: launch.PlatformID}
	if p := t.registry.Get(launch.PlatformID); p != nil {
		info.Name = p.Spec.Name
	}
	token := lti.SimplifiedIDToken(claims, info)
	if token.Launch != nil && token.Launch.Target == "" {
		token.Launch.Target = launch.TargetLinkURI
	}
	key, err := t.auth.serviceKey(g)
	if err != nil {
		httpapi.WriteError(w, sessions.ErrSealingNotReady)
		return
	}
	token.Services.ServiceKey = key
	t.addLTI11(token, launch, claims, g)
	httpapi.WriteJSON(w, http.StatusOK, token)
}
