package lmssim

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// DeploymentMode says where the registration endpoint puts deployment_id in its answer.
type DeploymentMode int

const (
	// DeploymentTopLevel answers deployment_id at the top level, as Canvas does.
	DeploymentTopLevel DeploymentMode = iota
	// DeploymentInToolConfig answers it inside the lti-tool-configuration, as Moodle does.
	DeploymentInToolConfig
	// DeploymentAbsent answers none, as Brightspace does: the tool learns it at the first launch.
	DeploymentAbsent
)

// Dynamic registration paths, served after EnableDynamicRegistration.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	RegisterPath            = "/register"
)

const (
	keyToolConfiguration     = "https://purl.imsglobal.org/spec/lti-tool-configuration"
	keyPlatformConfiguration = "https://purl.imsglobal.org/spec/lti-platform-configuration"
)

// dynReg is the state of dynamic registration, guarded by LMS.mu.
type dynReg struct {
	enabled       bool
	mode          DeploymentMode
	current       string          // the registration token RegistrationStart handed out last
	used          map[string]bool // tokens a registration was accepted with
	registrations [][]byte        // accepted registration requests, as received (JSON)
}

// dynRegState returns the dynamic-registration state, creating it. Call with l.mu held.
func (l *LMS) dynRegState() *dynReg {
	if l.dr == nil {
		l.dr = &dynReg{used: map[string]bool{}}
	}
	return l.dr
}

// EnableDynamicRegistration makes Handler serve the OpenID configuration
// (OpenIDConfigurationPath) and the registration endpoint (RegisterPath); until it is
// called they answer 404. mode says where the registration answer puts deployment_id
// (the value is l.DeploymentID) and which product the configuration claims to be:
// "canvas" (top level), "moodle" (in the tool configuration) or "desire2learn" (absent).
// Calling it again only changes the mode.
//
// Both endpoints require Authorization: Bearer <token>, the token of the last
// RegistrationStart; the registration endpoint accepts it once (a refused registration
// leaves it unused; a used one is answered 401 token_already_used). The platform does not
// reconfigure itself from a registration: set ToolLoginURL, ToolRedirectURI and
// EnableServices as the tool registered them (see Registrations).
func (l *LMS) EnableDynamicRegistration(mode DeploymentMode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dr := l.dynRegState()
	dr.enabled, dr.mode = true, mode
}

// RegistrationStart returns the URL the LMS opens (in an iframe or popup) to register the
// tool: toolRegisterURL with openid_configuration (Issuer+OpenIDConfigurationPath) and a
// fresh registration_token, which becomes the only token the endpoints accept.
func (l *LMS) RegistrationStart(toolRegisterURL string) string {
	token := "regtok-" + randomHex(16)
	l.mu.Lock()
	l.dynRegState().current = token
	l.mu.Unlock()
	sep := "?"
	if strings.Contains(toolRegisterURL, "?") {
		sep = "&"
	}
	return toolRegisterURL + sep + "openid_configuration=" + url.QueryEscape(l.Issuer+OpenIDConfigurationPath) +
		"&registration_token=" + url.QueryEscape(token)
}

// Registrations returns the registration requests the platform accepted, oldest first.
func (l *LMS) Registrations() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dr == nil {
		return nil
	}
	out := make([]map[string]any, 0, len(l.dr.registrations))
	for _, raw := range l.dr.registrations {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		out = append(out, m)
	}
	return out
}

// OpenIDConfiguration is the document served at OpenIDConfigurationPath.
func (l *LMS) OpenIDConfiguration() map[string]any {
	l.mu.Lock()
	mode := DeploymentTopLevel
	if l.dr != nil {
		mode = l.dr.mode
	}
	l.mu.Unlock()
	authServer := l.TokenAudience
	if authServer == "" {
		authServer = l.Issuer + TokenPath
	}
	product, dlPlacements := "canvas", []string{
		"https://canvas.instructure.com/lti/assignment_selection",
		"https://canvas.instructure.com/lti/editor_button",
		"https://canvas.instructure.com/lti/link_selection",
	}
	switch mode {
	case DeploymentInToolConfig:
		product, dlPlacements = "moodle", []string{"ContentArea"}
	case DeploymentAbsent:
		product, dlPlacements = "desire2learn", nil
	}
	dl := map[string]any{"type": "LtiDeepLinkingRequest"}
	if dlPlacements != nil {
		dl["placements"] = dlPlacements
	}
	return map[string]any{
		"issuer":                                l.Issuer,
		"authorization_endpoint":                l.Issuer + AuthPath,
		"token_endpoint":                        l.Issuer + TokenPath,
		"jwks_uri":                              l.Issuer + JWKSPath,
		"registration_endpoint":                 l.Issuer + RegisterPath,
		"token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
		"token_endpoint_auth_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      AllScopes(),
		"response_types_supported":              []string{"id_token"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"subject_types_supported":               []string{"public", "pairwise"},
		"claims_supported":                      []string{"sub", "iss", "name", "given_name", "family_name", "email", "picture", "locale"},
		"authorization_server":                  authServer,
		keyPlatformConfiguration: map[string]any{
			"product_family_code": product,
			"version":             "1.0",
			"messages_supported":  []any{map[string]any{"type": "LtiResourceLinkRequest"}, dl},
		},
	}
}

func (l *LMS) dynRegRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]http.HandlerFunc{
		"GET " + OpenIDConfigurationPath: l.serveOpenIDConfiguration,
		"POST " + RegisterPath:           l.register,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			l.mu.Lock()
			enabled := l.dr != nil && l.dr.enabled
			l.mu.Unlock()
			if !enabled {
				http.NotFound(w, r)
				return
			}
			h(w, r)
		})
	}
}

func (l *LMS) serveOpenIDConfiguration(w http.ResponseWriter, r *http.Request) {
	tok := bearerToken(r)
	l.mu.Lock()
	code := l.dr.checkToken(tok, true) // the configuration stays readable after the registration
	l.mu.Unlock()
	if code != "" {
		registrationAuthError(w, code)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", l.OpenIDConfiguration())
}

// register is the registration endpoint. It checks the request as Moodle's
// registration_helper does (and, as Canvas, requires application_type "web"), consumes
// the registration token and echoes the registration with client_id and deployment_id.
func (l *LMS) register(w http.ResponseWriter, r *http.Request) {
	tok := bearerToken(r)
	l.mu.Lock()
	code := l.dr.checkToken(tok, false)
	l.mu.Unlock()
	if code != "" {
		registrationAuthError(w, code)
		return
	}
	if !requireContentType(w, r, "application/json") {
		return
	}
	reg, err := decodeObject(w, r)
	if err == nil {
		err = validateRegistration(reg)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, "application/json",
			map[string]string{"error": "invalid_client_metadata", "error_description": err.Error()})
		return
	}
	raw, err := json.Marshal(reg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}

	l.mu.Lock()
	dr := l.dr
	if code := dr.checkToken(tok, false); code != "" { // used or superseded meanwhile
		l.mu.Unlock()
		registrationAuthError(w, code)
		return
	}
	dr.used[tok] = true // single use, once a registration is accepted
	dr.registrations = append(dr.registrations, raw)
	mode := dr.mode
	l.mu.Unlock()

	var out map[string]any
	_ = json.Unmarshal(raw, &out) // a deep copy
	out["client_id"] = l.ClientID
	status := http.StatusCreated
	switch mode {
	case DeploymentTopLevel:
		out["deployment_id"] = l.DeploymentID
		status = http.StatusOK // as Canvas answers
	case DeploymentInToolConfig:
		out[keyToolConfiguration].(map[string]any)["deployment_id"] = l.DeploymentID
	}
	writeJSON(w, status, "application/json", out)
}

// checkToken returns "" when tok is the current registration token, and not used unless
// allowUsed, else the OAuth error code to answer 401 with. Call with l.mu held.
func (dr *dynReg) checkToken(tok string, allowUsed bool) string {
	switch {
	case tok == "":
		return "invalid_request"
	case dr.used[tok] && !allowUsed:
		return "token_already_used"
	case dr.current == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(dr.current)) != 1:
		if dr.used[tok] {
			return "token_already_used"
		}
		return "invalid_token"
	}
	return ""
}

func bearerToken(r *http.Request) string {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

func registrationAuthError(w http.ResponseWriter, code string) {
	desc := map[string]string{
		"invalid_request":    "a registration token is required: Authorization: Bearer <registration_token>",
		"invalid_token":      "unknown or superseded registration token",
		"token_already_used": "the registration token was already used",
	}[code]
	w.Header().Set("WWW-Authenticate", `Bearer realm="lmssim", error="`+code+`"`)
	writeJSON(w, http.StatusUnauthorized, "application/json", map[string]string{"error": code, "error_description": desc})
}

// validateRegistration checks a tool registration as Moodle's registration_helper does.
func validateRegistration(reg map[string]any) error {
	for _, k := range []string{"response_types", "initiate_login_uri", "redirect_uris", "client_name", "jwks_uri",
		"token_endpoint_auth_method", keyToolConfiguration} {
		if _, ok := reg[k]; !ok {
			return fmt.Errorf("missing required attribute %s", k)
		}
	}
	if !stringArrayContains(reg["response_types"], "id_token") {
		return fmt.Errorf("response_types must be an array containing id_token")
	}
	uris, ok := reg["redirect_uris"].([]any)
	if !ok || len(uris) == 0 {
		return fmt.Errorf("redirect_uris must be a non-empty array")
	}
	for _, u := range uris {
		if s, ok := u.(string); !ok || !absoluteURL(s) {
			return fmt.Errorf("redirect_uris must hold absolute URLs")
		}
	}
	for _, k := range []string{"initiate_login_uri", "jwks_uri"} {
		if s, ok := reg[k].(string); !ok || !absoluteURL(s) {
			return fmt.Errorf("%s must be an absolute URL", k)
		}
	}
	if s, ok := reg["client_name"].(string); !ok || s == "" {
		return fmt.Errorf("client_name must be a non-empty string")
	}
	if reg["token_endpoint_auth_method"] != "private_key_jwt" {
		return fmt.Errorf("token_endpoint_auth_method must be private_key_jwt")
	}
	if reg["application_type"] != "web" {
		return fmt.Errorf("application_type must be web")
	}
	if g, ok := reg["grant_types"]; ok && (!stringArrayContains(g, "implicit") || !stringArrayContains(g, "client_credentials")) {
		return fmt.Errorf("grant_types must contain implicit and client_credentials")
	}
	if s, ok := reg["scope"]; ok {
		if _, ok := s.(string); !ok {
			return fmt.Errorf("scope must be a space-separated string")
		}
	}
	tc, ok := reg[keyToolConfiguration].(map[string]any)
	if !ok {
		return fmt.Errorf("%s must be an object", keyToolConfiguration)
	}
	if s, ok := tc["domain"].(string); !ok || s == "" {
		return fmt.Errorf("missing required attribute domain")
	}
	if s, ok := tc["target_link_uri"].(string); !ok || !absoluteURL(s) {
		return fmt.Errorf("missing required attribute target_link_uri (an absolute URL)")
	}
	if cp, ok := tc["custom_parameters"]; ok {
		m, ok := cp.(map[string]any)
		if !ok {
			return fmt.Errorf("custom_parameters must be an object")
		}
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("custom parameter %s must be a string", k)
			}
		}
	}
	if c, ok := tc["claims"]; ok && !isStringArray(c) {
		return fmt.Errorf("claims must be an array of strings")
	}
	if ms, ok := tc["messages"]; ok {
		list, ok := ms.([]any)
		if !ok {
			return fmt.Errorf("messages must be an array")
		}
		for _, m := range list {
			mm, ok := m.(map[string]any)
			if !ok {
				return fmt.Errorf("messages must hold objects")
			}
			if t, _ := mm["type"].(string); t != "LtiResourceLinkRequest" && t != "LtiDeepLinkingRequest" {
				return fmt.Errorf("unsupported message type %v", mm["type"])
			}
			if u, ok := mm["target_link_uri"]; ok {
				if s, ok := u.(string); !ok || !absoluteURL(s) {
					return fmt.Errorf("a message's target_link_uri must be an absolute URL")
				}
			}
		}
	}
	return nil
}

func isStringArray(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

func stringArrayContains(v any, want string) bool {
	list, ok := v.([]any)
	return ok && isStringArray(v) && slices.Contains(list, any(want))
}

func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
