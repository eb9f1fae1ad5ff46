// Package lmssim is a small simulated learning platform for tests and the demo: its own
// RSA key and JWKS, a login-initiation starter, and an OIDC authorization endpoint that
// answers with a signed id_token in an auto-submitting form, as Canvas or Moodle do.
//
// After EnableServices it also serves the LTI Advantage services a real platform offers,
// strictly: an RFC 7523 token endpoint, Names and Role Provisioning, Assignment and Grade
// Services on Moodle-style URLs, the Course Groups Service (groups.go) and the
// deep-linking return URL (see services.go).
package lmssim

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// LMS is one simulated platform. Set its fields before serving; Issuer is its base URL.
type LMS struct {
	Issuer       string
	ClientID     string
	DeploymentID string
	// ToolLoginURL and ToolRedirectURI are the tool's registered URLs.
	ToolLoginURL, ToolRedirectURI string
	// Customize, when set, may change the claims (and the JWS header) of each id_token.
	Customize func(claims map[string]any, header map[string]any)

	// The fields below configure the services (EnableServices). Set them before serving.

	// TokenAudience, when set, is the client assertion audience the token endpoint requires
	// instead of its own URL (Issuer+TokenPath), as Brightspace does.
	TokenAudience string
	// TokenLifetime is the lifetime of the access tokens; zero means one hour.
	TokenLifetime time.Duration
	// GrantableScopes restricts the scopes the token endpoint grants; nil means all NRPS,
	// AGS and groups scopes (AllScopes) and the Asset Processor and EULA ones
	// (AssetProcessorScopes).
	GrantableScopes []string
	// Members is the course roster NRPS serves; nil means DefaultMembers().
	Members []Member
	// Groups and GroupSets are what the groups service serves; nil Groups means
	// DefaultGroups().
	Groups    []Group
	GroupSets []GroupSet
	// HTTPClient fetches the tool's JWKS; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// CacheToolKeys makes the LMS keep the tool's JWKS as a caching LMS does: fetched once,
	// then only by RefreshToolKeys (its schedule); a kid not in the cache is refused, not
	// fetched. Unset, an unknown kid makes it fetch the JWKS again.
	CacheToolKeys bool

	key  *rsa.PrivateKey
	kid  string
	jwks []byte

	mu   sync.Mutex
	last url.Values // the last authentication request received
	svc  *services  // nil until EnableServices
	dl   []dlRequest
	dr   *dynReg      // dynamic registration (dynreg.go)
	oa   *oauthServer // the REST API's OAuth2 authorization server (oauth.go)
	aps  *apState     // Asset Processor and EULA (assetprocessor.go)
	pns  *pnsState    // the Platform Notification Service (pns.go)
	l11  *lti11State  // LTI 1.1 credentials and outcomes (lti11.go)
}

// New returns a platform with a fresh RSA-2048 key.
func New(issuer, clientID, deploymentID string) (*LMS, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	l := &LMS{Issuer: issuer, ClientID: clientID, DeploymentID: deploymentID, key: key, kid: "lmssim-" + randomHex(4)}
	pub, err := jwk.Import(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	_ = pub.Set(jwk.KeyIDKey, l.kid)
	_ = pub.Set(jwk.AlgorithmKey, jwa.RS256())
	_ = pub.Set(jwk.KeyUsageKey, "sig")
	l.jwks, err = json.Marshal(map[string]any{"keys": []jwk.Key{pub}})
	return l, err
}

// Paths served by Handler. The service paths answer 404 until EnableServices.
const (
	JWKSPath   = "/jwks"
	AuthPath   = "/auth"
	StartPath  = "/start"
	TokenPath  = "/token"
	defaultSub = "user-1"

	// MembershipsPath is the NRPS context membership URL (context_memberships_url).
	MembershipsPath = "/nrps/memberships"
	// LineItemsPath is the AGS line item container; every AGS URL also carries TypeIDQuery,
	// and a line item is LineItemsPath+"/<n>/lineitem?"+TypeIDQuery, as in Moodle.
	LineItemsPath = "/mod/lti/services.php/2/lineitems"
	TypeIDQuery   = "type_id=4"
	// DeepLinkReturnPath is the deep_link_return_url; the URL carries DeepLinkReturnQuery,
	// which the tool must keep (T-DL-11).
	DeepLinkReturnPath  = "/deep_links"
	DeepLinkReturnQuery = "course=42&sesskey=abc"
)

// Handler serves the platform's endpoints.
func (l *LMS) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+JWKSPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(l.jwks)
	})
	mux.HandleFunc(AuthPath, l.authorize)
	mux.HandleFunc("GET "+StartPath, l.start)
	l.serviceRoutes(mux)
	l.dynRegRoutes(mux)
	l.oauthRoutes(mux)
	l.assetProcessorRoutes(mux)
	l.pnsRoutes(mux)
	l.lti11Routes(mux)
	return mux
}

// KID is the key id the platform signs with.
func (l *LMS) KID() string { return l.kid }

// LastAuthRequest returns the last OIDC authentication request the platform received.
func (l *LMS) LastAuthRequest() url.Values {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// start sends the browser to the tool's login URL, as an LMS does when a user clicks a
// link: GET /start?user=…&target=…&message=LtiDeepLinkingRequest&storage_target=_parent.
// A submission review (message=LtiSubmissionReviewRequest) names the learner (for_user)
// and the line item (lineitem, its id URL or number); the line item's submissionReview.url,
// when it has one, is the target.
func (l *LMS) start(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user := q.Get("user")
	if user == "" {
		user = defaultSub
	}
	target := q.Get("target")
	if target == "" {
		target = l.ToolRedirectURI
	}
	if q.Get("message") == MessageSubmissionReview && q.Get("target") == "" {
		if reviewURL, _ := l.reviewTarget(q.Get("lineitem")); reviewURL != "" {
			target = reviewURL
		}
	}
	hint, _ := json.Marshal(map[string]string{"message": q.Get("message"), "target": target,
		"forUser": q.Get("for_user"), "lineItem": q.Get("lineitem")})
	login := url.Values{
		"iss": {l.Issuer}, "login_hint": {user}, "target_link_uri": {target},
		"client_id": {l.ClientID}, "lti_deployment_id": {l.DeploymentID}, "lti_message_hint": {string(hint)},
	}
	if st := q.Get("storage_target"); st != "" {
		login.Set("lti_storage_target", st) // the platform offers postMessage storage
	}
	http.Redirect(w, r, l.ToolLoginURL+"?"+login.Encode(), http.StatusFound)
}

// authorize is the OIDC authorization endpoint: it checks the request as a strict
// platform would and answers with an auto-submitting form carrying id_token and state.
func (l *LMS) authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	q := r.Form
	l.mu.Lock()
	l.last = maps.Clone(q)
	l.mu.Unlock()
	for name, want := range map[string]string{
		"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
		"client_id": l.ClientID, "redirect_uri": l.ToolRedirectURI,
	} {
		if q.Get(name) != want {
			http.Error(w, fmt.Sprintf("invalid_request: %s must be %q", name, want), http.StatusBadRequest)
			return
		}
	}
	if q.Get("nonce") == "" || q.Get("state") == "" || q.Get("login_hint") == "" {
		http.Error(w, "invalid_request: nonce, state and login_hint are required", http.StatusBadRequest)
		return
	}
	var hint struct{ Message, Target, ForUser, LineItem string }
	_ = json.Unmarshal([]byte(q.Get("lti_message_hint")), &hint)
	if hint.Target == "" {
		hint.Target = l.ToolRedirectURI
	}
	claims := l.Claims(q.Get("login_hint"), q.Get("nonce"), hint.Target)
	switch hint.Message {
	case "LtiDeepLinkingRequest":
		l.MakeDeepLinking(claims)
	case MessageSubmissionReview:
		l.MakeSubmissionReview(claims, hint.ForUser, hint.LineItem)
	}
	l.MakeAssetProcessorMessage(hint.Message, claims)
	l.addPNSClaim(claims)
	token, err := l.Sign(claims, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = autoSubmit.Execute(w, map[string]string{"Action": q.Get("redirect_uri"), "IDToken": token, "State": q.Get("state")})
}

var autoSubmit = template.Must(template.New("form").Parse(`<!doctype html>
<html><body onload="document.forms[0].submit()">
<form method="post" action="{{.Action}}">
<input type="hidden" name="id_token" value="{{.IDToken}}">
<input type="hidden" name="state" value="{{.State}}">
<noscript><button type="submit">Continue</button></noscript>
</form></body></html>`))

var (
	formAction = regexp.MustCompile(`action="([^"]*)"`)
	formField  = regexp.MustCompile(`name="([^"]+)" value="([^"]*)"`)
)

// ParseAutoSubmit reads an auto-submitting form (the platform's authentication response,
// ltiop's platform-mode launch and id_token forms): where it posts to and the hidden
// fields it carries, as a browser would submit them.
func ParseAutoSubmit(page string) (action string, form url.Values, ok bool) {
	m := formAction.FindStringSubmatch(page)
	if m == nil {
		return "", nil, false
	}
	form = url.Values{}
	for _, f := range formField.FindAllStringSubmatch(page, -1) {
		form.Set(f[1], html.UnescapeString(f[2]))
	}
	return html.UnescapeString(m[1]), form, true
}

// Claims returns a complete LtiResourceLinkRequest for user, like a Canvas teacher launch.
func (l *LMS) Claims(user, nonce, target string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": l.Issuer, "aud": l.ClientID, "azp": l.ClientID, "sub": user, "nonce": nonce,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"name": "Ada Lovelace", "given_name": "Ada", "family_name": "Lovelace", "email": "ada@example.edu",
		"https://purl.imsglobal.org/spec/lti/claim/message_type":    "LtiResourceLinkRequest",
		"https://purl.imsglobal.org/spec/lti/claim/version":         "1.3.0",
		"https://purl.imsglobal.org/spec/lti/claim/deployment_id":   l.DeploymentID,
		"https://purl.imsglobal.org/spec/lti/claim/target_link_uri": target,
		"https://purl.imsglobal.org/spec/lti/claim/resource_link": map[string]any{
			"id": "resource-link-1", "title": "Week 1 quiz", "description": "A first quiz",
		},
		"https://purl.imsglobal.org/spec/lti/claim/roles": []string{
			"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
			"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty",
		},
		"https://purl.imsglobal.org/spec/lti/claim/context": map[string]any{
			"id": "course-42", "label": "CS101", "title": "Introduction to Programming",
			"type": []string{"http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"},
		},
		"https://purl.imsglobal.org/spec/lti/claim/tool_platform": map[string]any{
			"guid": "lmssim-" + l.ClientID, "name": "LMS simulator", "product_family_code": "lmssim", "version": "1.0",
		},
		"https://purl.imsglobal.org/spec/lti/claim/launch_presentation": map[string]any{
			"document_target": "iframe", "locale": "en", "return_url": l.Issuer + "/return",
		},
		"https://purl.imsglobal.org/spec/lti/claim/custom": map[string]any{"chapter": "1"},
		"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": map[string]any{
			"context_memberships_url": l.Issuer + MembershipsPath, "service_versions": []string{"2.0"},
		},
		"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": map[string]any{
			"scope":     []string{ScopeLineItem, ScopeLineItemReadOnly, ScopeResultReadOnly, ScopeScore},
			"lineitems": l.Issuer + LineItemsPath + "?" + TypeIDQuery,
			"lineitem":  l.lineItemURL(1),
		},
		ClaimGroups: l.groupsClaim(),
	}
}

// MakeDeepLinking turns launch claims into an LtiDeepLinkingRequest. The platform
// remembers the request's data (and again when it is signed) to check the response.
func (l *LMS) MakeDeepLinking(claims map[string]any) {
	claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiDeepLinkingRequest"
	delete(claims, "https://purl.imsglobal.org/spec/lti/claim/resource_link")
	claims[claimDLSettings] = map[string]any{
		"deep_link_return_url":                 l.Issuer + DeepLinkReturnPath + "?" + DeepLinkReturnQuery,
		"accept_types":                         []string{"ltiResourceLink", "link"},
		"accept_presentation_document_targets": []string{"iframe", "window"},
		"accept_multiple":                      true,
		"data":                                 "opaque-" + randomHex(4),
	}
	l.rememberDeepLinking(claims)
}

// Sign signs claims as the platform (RS256, with its kid). header adds or overrides
// protected header members (tests use it to forge bad tokens); Customize applies first.
// A deep-linking request's settings are remembered as signed, to check the response.
func (l *LMS) Sign(claims map[string]any, header map[string]any) (string, error) {
	h := map[string]any{"kid": l.kid, "typ": "JWT"}
	maps.Copy(h, header)
	if l.Customize != nil {
		l.Customize(claims, h)
	}
	l.addLTI1p1(claims) // lti11.go: only once EnableLTI11 gave 1.1 credentials
	l.rememberDeepLinking(claims)
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	headers := jws.NewHeaders()
	for k, v := range h {
		if k == "alg" {
			continue
		}
		if v == nil {
			continue
		}
		if err := headers.Set(k, v); err != nil {
			return "", err
		}
	}
	out, err := jws.Sign(payload, jws.WithKey(jwa.RS256(), l.key, jws.WithProtectedHeaders(headers)))
	return string(out), err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
