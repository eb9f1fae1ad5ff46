package toolmode

import (
	"encoding/json"
	"fmt"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ltiop/ltiop/internal/jsonscan"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// loginState is sealed into the OIDC state parameter: everything the launch must check
// comes back with the browser, so any replica can finish a login another one started.
type loginState struct {
	ID            string `json:"i"`           // names the binding cookie and storage key
	Bind          string `json:"b"`           // the browser-binding secret (cookie value / stored value)
	PlatformID    string `json:"p"`           // registration name
	PlatformUID   string `json:"u"`           // its UID: a re-created registration is another one
	Nonce         string `json:"n"`           // T-NONCE-02
	TargetLinkURI string `json:"t"`           // T-TOK-22
	DeploymentID  string `json:"d,omitempty"` // lti_deployment_id of the login, T-TOK-20
	Storage       string `json:"s,omitempty"` // lti_storage_target when platform storage is used
	StorageOrigin string `json:"o,omitempty"` // the platform origin postMessages go to and come from
}

// decodeLoginState reads a sealed state as Login wrote it (json.Marshal of loginState),
// by hand: every launch reads one, and encoding/json's reflection cost more than the rest of
// the state's opening. Members it does not know are skipped, as json.Unmarshal would.
func decodeLoginState(payload []byte) (st loginState, ok bool) {
	var sc jsonscan.Scanner
	sc.Reset(string(payload))
	for sc.Object(); sc.NextMember(); {
		var f *string
		switch sc.Key() {
		case "i":
			f = &st.ID
		case "b":
			f = &st.Bind
		case "p":
			f = &st.PlatformID
		case "u":
			f = &st.PlatformUID
		case "n":
			f = &st.Nonce
		case "t":
			f = &st.TargetLinkURI
		case "d":
			f = &st.DeploymentID
		case "s":
			f = &st.Storage
		case "o":
			f = &st.StorageOrigin
		default:
			sc.Skip()
			continue
		}
		*f = sc.Str()
	}
	return st, sc.End() == nil
}

// Login serves /lti/login (GET and POST): the third-party initiated login of conformance §1.1.
func (t *Tool) Login(w http.ResponseWriter, r *http.Request) {
	if err := httpapi.ParseForm(r); err != nil {
		t.fail(w, r, loginErr(lti.CodeInvalidLogin, "The login request could not be read."))
		return
	}
	// Unknown parameters are ignored (T-LOGIN-06); r.Form holds query and form body (T-LOGIN-01).
	get := func(name string) string { return strings.TrimSpace(r.Form.Get(name)) }
	iss, loginHint, target := get("iss"), get("login_hint"), get("target_link_uri")
	var missing []string
	for name, v := range map[string]string{"iss": iss, "login_hint": loginHint, "target_link_uri": target} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 { // T-LOGIN-02
		t.fail(w, r, loginErr(lti.CodeInvalidLogin, "The login request lacks "+strings.Join(sorted(missing), ", ")+"."))
		return
	}

	p, herr := t.findPlatform(iss, get("client_id")) // T-LOGIN-03
	if herr != nil {
		t.fail(w, r, herr)
		return
	}
	httpapi.NotePlatform(r.Context(), p.ID)
	deploymentID := get("lti_deployment_id")
	if deploymentID != "" && len(p.Spec.DeploymentIDs) > 0 && !slices.Contains(p.Spec.DeploymentIDs, deploymentID) { // T-LOGIN-04
		t.refuseLogin(w, r, p, httpapi.Errorf(http.StatusForbidden, lti.CodeUnknownDeployment,
			"This deployment of the platform is not registered with the tool."))
		return
	}
	if err := t.checkTarget(target); err != nil { // T-LOGIN-05, before the value is used anywhere
		t.refuseLogin(w, r, p, err)
		return
	}

	st := loginState{
		ID: randomToken(12), Bind: randomToken(16), PlatformID: p.ID, PlatformUID: string(p.UID),
		Nonce: randomToken(16), TargetLinkURI: target, DeploymentID: deploymentID,
	}
	authURL, err := url.Parse(string(p.Spec.AuthenticationEndpoint))
	if err != nil {
		t.fail(w, r, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The platform's authentication endpoint is not a URL."))
		return
	}
	if storage := get("lti_storage_target"); storage != "" {
		st.Storage, st.StorageOrigin = storage, authURL.Scheme+"://"+authURL.Host
	}
	payload, _ := json.Marshal(st)
	state, err := t.keyring.Seal(sessions.PurposeState, payload, stateTTL)
	if err != nil {
		t.fail(w, r, sessions.ErrSealingNotReady)
		return
	}

	// T-AUTHREQ-01: exactly the OIDC authentication request parameters, on top of any
	// query the registered endpoint already has. T-LOGIN-07: only to the registered endpoint.
	q := authURL.Query()
	q.Set("scope", "openid")
	q.Set("response_type", "id_token")
	q.Set("response_mode", "form_post")
	q.Set("prompt", "none")
	q.Set("client_id", p.Spec.ClientID)
	q.Set("redirect_uri", t.opts.PublicURL+paths.Launch) // T-AUTHREQ-03: the registered URL, byte for byte
	q.Set("login_hint", loginHint)
	q.Set("state", state)
	q.Set("nonce", st.Nonce)
	if hint, ok := r.Form["lti_message_hint"]; ok && len(hint) > 0 {
		q.Set("lti_message_hint", hint[0]) // unaltered [CORE §4.1.1]
	}
	authURL.RawQuery = q.Encode()

	t.setBindingCookie(w, st)
	launchesTotal.WithLabelValues("login", "ok").Inc()
	if st.Storage != "" {
		// Cookies may be blocked in the LMS iframe: also keep the binding in the
		// platform's storage before leaving (conformance §7).
		t.renderStorageLogin(w, st, authURL.String())
		return
	}
	httpapi.Redirect(w, authURL.String(), http.StatusFound)
}

// findPlatform picks the registration by (iss, client_id), or the single one of the issuer.
func (t *Tool) findPlatform(iss, clientID string) (*registry.Platform, *httpapi.Error) {
	var p *registry.Platform
	if clientID != "" {
		p = t.registry.Lookup(iss, clientID)
	} else {
		candidates := slices.DeleteFunc(t.registry.ByIssuer(iss), func(q *registry.Platform) bool { return !usable(q) })
		if len(candidates) > 1 {
			return nil, loginErr(lti.CodeAmbiguousPlatform,
				"Several registrations share this issuer; the platform must send client_id with the login.")
		}
		if len(candidates) == 1 {
			p = candidates[0]
		}
	}
	if p == nil || !usable(p) {
		return nil, httpapi.Errorf(http.StatusBadRequest, lti.CodeUnregistered,
			"This platform is not registered with the tool, or its registration is inactive.")
	}
	return p, nil
}

// usable: active, with a key, and Ready for its current generation (the platforms API
// waits for the same before it answers a write).
func usable(p *registry.Platform) bool { return p.Launchable() }

// checkTarget accepts only URLs on ltiop's own origin: the launch is never an open redirector.
func (t *Tool) checkTarget(target string) *httpapi.Error {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != t.publicURL.Scheme || u.Host != t.publicURL.Host || u.User != nil {
		return loginErr(lti.CodeInvalidTarget, fmt.Sprintf("target_link_uri must be on %s://%s.", t.publicURL.Scheme, t.publicURL.Host))
	}
	return nil
}

func (t *Tool) setBindingCookie(w http.ResponseWriter, st loginState) {
	c := &http.Cookie{
		Name: bindingCookie(st.ID), Value: st.Bind, Path: "/lti/",
		MaxAge: int(stateTTL.Seconds()), HttpOnly: true,
	}
	if t.secureCookies() {
		// The launch is a cross-site POST from the LMS, often inside its iframe.
		c.Secure, c.SameSite, c.Partitioned = true, http.SameSiteNoneMode, true
	} else {
		c.SameSite = http.SameSiteLaxMode // dev mode on plain http: localhost ports are same-site
	}
	http.SetCookie(w, c)
}

// renderStorageLogin is the page that stores the binding value in platform storage, then
// goes on to the platform's authorization endpoint (next).
func (t *Tool) renderStorageLogin(w http.ResponseWriter, st loginState, next string) {
	t.render(w, http.StatusOK, "storage_login.html", map[string]any{
		"Target": st.Storage, "Origin": st.StorageOrigin, "Key": storageKeyPrefix + st.ID,
		"Value": st.Bind, "Next": next,
	})
}

func bindingCookie(stateID string) string { return "ltiop_state_" + stateID }

func loginErr(code, description string) *httpapi.Error {
	return httpapi.Errorf(http.StatusBadRequest, code, description)
}

// randomToken: T-AUTHREQ-02 wants ≥ 128 bits (n ≥ 16).
var randomToken = httpapi.RandomToken

func sorted(s []string) []string { slices.Sort(s); return s }
