package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/internal/urls"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/writes"
)

// ToolDynReg is LTI Dynamic Registration 1.0 with ltiop as the platform: the integrator
// starts a registration (POST /api/tools/registrations) and gets a one-time registration
// token and the URL to open; the tool reads ltiop's platform OpenID configuration and posts
// its registration, which becomes a ToolRegistration (inactive unless pre-approved).
//
// Nothing is stored before a registration: the token is sealed, and used once (the
// replay store) when a registration succeeds.
type ToolDynReg struct {
	Tools   *Tools
	Sealer  *sessions.Keyring
	Replays replay.Store
	// Issuer is the platform issuer; PublicURL ltiop's external base URL.
	Issuer, PublicURL string
	// Outbound is dynamic registration's outbound policy (dynamicRegistration.allowCidrs):
	// the tool's key set URL must pass it, since it is fetched under it (the origin label
	// the registration gets). The zero value is the production policy.
	Outbound outbound.Policy
	// TokenTTL is how long a registration token opens (DefaultRegistrationTokenTTL when 0).
	TokenTTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultRegistrationTokenTTL bounds the time between starting a registration and the
// tool posting it: the person registering the tool is at the tool's page meanwhile.
const DefaultRegistrationTokenTTL = time.Hour

// Codes of the registration endpoint.
const (
	CodeInvalidRegistrationToken = "INVALID_REGISTRATION_TOKEN"
	CodeRegistrationTokenUsed    = "REGISTRATION_TOKEN_ALREADY_USED"
	CodeInvalidClientMetadata    = "INVALID_CLIENT_METADATA"
)

func (d *ToolDynReg) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// StartRequest is the body of POST /api/tools/registrations.
type StartRequest struct {
	// InitiationURL is the tool's registration initiation URL.
	InitiationURL string `json:"initiationUrl"`
	// PreApproved makes the registration active at once; otherwise activate it
	// (POST /api/tools/{id}/activate) once someone approved it.
	PreApproved bool `json:"preApproved,omitempty"`
	// ToolID, when given, is the ID (metadata.name) the registration gets; else one is
	// generated (tool-…).
	ToolID string `json:"toolId,omitempty"`
	// Scopes, when given, caps the scopes the tool may get: it is granted those it asks
	// for that are listed here ([] grants none). Absent: any ltiop serves (knownScopes).
	Scopes *[]string `json:"scopes,omitempty"`
}

// StartAnswer is the answer of POST /api/tools/registrations.
type StartAnswer struct {
	RegistrationToken   string `json:"registrationToken"`
	OpenIDConfiguration string `json:"openidConfiguration"`
	URL                 string `json:"url"`
	// PageURL is ltiop's registration page, which frames URL and passes the tool's
	// org.imsglobal.lti.close on to the window that opened it: tools post that message to
	// the platform issuer's origin, which is ltiop's, not the integrator's.
	PageURL   string    `json:"pageUrl"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type registrationGrant struct {
	PreApproved bool   `json:"p,omitempty"`
	ToolID      string `json:"t,omitempty"`
	// Scopes is StartRequest.Scopes: nil when the integrator set no cap.
	Scopes *[]string `json:"s,omitempty"`
	// InitiationURL is the tool's initiation URL with its parameters: what the
	// registration page frames.
	InitiationURL string `json:"u,omitempty"`
}

// Start answers POST /api/tools/registrations (Bearer).
func (d *ToolDynReg) Start(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	if err := urls.Check(req.InitiationURL, d.Tools.DevMode); err != nil {
		httpapi.WriteError(w, badParameter("initiationUrl: "+err.Error()+"."))
		return
	}
	if req.ToolID != "" {
		if msgs := validation.IsDNS1123Subdomain(req.ToolID); len(msgs) > 0 {
			httpapi.WriteError(w, badParameter("toolId: "+strings.Join(msgs, "; ")+"."))
			return
		}
		if d.Tools.Registry.Get(req.ToolID) != nil {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusConflict, CodeToolExists, "A tool with the ID "+req.ToolID+" exists."))
			return
		}
	}
	if req.Scopes != nil {
		for i, sc := range *req.Scopes {
			if !slices.Contains(knownScopes, ltiv1.Scope(sc)) {
				httpapi.WriteError(w, badParameter(fmt.Sprintf("scopes[%d]: %q is not an NRPS or AGS scope.", i, sc)))
				return
			}
		}
	}
	ttl := d.TokenTTL
	if ttl <= 0 {
		ttl = DefaultRegistrationTokenTTL
	}
	config := strings.TrimRight(d.PublicURL, "/") + paths.PlatformOpenIDConfiguration
	u, _ := url.Parse(req.InitiationURL) // checked above
	q := u.Query()
	q.Set("openid_configuration", config)
	// The token goes into the initiation URL, which goes into the token: seal a first token
	// for the URL, then the page's token with the URL in it. Both open the registration.
	b, _ := json.Marshal(registrationGrant{PreApproved: req.PreApproved, ToolID: req.ToolID, Scopes: req.Scopes}) // a bool and strings: cannot fail
	token, err := d.Sealer.Seal(sessions.PurposeToolRegistration, b, ttl)
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The sealing keys are not loaded yet."))
		return
	}
	q.Set("registration_token", token)
	u.RawQuery = q.Encode()
	b, _ = json.Marshal(registrationGrant{InitiationURL: u.String()})
	page, err := d.Sealer.Seal(sessions.PurposeToolRegistration, b, ttl)
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady, "The sealing keys are not loaded yet."))
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, StartAnswer{RegistrationToken: token, OpenIDConfiguration: config, URL: u.String(),
		PageURL:   strings.TrimRight(d.PublicURL, "/") + paths.PlatformRegistrationPage + "?" + url.Values{"page": {page}}.Encode(),
		ExpiresAt: d.now().Add(ttl).UTC().Truncate(time.Second)})
}

var registrationPage = template.Must(template.New("registration").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Registering a tool</title>
<style>html,body{margin:0;height:100%}iframe{border:0;width:100%;height:100%}</style></head>
<body><iframe id="tool" src="{{.URL}}" title="Tool registration"></iframe>
<script nonce="{{.Nonce}}">
window.addEventListener('message', function (e) {
  if (e.source !== document.getElementById('tool').contentWindow || !e.data || e.data.subject !== 'org.imsglobal.lti.close') { return }
  var to = window.opener || window.parent
  if (to && to !== window) { to.postMessage({subject: 'org.imsglobal.lti.close'}, '*') }
})
</script></body></html>`))

// Page answers GET /lti/platform/registration?page=…: the page that frames the tool's
// registration and relays its closing message to the integrator's window. Only a page
// token ltiop sealed opens it: it frames no other URL than the one the integrator started.
func (d *ToolDynReg) Page(w http.ResponseWriter, r *http.Request) {
	o, err := d.Sealer.OpenToken(sessions.PurposeToolRegistration, r.URL.Query().Get("page"), d.now())
	var g registrationGrant
	if err != nil || json.Unmarshal(o.Payload, &g) != nil || g.InitiationURL == "" {
		httpapi.WriteErrorPage(w, r, httpapi.Errorf(http.StatusBadRequest, CodeInvalidRegistrationToken,
			"This registration link is not one of this platform, or it expired: start the registration again."), "Registration link not valid")
		return
	}
	u, _ := url.Parse(g.InitiationURL) // sealed by Start, which checked it
	nonce := httpapi.RandomToken(16)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-"+nonce+"'; frame-src "+u.Scheme+"://"+u.Host+"; base-uri 'none'; form-action 'none'")
	w.WriteHeader(http.StatusOK)
	_ = registrationPage.Execute(w, map[string]string{"URL": g.InitiationURL, "Nonce": nonce})
}

type messageSupported struct {
	Type       string   `json:"type"`
	Placements []string `json:"placements,omitempty"`
}

// platformConfiguration is ltiop's platform OpenID configuration (LTI DR 1.0 §3.4).
type platformConfiguration struct {
	Issuer                   string                   `json:"issuer"`
	AuthorizationEndpoint    string                   `json:"authorization_endpoint"`
	TokenEndpoint            string                   `json:"token_endpoint"`
	TokenAuthMethods         []string                 `json:"token_endpoint_auth_methods_supported"`
	TokenAuthSigningAlgs     []string                 `json:"token_endpoint_auth_signing_alg_values_supported"`
	JWKSURI                  string                   `json:"jwks_uri"`
	RegistrationEndpoint     string                   `json:"registration_endpoint"`
	ScopesSupported          []string                 `json:"scopes_supported"`
	ResponseTypesSupported   []string                 `json:"response_types_supported"`
	SubjectTypesSupported    []string                 `json:"subject_types_supported"`
	IDTokenSigningAlgs       []string                 `json:"id_token_signing_alg_values_supported"`
	ClaimsSupported          []string                 `json:"claims_supported"`
	LTIPlatformConfiguration ltiPlatformConfiguration `json:"https://purl.imsglobal.org/spec/lti-platform-configuration"`
}

type ltiPlatformConfiguration struct {
	ProductFamilyCode string             `json:"product_family_code"`
	Version           string             `json:"version"`
	MessagesSupported []messageSupported `json:"messages_supported"`
	Variables         []string           `json:"variables"`
}

// substitutionVariables are those ltiplatform.MergeCustom fills in.
var substitutionVariables = []string{"User.id", "User.username", "User.image", "Person.name.full", "Person.name.given",
	"Person.name.family", "Person.name.middle", "Person.email.primary", "Membership.role", "Context.id", "Context.label",
	"Context.title", "Context.type", "ResourceLink.id", "ResourceLink.title", "ResourceLink.description"}

func scopeStrings() []string {
	out := make([]string, len(knownScopes))
	for i, s := range knownScopes {
		out[i] = string(s)
	}
	return out
}

// Configuration answers GET /lti/platform/openid-configuration: public, as the tool reads it
// before registering.
func (d *ToolDynReg) Configuration(w http.ResponseWriter, _ *http.Request) {
	base := strings.TrimRight(d.PublicURL, "/")
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpapi.WriteJSON(w, http.StatusOK, platformConfiguration{
		Issuer: d.Issuer, AuthorizationEndpoint: base + paths.PlatformAuthorize, TokenEndpoint: base + paths.PlatformToken,
		TokenAuthMethods: []string{"private_key_jwt"}, TokenAuthSigningAlgs: []string{"RS256"}, JWKSURI: base + paths.PlatformJWKS,
		RegistrationEndpoint: base + paths.PlatformRegister, ScopesSupported: append([]string{"openid"}, scopeStrings()...),
		ResponseTypesSupported: []string{"id_token"}, SubjectTypesSupported: []string{"public"}, IDTokenSigningAlgs: []string{"RS256"},
		ClaimsSupported: []string{"iss", "sub", "aud", "name", "given_name", "family_name", "middle_name", "email", "picture", "locale"},
		LTIPlatformConfiguration: ltiPlatformConfiguration{ProductFamilyCode: "ltiop", Version: "1",
			MessagesSupported: []messageSupported{{Type: "LtiResourceLinkRequest"}, {Type: "LtiDeepLinkingRequest"}, {Type: "LtiSubmissionReviewRequest"}},
			Variables:         substitutionVariables},
	})
}

// toolMessage is a message of the tool's configuration.
type toolMessage struct {
	Type          string `json:"type"`
	TargetLinkURI string `json:"target_link_uri,omitempty"`
}

type toolConfiguration struct {
	Domain string `json:"domain"`
	// Scopes is where Moodle's enrol_lti puts the scopes it asks for (an array), rather
	// than the registration's scope string: both are read.
	Scopes           []string         `json:"scopes,omitempty"`
	TargetLinkURI    string           `json:"target_link_uri"`
	CustomParameters customParameters `json:"custom_parameters,omitempty"`
	Claims           []string         `json:"claims,omitempty"`
	Messages         []toolMessage    `json:"messages,omitempty"`
	Description      string           `json:"description,omitempty"`
	DeploymentID     string           `json:"deployment_id,omitempty"`
}

// customParameters are the tool's custom parameters: an object, or (PHP's empty array, as
// Moodle sends it) [].
type customParameters map[string]string

// UnmarshalJSON reads an object of strings, or an empty array as none.
func (c *customParameters) UnmarshalJSON(b []byte) error {
	if t := strings.TrimSpace(string(b)); t == "[]" || t == "null" {
		*c = nil
		return nil
	}
	return json.Unmarshal(b, (*map[string]string)(c))
}

// clientRegistration is the tool's registration request and, with client_id, the answer.
type clientRegistration struct {
	ClientID                string            `json:"client_id,omitempty"`
	ApplicationType         string            `json:"application_type"`
	ResponseTypes           []string          `json:"response_types"`
	GrantTypes              []string          `json:"grant_types"`
	InitiateLoginURI        string            `json:"initiate_login_uri"`
	RedirectURIs            []string          `json:"redirect_uris"`
	ClientName              string            `json:"client_name"`
	JWKSURI                 string            `json:"jwks_uri"`
	LogoURI                 string            `json:"logo_uri,omitempty"`
	TokenEndpointAuthMethod string            `json:"token_endpoint_auth_method"`
	Scope                   string            `json:"scope,omitempty"`
	ToolConfiguration       toolConfiguration `json:"https://purl.imsglobal.org/spec/lti-tool-configuration"`
}

// oidcRegistrationError is the error form of OpenID Connect Dynamic Client Registration.
type oidcRegistrationError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

func registrationError(w http.ResponseWriter, status int, code, desc string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	}
	oauth := "invalid_client_metadata"
	if code != CodeInvalidClientMetadata && code != httpapi.CodeURLNotAllowed {
		oauth = "invalid_token"
	}
	httpapi.WriteJSON(w, status, oidcRegistrationError{Error: oauth, ErrorDescription: code + ": " + desc})
}

// Register answers POST /lti/platform/register: the tool's registration request with the
// registration token as Bearer. It validates the request (the redirect URIs, key set URL,
// scopes, messages, custom parameters), creates the ToolRegistration (active only when
// pre-approved, labelled as dynamic registration's) and answers the registration with
// client_id, deployment_id and the scopes granted: those asked for within the cap the
// integrator set when starting it.
func (d *ToolDynReg) Register(w http.ResponseWriter, r *http.Request) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		registrationError(w, http.StatusUnauthorized, CodeInvalidRegistrationToken, "the registration token is required as Bearer.")
		return
	}
	now := d.now()
	o, err := d.Sealer.OpenToken(sessions.PurposeToolRegistration, strings.TrimSpace(token), now)
	var g registrationGrant
	if err != nil || json.Unmarshal(o.Payload, &g) != nil || g.InitiationURL != "" { // a page's token registers nothing
		registrationError(w, http.StatusUnauthorized, CodeInvalidRegistrationToken, "not a registration token of this platform, or expired.")
		return
	}
	// Tolerant of members ltiop does not use (OpenID Connect registration has many; tools
	// add label, placements, allowLearner… to their messages): unlike the API's bodies.
	var req clientRegistration
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		registrationError(w, http.StatusBadRequest, CodeInvalidClientMetadata, "the registration must be application/json.")
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		registrationError(w, http.StatusBadRequest, CodeInvalidClientMetadata, "the registration is not a JSON object of the registration's shape.")
		return
	}
	treq, problem := req.toToolRequest(g.PreApproved)
	if problem != "" {
		registrationError(w, http.StatusBadRequest, CodeInvalidClientMetadata, problem)
		return
	}
	if g.Scopes != nil { // the integrator's cap: what it leaves out is not granted (DR 1.0 §3.6.2)
		treq.Scopes = slices.DeleteFunc(treq.Scopes, func(s string) bool { return !slices.Contains(*g.Scopes, s) })
	}
	spec, he := d.Tools.validate(treq, nil)
	if he != nil {
		registrationError(w, http.StatusBadRequest, CodeInvalidClientMetadata, he.Description)
		return
	}
	// The key set is the one URL of the tool that ltiop fetches itself (the login,
	// redirect and target link URLs only the browser visits): the registration is
	// labelled as dynamic registration's, so it is fetched under that policy, which it
	// must pass now rather than fail at every launch. Host names are judged when dialled.
	if spec.AuthConfig.Method == ltiv1.AuthMethodJWKSet {
		if err := d.Outbound.Check(spec.AuthConfig.Key); err != nil {
			log.FromContext(r.Context()).Info("tool registration refused", "code", httpapi.CodeURLNotAllowed, "field", "jwks_uri", "reason", err.Error())
			registrationError(w, http.StatusBadRequest, httpapi.CodeURLNotAllowed,
				"jwks_uri is not allowed by this platform's outbound policy for dynamic registration: an https URL (http in dev mode) that names no loopback, private or metadata address it does not allow.")
			return
		}
	}
	// The token is good for one registration: used up only by one that is written.
	if first, err := d.Replays.Use(r.Context(), "tool-registration\x00"+o.ID, o.Expires, now); err != nil {
		httpapi.WriteError(w, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		registrationError(w, http.StatusUnauthorized, CodeRegistrationTokenUsed, "this registration token was already used.")
		return
	}
	reg, he := d.Tools.create(r.Context(), spec, g.ToolID, map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration})
	if he != nil {
		httpapi.WriteError(w, he)
		return
	}
	req.ClientID = reg.EffectiveClientID()
	req.ToolConfiguration.DeploymentID = reg.Spec.Deployment()
	req.Scope = strings.Join(treq.Scopes, " ")
	req.ToolConfiguration.Scopes = nil
	httpapi.WriteJSON(w, http.StatusOK, req)
}

// toToolRequest maps a registration request onto the tools API's request (whose
// validation it then passes): it says what is wrong with the OpenID and LTI members first.
func (req *clientRegistration) toToolRequest(active bool) (*ToolRequest, string) {
	tc := &req.ToolConfiguration
	switch {
	case req.ApplicationType != "" && req.ApplicationType != "web":
		return nil, "application_type must be web."
	case !slices.Contains(req.ResponseTypes, "id_token"):
		return nil, "response_types must contain id_token."
	case !slices.Contains(req.GrantTypes, "implicit") || !slices.Contains(req.GrantTypes, "client_credentials"):
		return nil, "grant_types must contain implicit and client_credentials."
	case req.TokenEndpointAuthMethod != "private_key_jwt":
		return nil, "token_endpoint_auth_method must be private_key_jwt."
	case req.JWKSURI == "":
		return nil, "jwks_uri is required."
	case tc.TargetLinkURI == "":
		return nil, "https://purl.imsglobal.org/spec/lti-tool-configuration target_link_uri is required."
	}
	name := req.ClientName
	if name == "" {
		name = tc.Domain
	}
	out := &ToolRequest{Name: &name, LoginURL: &req.InitiateLoginURI, RedirectionURIs: req.RedirectURIs, TargetLinkURI: &tc.TargetLinkURI,
		AuthConfig: &AuthConfig{Method: string(ltiv1.AuthMethodJWKSet), Key: req.JWKSURI}, Custom: tc.CustomParameters, Active: &active}
	for _, m := range tc.Messages {
		switch m.Type {
		case "LtiResourceLinkRequest", "LtiSubmissionReviewRequest":
		case "LtiDeepLinkingRequest":
			out.DeepLinkingURL = m.TargetLinkURI
			if out.DeepLinkingURL == "" {
				out.DeepLinkingURL = tc.TargetLinkURI
			}
		default:
			return nil, "messages: " + m.Type + " is not a message this platform sends."
		}
	}
	// Scopes this platform does not grant are left out of the answer (DR 1.0 §3.6.2).
	for _, s := range append(strings.Fields(req.Scope), tc.Scopes...) {
		if slices.Contains(knownScopes, ltiv1.Scope(s)) && !slices.Contains(out.Scopes, s) {
			out.Scopes = append(out.Scopes, s)
		}
	}
	return out, ""
}

// create writes a new ToolRegistration of spec (named name, or generated) with labels and
// returns it.
func (h *Tools) create(ctx context.Context, spec *ltiv1.ToolRegistrationSpec, name string, labels map[string]string) (*ltiv1.ToolRegistration, *httpapi.Error) {
	if e := h.duplicate(spec, ""); e != nil {
		return nil, e
	}
	reg, err := writes.CreateTool(ctx, h.Client, h.Namespace, name, spec, labels)
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, httpapi.Errorf(http.StatusConflict, CodeToolExists, "A tool with the ID "+reg.Name+" exists.")
		}
		return nil, toolAPIServerError(ctx, err)
	}
	return reg, nil
}
