package toolmode

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// CodeInvalidLtikAuth is the one code of every LTIK authentication failure (service
// interface §7): the caller learns nothing about which part was wrong.
const CodeInvalidLtikAuth = "INVALID_LTIK_AUTH_AUTHORIZATION_HEADER"

type launchKey struct{}

// LaunchFrom returns the launch authenticated by RequireLtik.
func LaunchFrom(ctx context.Context) *Launch {
	l, _ := ctx.Value(launchKey{}).(*Launch)
	return l
}

// RequireLtik admits requests with "Authorization: LTIK-AUTH-V2 <API_KEY>:<ltik>" or the
// legacy "LTIK-AUTH-V1 Token=<ltik>, Additional=Bearer <API_KEY>", and puts the launch in
// the request context.
func (t *Tool) RequireLtik(next http.Handler) http.Handler { return t.requireGrant(next, false) }

func invalidLtikAuth(description string) *httpapi.Error {
	return httpapi.Errorf(http.StatusUnauthorized, CodeInvalidLtikAuth, description)
}

// parseLtikAuth reads both LTIK schemes. The ltik never contains ':' (base64url and dots),
// so the last ':' separates it from the API key.
func parseLtikAuth(h string) (apiKey, ltik string, ok bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "LTIK-AUTH-V2"):
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 || i == len(rest)-1 {
			return "", "", false
		}
		return rest[:i], rest[i+1:], true
	case strings.EqualFold(scheme, "LTIK-AUTH-V1"):
		// Token=<ltik>, Additional=Bearer <API_KEY>
		for _, part := range strings.Split(rest, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch strings.ToLower(name) {
			case "token":
				ltik = strings.TrimSpace(value)
			case "additional":
				if s, key, found := strings.Cut(strings.TrimSpace(value), " "); found && strings.EqualFold(s, "Bearer") {
					apiKey = strings.TrimSpace(key)
				}
			}
		}
		return apiKey, ltik, apiKey != "" && ltik != ""
	}
	return "", "", false
}

// IDToken serves GET /api/idtoken: the launch's simplified ID token (service interface
// §2.3), or with raw=true the platform's claims as received.
func (t *Tool) IDToken(w http.ResponseWriter, r *http.Request) {
	launch := LaunchFrom(r.Context())
	if raw := r.URL.Query().Get("raw"); raw == "true" || raw == "1" {
		var claims map[string]json.RawMessage
		var err error
		if launch.LTIVersion != "" {
			claims, err = rawLTI11(launch.Claims) // idtoken11.go
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
	g := grantFrom(r.Context())
	claims := g.claims
	info := lti.PlatformInfo{ID: launch.PlatformID, URL: launch.Issuer, ClientID: launch.ClientID, Name: launch.PlatformID}
	if p := t.registry.Get(launch.PlatformID); p != nil {
		info.Name = p.Spec.Name
	}
	token := lti.SimplifiedIDToken(claims, info)
	if token.Launch != nil && token.Launch.Target == "" {
		token.Launch.Target = launch.TargetLinkURI
	}
	key, err := t.serviceKeyFor(launch, g)
	if err != nil {
		httpapi.WriteError(w, sessions.ErrSealingNotReady)
		return
	}
	token.Services.ServiceKey = key
	t.addLTI11(token, launch, claims, g)
	httpapi.WriteJSON(w, http.StatusOK, token)
}
