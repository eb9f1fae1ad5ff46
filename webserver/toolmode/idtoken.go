package toolmode

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/ltiop/ltiop/webserver/httpapi"
	"github.com/ltiop/ltiop/webserver/lti"
	"github.com/ltiop/ltiop/webserver/sessions"
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
func (t *Tool) RequireLtik(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiKey, ltik, ok := parseLtikAuth(r.Header.Get("Authorization"))
		if !ok {
			httpapi.WriteError(w, invalidLtikAuth("The Authorization header must be LTIK-AUTH-V2 <API_KEY>:<ltik>."))
			return
		}
		if err := t.apiKey.Check(apiKey); err != nil {
			if err.Status == http.StatusUnauthorized {
				err = invalidLtikAuth("The API key or the ltik is invalid, or the ltik has expired.")
			}
			httpapi.WriteError(w, err)
			return
		}
		payload, _, err := t.keyring.Open(sessions.PurposeLTIK, ltik, t.now())
		var launch *Launch
		if err == nil {
			launch, err = decodeLaunch(payload)
		}
		if err != nil {
			httpapi.WriteError(w, invalidLtikAuth("The API key or the ltik is invalid, or the ltik has expired."))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), launchKey{}, launch)))
	})
}

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
		if err := json.Unmarshal(launch.Claims, &claims); err != nil {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The launch claims could not be read."))
			return
		}
		claims["ltiVersion"] = json.RawMessage(`"1.3.0"`)
		httpapi.WriteJSON(w, http.StatusOK, claims)
		return
	}
	claims, err := lti.ParseValidatedClaims(launch.Claims)
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The launch claims could not be read."))
		return
	}
	info := lti.PlatformInfo{ID: launch.PlatformID, URL: launch.Issuer, ClientID: launch.ClientID, Name: launch.PlatformID}
	if p := t.registry.Get(launch.PlatformID); p != nil {
		info.Name = p.Spec.Name
	}
	token := lti.SimplifiedIDToken(claims, info)
	if token.Launch != nil && token.Launch.Target == "" {
		token.Launch.Target = launch.TargetLinkURI
	}
	httpapi.WriteJSON(w, http.StatusOK, token)
}
