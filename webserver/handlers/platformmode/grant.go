package platformmode

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// DefaultServiceGrantTTL is how long the service URLs of a launch open. Tools keep them
// (Moodle's grade sync runs long after the launch); each launch hands out fresh ones.
const DefaultServiceGrantTTL = 90 * 24 * time.Hour

// grant is what a service URL carries, sealed: the tool, its client id and deployment at
// the launch, and the context the tool was launched into. A tool's access token opens the
// services of its own grants only, so a launch into course 1 reaches nothing of course 2.
type grant struct {
	ToolID       string `json:"t"`
	ClientID     string `json:"c"`
	DeploymentID string `json:"d"`
	ContextID    string `json:"x"`
}

// serviceURLs seals the grant of a launch of t into contextID and returns the service
// root URL (<publicUrl>/lti/platform/services/<grant>).
func (p *Platform) serviceRoot(t *registry.Tool, contextID string) (string, error) {
	b, err := json.Marshal(&grant{ToolID: t.ID, ClientID: t.ClientID, DeploymentID: t.DeploymentID, ContextID: contextID})
	if err != nil {
		return "", err
	}
	ttl := p.opts.ServiceGrantTTL
	if ttl <= 0 {
		ttl = DefaultServiceGrantTTL
	}
	sealed, err := p.sealer.Seal(sessions.PurposeServiceGrant, b, ttl)
	if err != nil {
		return "", err
	}
	return p.opts.PublicURL + strings.Replace(paths.PlatformServices, "{grant}", sealed, 1), nil
}

// lineItemURL is the URL of the integrator's line item id under a service root.
func lineItemURL(root, id string) string { return root + "/lineitems/" + url.PathEscape(id) }

// call is an authorised service request: the tool, its token's scopes, the grant.
type call struct {
	tool   *registry.Tool
	scopes []string
	grant  grant
	root   string // the service root URL of the grant, for the ids and links of answers
}

// authorise checks a service request (P-NRPS-01..03, P-AGS-01..03): a Bearer access token
// ltiop issued to an active tool and not expired, a grant sealed by ltiop for that same
// tool, client and deployment, and one of the scopes the operation accepts.
func (p *Platform) authorise(w http.ResponseWriter, r *http.Request, accept ...string) (*call, *httpapi.Error) {
	auth := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	switch {
	case auth == "":
		return nil, httpapi.Errorf(http.StatusUnauthorized, httpapi.CodeMissingAuthorization, "An access token is required: Authorization: Bearer <access_token> from the token endpoint.")
	case !strings.EqualFold(scheme, "Bearer") || token == "":
		return nil, httpapi.Errorf(http.StatusUnauthorized, httpapi.CodeInvalidAuthScheme, "The Authorization header must be Bearer <access_token>.")
	}
	now := p.now()
	invalidToken := func(code, desc string) *httpapi.Error {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ltiop", error="invalid_token"`)
		return httpapi.Errorf(http.StatusUnauthorized, code, desc)
	}
	c, ok := p.accessToken(token, now)
	if !ok {
		return nil, invalidToken(ltiplatform.CodeInvalidAccessToken, "The access token is not one this platform issued.")
	}
	if !now.Before(time.Unix(c.ExpiresAt, 0)) {
		return nil, invalidToken(ltiplatform.CodeAccessTokenExpired, "The access token has expired: get a new one from the token endpoint.")
	}
	t := p.tools.Get(c.ToolID)
	if t != nil && t.ClientID != c.ClientID {
		t = nil // a token of an earlier registration of that name: not this one's
	}
	// From here the tool is known (the token is ltiop's): its registration learns of a refusal.
	refuse := func(e *httpapi.Error) (*call, *httpapi.Error) {
		p.refused(t, launchhealth.StepService, e)
		return nil, e
	}
	if !t.Usable() {
		return refuse(invalidToken(CodeToolInactive, "The tool of this access token is inactive, not ready or no longer registered."))
	}
	sealed := r.PathValue("grant")
	b, _, err := p.sealer.Open(sessions.PurposeServiceGrant, sealed, now)
	var g grant
	switch {
	case errors.Is(err, sessions.ErrExpired):
		return refuse(httpapi.Errorf(http.StatusNotFound, ltiplatform.CodeGrantExpired, "This service URL has expired: a new launch gives the tool current ones."))
	case err != nil || json.Unmarshal(b, &g) != nil || g.ContextID == "":
		return refuse(httpapi.Errorf(http.StatusNotFound, ltiplatform.CodeInvalidGrant, "This is not a service URL of this platform."))
	}
	if g.ToolID != t.ID || g.ClientID != t.ClientID {
		return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeGrantOtherTool, "This service URL was given to another tool."))
	}
	if g.DeploymentID != t.DeploymentID || c.DeploymentID != t.DeploymentID {
		return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeDeploymentMismatch, "This service URL or access token is of another deployment of the tool than the one in force."))
	}
	scopes := strings.Fields(c.Scope)
	for _, s := range accept {
		for _, held := range scopes {
			if held == s {
				return &call{tool: t, scopes: scopes, grant: g,
					root: p.opts.PublicURL + strings.Replace(paths.PlatformServices, "{grant}", sealed, 1)}, nil
			}
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ltiop", error="insufficient_scope", scope="`+strings.Join(accept, " ")+`"`)
	return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeInsufficientScope, "The access token lacks the scope this operation needs: "+strings.Join(accept, " or ")+"."))
}
