package platformmode

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
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

// grant is what a service URL carries, sealed: the tool (its registration's name, UID and
// client id), its deployment at the launch, the context the tool was launched into, and
// what the launch offered. A tool's access token opens the services of its own grants
// only, so a launch into course 1 reaches nothing of course 2, and a launch that offered
// no roster reaches no roster.
type grant struct {
	ToolID       string `json:"t"`
	ToolUID      string `json:"u"`
	ClientID     string `json:"c"`
	DeploymentID string `json:"d"`
	ContextID    string `json:"x"`
	// Offered is the set of scopes the launch offered (offerBits), kept short: the grant
	// is in every service URL a tool stores.
	Offered uint8 `json:"o"`
	// LineItem is the only line item offered (lineItemOnly), empty when the tool may use
	// the context's line items.
	LineItem string `json:"l,omitempty"`
}

// offerBits are the scopes a grant can offer, one bit each.
var offerBits = [...]string{ltiwire.ScopeMembershipReadOnly, ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly,
	ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore}

func offerMask(scopes ...string) uint8 {
	var m uint8
	for i, s := range offerBits {
		if slices.Contains(scopes, s) {
			m |= 1 << i
		}
	}
	return m
}

// offers reports whether the grant offered scope.
func (g *grant) offers(scope string) bool {
	i := slices.Index(offerBits[:], scope)
	return i >= 0 && g.Offered&(1<<i) != 0
}

// serviceRoot seals the grant of a launch of t offering o and returns the service root
// URL (<publicUrl>/lti/platform/services/<grant>).
func (p *Platform) serviceRoot(t *registry.Tool, o ltiplatform.ServiceOffer) (string, error) {
	g := grant{ToolID: t.ID, ToolUID: string(t.UID), ClientID: t.ClientID, DeploymentID: t.DeploymentID,
		ContextID: o.ContextID, Offered: offerMask(o.AGSScopes...), LineItem: o.LineItemID}
	if o.NamesAndRoles {
		g.Offered |= offerMask(ltiwire.ScopeMembershipReadOnly)
	}
	b, err := json.Marshal(&g)
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
	return p.rootURL(sealed), nil
}

// rootURL is the service root URL of a sealed grant.
func (p *Platform) rootURL(sealed string) string {
	return p.opts.PublicURL + strings.Replace(paths.PlatformServices, "{grant}", sealed, 1)
}

// lineItemURL is the URL of the integrator's line item id under a service root.
func lineItemURL(root, id string) string { return root + "/lineitems/" + url.PathEscape(id) }

// call is an authorised service request: the tool, the grant, the grant's root URL.
type call struct {
	tool  *registry.Tool
	grant grant
	root  string // the service root URL of the grant, for the ids and links of answers
}

// authorise checks a service request (P-NRPS-01..03, P-AGS-01..03): a Bearer access token
// ltiop issued to this registration of an active tool (its UID: a tool deleted and made
// again under the same names is another) and not expired; a grant sealed by ltiop for that
// same registration, client and deployment; and one of the scopes the operation accepts,
// held at once by the token, by the registration now, and by what the launch offered.
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
	t := p.tokenTool(c)
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
	case err != nil || json.Unmarshal(b, &g) != nil || g.ContextID == "" || g.ToolUID == "":
		return refuse(httpapi.Errorf(http.StatusNotFound, ltiplatform.CodeInvalidGrant, "This is not a service URL of this platform."))
	}
	if g.ToolID != t.ID || g.ClientID != t.ClientID || g.ToolUID != string(t.UID) {
		return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeGrantOtherTool, "This service URL was given to another tool, or to an earlier registration of this one."))
	}
	if g.DeploymentID != t.DeploymentID || c.DeploymentID != t.DeploymentID {
		return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeDeploymentMismatch, "This service URL or access token is of another deployment of the tool than the one in force."))
	}
	held := strings.Fields(c.Scope)
	var inToken, inRegistration bool
	for _, s := range accept {
		if !slices.Contains(held, s) {
			continue
		}
		inToken = true
		if !slices.Contains(t.Scopes(), s) { // removed from the registration since the token
			continue
		}
		inRegistration = true
		if g.offers(s) {
			return &call{tool: t, grant: g, root: p.rootURL(sealed)}, nil
		}
	}
	want := strings.Join(accept, " or ")
	switch {
	case !inToken:
		w.Header().Set("WWW-Authenticate", `Bearer realm="ltiop", error="insufficient_scope", scope="`+strings.Join(accept, " ")+`"`)
		return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeInsufficientScope, "The access token lacks the scope this operation needs: "+want+"."))
	case !inRegistration:
		w.Header().Set("WWW-Authenticate", `Bearer realm="ltiop", error="insufficient_scope", scope="`+strings.Join(accept, " ")+`"`)
		return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeInsufficientScope, "The tool's registration no longer holds the scope this operation needs: "+want+"."))
	}
	return refuse(httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeServiceNotOffered,
		"The launch that gave this service URL did not offer this operation (it needs "+want+"): the platform chooses what each launch offers."))
}

// tokenTool is the registration an access token was issued to: nil when the tool is gone,
// or was made again under the same name (another UID or client id).
func (p *Platform) tokenTool(c *accessTokenClaims) *registry.Tool {
	t := p.tools.Get(c.ToolID)
	if t == nil || t.ClientID != c.ClientID || string(t.UID) != c.ToolUID {
		return nil
	}
	return t
}

// currentScopes is the scope of the access token c that the registration t still holds.
func currentScopes(c *accessTokenClaims, t *registry.Tool) string {
	held := strings.Fields(c.Scope)
	kept := held[:0]
	for _, s := range held {
		if slices.Contains(t.Scopes(), s) {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, " ")
}

// checkLineItem refuses a line item the grant does not offer: when the launch offered one
// line item only (lineItemOnly), every other one, and the container (id "").
func (g *grant) checkLineItem(id string) *httpapi.Error {
	if g.LineItem == "" || id == g.LineItem {
		return nil
	}
	if id == "" {
		return httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeLineItemNotOffered,
			"The launch that gave this service URL offered one line item only (its lineitem URL), not the line items of the context.")
	}
	return httpapi.Errorf(http.StatusForbidden, ltiplatform.CodeLineItemNotOffered,
		"The launch that gave this service URL offered another line item only (its lineitem URL).")
}
