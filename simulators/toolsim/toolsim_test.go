package toolsim_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

func TestLoginRedirectsToTheAuthorizationEndpoint(t *testing.T) {
	r := newRig(t)
	login := r.loginParams("user-1", toolsim.ResourceLinkRequest)
	login.Set("canvas_region", "eu") // unknown parameters are ignored (T-LOGIN-06)

	byGet := get(t, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode())
	byPost := postForm(t, r.toolSrv.URL+toolsim.LoginPath, login) // T-LOGIN-01
	var states []string
	for _, res := range []reply{byGet, byPost} {
		if res.Status != http.StatusFound {
			t.Fatalf("HTTP %d: %s", res.Status, res.Body)
		}
		u, err := url.Parse(res.Location)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Scheme + "://" + u.Host + u.Path; got != r.p.srv.URL+"/authorize" {
			t.Errorf("redirected to %s", got)
		}
		q := u.Query()
		want := map[string]string{
			"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
			"client_id": clientID, "redirect_uri": r.toolSrv.URL + toolsim.LaunchPath,
			"login_hint": "user-1", "lti_message_hint": login.Get("lti_message_hint"),
		}
		for k, v := range want {
			if q.Get(k) != v {
				t.Errorf("%s = %q, want %q", k, q.Get(k), v)
			}
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range q {
				if !yield(k) {
					return
				}
			}
		})
		wantKeys := []string{"client_id", "login_hint", "lti_message_hint", "nonce", "prompt", "redirect_uri",
			"response_mode", "response_type", "scope", "state"}
		if !slices.Equal(keys, wantKeys) { // T-AUTHREQ-01
			t.Errorf("parameters %v, want %v", keys, wantKeys)
		}
		state, nonce := q.Get("state"), q.Get("nonce")
		if len(state) < 43 || len(nonce) < 43 || state == nonce { // T-AUTHREQ-02
			t.Errorf("weak state %q / nonce %q", state, nonce)
		}
		states = append(states, state)
	}
	if states[0] == states[1] {
		t.Error("two logins got the same state")
	}

	// Config.RedirectURI overrides the derived one.
	cfg := r.p.config()
	cfg.RedirectURI = "https://tool.example/deeplink-launch"
	r.tool.SetConfig(cfg)
	res := get(t, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode())
	u, _ := url.Parse(res.Location)
	if got := u.Query().Get("redirect_uri"); got != cfg.RedirectURI {
		t.Errorf("redirect_uri %q, want %q", got, cfg.RedirectURI)
	}
}

func TestBadLoginsAreRefused(t *testing.T) {
	r := newRig(t)
	for name, mutate := range map[string]func(url.Values){
		"no iss":              func(v url.Values) { v.Del("iss") },
		"no login_hint":       func(v url.Values) { v.Del("login_hint") },
		"no target_link_uri":  func(v url.Values) { v.Del("target_link_uri") },
		"no lti_message_hint": func(v url.Values) { v.Del("lti_message_hint") },
		"other issuer":        func(v url.Values) { v.Set("iss", "https://evil.example") },
		"other client_id":     func(v url.Values) { v.Set("client_id", "someone-else") },
		"other deployment":    func(v url.Values) { v.Set("lti_deployment_id", "deployment-2") },
		"relative target":     func(v url.Values) { v.Set("target_link_uri", "/launch") },
	} {
		t.Run(name, func(t *testing.T) {
			login := r.loginParams("user-1", toolsim.ResourceLinkRequest)
			mutate(login)
			res := get(t, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode())
			if res.Status != http.StatusBadRequest || res.Location != "" { // T-LOGIN-02
				t.Errorf("HTTP %d, Location %q: %s", res.Status, res.Location, res.Body)
			}
		})
	}

	// client_id and lti_deployment_id are optional.
	login := r.loginParams("user-1", toolsim.ResourceLinkRequest)
	login.Del("client_id")
	login.Del("lti_deployment_id")
	if res := get(t, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode()); res.Status != http.StatusFound {
		t.Errorf("without client_id and lti_deployment_id: HTTP %d: %s", res.Status, res.Body)
	}

	// Until the client id is known the tool refuses logins.
	cfg := r.p.config()
	cfg.ClientID = ""
	r.tool.SetConfig(cfg)
	if res := get(t, r.toolSrv.URL+toolsim.LoginPath+"?"+login.Encode()); res.Status != http.StatusBadRequest {
		t.Errorf("unconfigured tool: HTTP %d: %s", res.Status, res.Body)
	}
}

func TestResourceLinkLaunch(t *testing.T) {
	r := newRig(t)
	res := r.launch(t, "user-1", toolsim.ResourceLinkRequest)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "launched LtiResourceLinkRequest for user-1") {
		t.Fatalf("HTTP %d: %s", res.Status, res.Body)
	}
	auth := r.p.authRequest()
	l, ok := r.tool.LastLaunch()
	if !ok || !l.OK || l.Err != "" {
		t.Fatalf("launch %+v", l)
	}
	if l.MessageType != toolsim.ResourceLinkRequest || l.Subject != "user-1" || l.Nonce != auth.Get("nonce") ||
		l.State != auth.Get("state") || l.IDToken == "" || l.Claims["name"] != "Ada Lovelace" {
		t.Errorf("launch %+v", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first, err := r.tool.WaitLaunch(ctx, 1)
	if err != nil || first.State != l.State {
		t.Errorf("WaitLaunch: %+v, %v", first, err)
	}

	// The records are copies.
	l.Claims["name"] = "changed"
	if again, _ := r.tool.LastLaunch(); again.Claims["name"] != "Ada Lovelace" {
		t.Error("LastLaunch shares its claims")
	}

	// An array aud with azp, the platform issuer's own choice, is fine (T-TOK-12).
	r.p.setCustomize(func(c, _ map[string]any) { c["aud"] = []string{clientID} })
	if res := r.launch(t, "user-2", toolsim.ResourceLinkRequest); res.Status != http.StatusOK {
		t.Errorf("aud [client_id]: HTTP %d: %s", res.Status, res.Body)
	}
	if n := len(r.tool.Launches()); n != 2 {
		t.Errorf("%d launches recorded", n)
	}
}

func TestBadIDTokensAreRefused(t *testing.T) {
	r := newRig(t)
	other := testkeys.RSAKey(t, 1)
	now := time.Now()
	for _, tc := range []struct {
		name      string
		message   string
		customize func(c, h map[string]any)
		signKey   bool // sign with a key the platform does not publish
		tamper    func(idToken string) string
		status    int
		err       string
	}{
		{name: "wrong nonce", customize: func(c, _ map[string]any) { c["nonce"] = "other-nonce" },
			status: 401, err: "nonce does not match"},
		{name: "no nonce", customize: func(c, _ map[string]any) { delete(c, "nonce") },
			status: 401, err: "nonce is missing"},
		{name: "wrong aud", customize: func(c, _ map[string]any) { c["aud"] = "someone-else" },
			status: 401, err: "not the client id"},
		{name: "untrusted extra aud", customize: func(c, _ map[string]any) { c["aud"] = []string{clientID, "someone-else"} },
			status: 401, err: "not the client id"},
		{name: "several aud without azp", customize: func(c, _ map[string]any) {
			c["aud"] = []string{clientID, clientID}
			delete(c, "azp")
		}, status: 401, err: "azp is required"},
		{name: "wrong azp", customize: func(c, _ map[string]any) { c["azp"] = "someone-else" },
			status: 401, err: "azp"},
		{name: "wrong iss", customize: func(c, _ map[string]any) { c["iss"] = "https://evil.example" },
			status: 401, err: "not the platform issuer"},
		{name: "expired", customize: func(c, _ map[string]any) {
			c["iat"], c["exp"] = now.Add(-3*time.Hour).Unix(), now.Add(-2*time.Hour).Unix()
		}, status: 401, err: "expired"},
		{name: "iat in the future", customize: func(c, _ map[string]any) { c["iat"] = now.Add(time.Hour).Unix() },
			status: 401, err: "in the future"},
		{name: "iat too old", customize: func(c, _ map[string]any) { c["iat"] = now.Add(-30 * time.Minute).Unix() },
			status: 401, err: "too old"},
		{name: "exp as a string", customize: func(c, _ map[string]any) { c["exp"] = "9999999999" },
			status: 401, err: "exp must be a number"},
		{name: "wrong version", customize: func(c, _ map[string]any) { c[toolsim.ClaimVersion] = "11.3" },
			status: 400, err: "version"},
		{name: "unknown message type", customize: func(c, _ map[string]any) { c[toolsim.ClaimMessageType] = "LtiStartProctoring" },
			status: 400, err: "message_type"},
		{name: "no deployment_id", customize: func(c, _ map[string]any) { delete(c, toolsim.ClaimDeploymentID) },
			status: 400, err: "deployment_id is missing"},
		{name: "wrong deployment_id", customize: func(c, _ map[string]any) { c[toolsim.ClaimDeploymentID] = "deployment-2" },
			status: 403, err: "deployment_id"},
		{name: "wrong target_link_uri", customize: func(c, _ map[string]any) { c[toolsim.ClaimTargetLinkURI] = "https://evil.example/" },
			status: 400, err: "target_link_uri"},
		{name: "no resource_link", customize: func(c, _ map[string]any) { delete(c, toolsim.ClaimResourceLink) },
			status: 400, err: "resource_link.id"},
		{name: "no sub", customize: func(c, _ map[string]any) { delete(c, "sub") },
			status: 400, err: "sub is missing"},
		{name: "no roles", customize: func(c, _ map[string]any) { delete(c, toolsim.ClaimRoles) },
			status: 400, err: "roles"},
		{name: "deep linking without settings", message: toolsim.DeepLinkingRequest,
			customize: func(c, _ map[string]any) { delete(c, toolsim.ClaimDLSettings) },
			status:    400, err: "deep_linking_settings is missing"},
		{name: "deep linking without return URL", message: toolsim.DeepLinkingRequest,
			customize: func(c, _ map[string]any) { delete(c[toolsim.ClaimDLSettings].(map[string]any), "deep_link_return_url") },
			status:    400, err: "deep_link_return_url"},
		{name: "deep linking with empty accept_types", message: toolsim.DeepLinkingRequest,
			customize: func(c, _ map[string]any) { c[toolsim.ClaimDLSettings].(map[string]any)["accept_types"] = []string{} },
			status:    400, err: "accept_types"},
		{name: "no kid", customize: func(_, h map[string]any) { delete(h, "kid") },
			status: 401, err: "no kid"},
		{name: "unknown kid", customize: func(_, h map[string]any) { h["kid"] = "imstester_66067" },
			status: 401, err: "not in the platform JWKS"},
		{name: "alg HS256 with the public key", customize: func(_, h map[string]any) { h["alg"] = "HS256" },
			status: 401, err: `alg "HS256"`},
		{name: "alg none", customize: func(_, h map[string]any) { h["alg"] = "none" },
			status: 401, err: `alg "none"`},
		{name: "signed with another key", signKey: true, status: 401, err: "invalid signature"},
		{name: "payload changed", tamper: func(tok string) string {
			parts := strings.Split(tok, ".")
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			payload = []byte(strings.Replace(string(payload), `"sub":"user-1"`, `"sub":"admin!"`, 1))
			parts[1] = base64.RawURLEncoding.EncodeToString(payload)
			return strings.Join(parts, ".")
		}, status: 401, err: "invalid signature"},
		{name: "not a JWS", tamper: func(string) string { return "eyJhbGciOiJSUzI1NiJ9.e30" },
			status: 400, err: "not a compact JWS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.p.setCustomize(tc.customize)
			if tc.signKey {
				r.p.setSignKey(other)
			}
			defer r.p.setCustomize(nil)
			defer r.p.setSignKey(nil)
			message := tc.message
			if message == "" {
				message = toolsim.ResourceLinkRequest
			}
			n := len(r.tool.Launches())
			action, form := r.authResponse(t, r.loginParams("user-1", message))
			if tc.tamper != nil {
				form.Set("id_token", tc.tamper(form.Get("id_token")))
			}
			res := postForm(t, action, form)
			if res.Status != tc.status || !strings.Contains(res.Body, tc.err) {
				t.Errorf("HTTP %d: %s", res.Status, res.Body)
			}
			l, err := r.tool.WaitLaunch(context.Background(), n+1)
			if err != nil || l.OK || !strings.Contains(l.Err, tc.err) || l.State != form.Get("state") {
				t.Errorf("recorded %+v (%v), want an error with %q", l, err, tc.err)
			}
		})
	}

	// The same harness, unchanged, launches fine: the refusals above come from the checks.
	if res := r.launch(t, "user-1", toolsim.ResourceLinkRequest); res.Status != http.StatusOK {
		t.Errorf("control launch: HTTP %d: %s", res.Status, res.Body)
	}
}

func TestStateIsSingleUse(t *testing.T) {
	r := newRig(t)
	action, form := r.authResponse(t, r.loginParams("user-1", toolsim.ResourceLinkRequest))
	if res := postForm(t, action, form); res.Status != http.StatusOK {
		t.Fatalf("first post: HTTP %d: %s", res.Status, res.Body)
	}
	// The same response again (T-STATE-03).
	if res := postForm(t, action, form); res.Status != http.StatusUnauthorized || !strings.Contains(res.Body, "state") {
		t.Errorf("replayed state: HTTP %d: %s", res.Status, res.Body)
	}
	// The old id_token under the state of a new login: its nonce was not issued for that state (T-NONCE-02).
	_, fresh := r.authResponse(t, r.loginParams("user-1", toolsim.ResourceLinkRequest))
	fresh.Set("id_token", form.Get("id_token"))
	if res := postForm(t, action, fresh); res.Status != http.StatusUnauthorized || !strings.Contains(res.Body, "nonce") {
		t.Errorf("replayed id_token: HTTP %d: %s", res.Status, res.Body)
	}
	// A made-up state, and none at all (T-STATE-01).
	if res := postForm(t, action, url.Values{"id_token": {form.Get("id_token")}, "state": {"made-up"}}); res.Status != http.StatusUnauthorized {
		t.Errorf("unknown state: HTTP %d: %s", res.Status, res.Body)
	}
	if res := postForm(t, action, url.Values{"id_token": {form.Get("id_token")}}); res.Status != http.StatusBadRequest {
		t.Errorf("no state: HTTP %d: %s", res.Status, res.Body)
	}
	ls := r.tool.Launches()
	if len(ls) != 5 || !ls[0].OK || slices.ContainsFunc(ls[1:], func(l toolsim.Launch) bool { return l.OK }) {
		t.Errorf("launches %+v", ls)
	}
}

func TestPlatformErrorIsRecorded(t *testing.T) {
	r := newRig(t)
	params, err := r.tool.AuthorizationParams(r.loginParams("user-1", toolsim.ResourceLinkRequest), r.toolSrv.URL+toolsim.LaunchPath)
	if err != nil {
		t.Fatal(err)
	}
	state := params.Get("state")
	res := postForm(t, r.toolSrv.URL+toolsim.LaunchPath, url.Values{
		"error": {"login_required"}, "error_description": {"no session"}, "state": {state},
	})
	if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "login_required: no session") {
		t.Errorf("HTTP %d: %s", res.Status, res.Body)
	}
	l, _ := r.tool.LastLaunch()
	want := toolsim.Launch{Err: "login_required: no session", OAuthError: "login_required", OAuthErrorDescription: "no session", State: state}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("launch %+v, want %+v", l, want)
	}
	// The error spent the state.
	if res := postForm(t, r.toolSrv.URL+toolsim.LaunchPath, url.Values{"id_token": {"x.y.z"}, "state": {state}}); res.Status != http.StatusUnauthorized {
		t.Errorf("state after error: HTTP %d: %s", res.Status, res.Body)
	}
}

func TestPlatformKeysAreCachedAndRefetched(t *testing.T) {
	r := newRig(t)
	for user := range 2 {
		if res := r.launch(t, "user-"+string(rune('1'+user)), toolsim.ResourceLinkRequest); res.Status != http.StatusOK {
			t.Fatalf("HTTP %d: %s", res.Status, res.Body)
		}
	}
	if n := r.p.fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches for two launches, want 1", n)
	}
	// A new key: the unknown kid makes the tool fetch once more (T-JWKS-02).
	r.p.rotate("platform-2", testkeys.RSAKey(t, 2))
	if res := r.launch(t, "user-1", toolsim.ResourceLinkRequest); res.Status != http.StatusOK {
		t.Fatalf("after rotation: HTTP %d: %s", res.Status, res.Body)
	}
	if n := r.p.fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches after rotation, want 2", n)
	}
	// A kid the platform never published: one refetch, then refusal.
	r.p.setCustomize(func(_, h map[string]any) { h["kid"] = "nope" })
	if res := r.launch(t, "user-1", toolsim.ResourceLinkRequest); res.Status != http.StatusUnauthorized {
		t.Errorf("unknown kid: HTTP %d: %s", res.Status, res.Body)
	}
	if n := r.p.fetches.Load(); n != 3 {
		t.Errorf("%d JWKS fetches after an unknown kid, want 3", n)
	}

	// A JWKS that cannot be fetched is the platform's outage, not a bad token (T-JWKS-03).
	r.p.setCustomize(nil)
	cfg := r.p.config()
	cfg.PlatformJWKSURL = r.p.srv.URL + "/missing"
	r.tool.SetConfig(cfg)
	if res := r.launch(t, "user-1", toolsim.ResourceLinkRequest); res.Status != http.StatusServiceUnavailable {
		t.Errorf("JWKS unavailable: HTTP %d: %s", res.Status, res.Body)
	}
}

func TestDeepLinking(t *testing.T) {
	r := newRig(t)
	res := r.launch(t, "teacher-1", toolsim.DeepLinkingRequest)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "launched LtiDeepLinkingRequest for teacher-1") {
		t.Fatalf("HTTP %d: %s", res.Status, res.Body)
	}
	l, _ := r.tool.LastLaunch()
	items := []map[string]any{
		{"type": "ltiResourceLink", "title": "Quiz 1", "url": r.toolSrv.URL + "/launch?quiz=1", "custom": map[string]any{"quiz": "1"}},
		{"type": "link", "url": "https://example.org/page"},
	}
	jwt, returnURL, err := r.tool.DeepLinkingResponse(l, items)
	if err != nil {
		t.Fatal(err)
	}
	if want := r.p.srv.URL + dlReturnPath + "?" + dlReturnQ; returnURL != want {
		t.Errorf("return URL %q, want %q", returnURL, want)
	}
	c, h := verifyWithToolJWKS(t, r.tool, jwt)
	if h["kid"] != r.tool.KID() || h["alg"] != "RS256" || h["typ"] != "JWT" {
		t.Errorf("header %v", h)
	}
	iat, exp := c["iat"].(float64), c["exp"].(float64)
	nonce, _ := c["nonce"].(string)
	if c["iss"] != clientID || c["aud"] != r.p.issuer() || exp-iat != 300 || len(nonce) < 43 ||
		c[toolsim.ClaimDeploymentID] != deploymentID || c[toolsim.ClaimMessageType] != toolsim.DeepLinkingResponse ||
		c[toolsim.ClaimVersion] != "1.3.0" || c[toolsim.ClaimDLData] != "opaque-data-1" {
		t.Errorf("claims %v", c)
	}
	var wantItems any
	b, _ := json.Marshal(items)
	_ = json.Unmarshal(b, &wantItems)
	if !reflect.DeepEqual(c[toolsim.ClaimDLContent], wantItems) {
		t.Errorf("content_items %v, want %v", c[toolsim.ClaimDLContent], wantItems)
	}
	jwt2, _, _ := r.tool.DeepLinkingResponse(l, nil)
	c2, _ := verifyWithToolJWKS(t, r.tool, jwt2)
	if c2["nonce"] == nonce || !reflect.DeepEqual(c2[toolsim.ClaimDLContent], []any{}) {
		t.Errorf("second response %v", c2)
	}

	// Posted like a browser: form field JWT, query kept, the redirect not followed.
	resp, err := r.tool.PostDeepLinkingResponse(context.Background(), nil, returnURL, jwt)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/course/42" {
		t.Errorf("HTTP %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	posts := r.p.deepLinkPosts()
	if len(posts) != 1 || posts[0].JWT != jwt || posts[0].Query.Encode() != dlReturnQ {
		t.Errorf("platform received %+v", posts)
	}

	// No data in the request: none in the response.
	r.p.setCustomize(func(c, _ map[string]any) { delete(c[toolsim.ClaimDLSettings].(map[string]any), "data") })
	if res := r.launch(t, "teacher-1", toolsim.DeepLinkingRequest); res.Status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", res.Status, res.Body)
	}
	l, _ = r.tool.LastLaunch()
	jwt, _, err = r.tool.DeepLinkingResponse(l, nil, toolsim.WithClaim("https://purl.imsglobal.org/spec/lti-dl/claim/msg", "done"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ = verifyWithToolJWKS(t, r.tool, jwt)
	if _, has := c[toolsim.ClaimDLData]; has || c["https://purl.imsglobal.org/spec/lti-dl/claim/msg"] != "done" {
		t.Errorf("claims %v", c)
	}

	// Only for verified deep-linking launches.
	r.p.setCustomize(nil)
	r.launch(t, "user-1", toolsim.ResourceLinkRequest)
	rl, _ := r.tool.LastLaunch()
	if _, _, err := r.tool.DeepLinkingResponse(rl, nil); err == nil {
		t.Error("a deep-linking response to a resource link launch")
	}
	if _, _, err := r.tool.DeepLinkingResponse(toolsim.Launch{MessageType: toolsim.DeepLinkingRequest}, nil); err == nil {
		t.Error("a deep-linking response to a failed launch")
	}
}

// verifyWithToolJWKS verifies tok with jwx against the tool's published JWKS and returns
// its claims and header.
func verifyWithToolJWKS(t testing.TB, tool *toolsim.Tool, tok string) (claims, header map[string]any) {
	t.Helper()
	set, err := jwk.Parse(tool.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	payload, err := jws.Verify([]byte(tok), jws.WithKeySet(set, jws.WithRequireKid(true)))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims, decodeHeader(t, tok)
}

func decodeHeader(t testing.TB, tok string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestClientAssertion(t *testing.T) {
	r := newRig(t)
	aud := r.p.tokenURL()
	tok, err := r.tool.ClientAssertion(aud)
	if err != nil {
		t.Fatal(err)
	}
	c, h := verifyWithToolJWKS(t, r.tool, tok)
	if h["kid"] != r.tool.KID() || h["alg"] != "RS256" || h["typ"] != "JWT" {
		t.Errorf("header %v", h)
	}
	now := float64(time.Now().Unix())
	iat, exp := c["iat"].(float64), c["exp"].(float64)
	if c["iss"] != clientID || c["sub"] != clientID || c["aud"] != aud || c[toolsim.ClaimDeploymentID] != deploymentID ||
		exp-iat != 65 || iat > now-4 || iat < now-7 {
		t.Errorf("claims %v (now %v)", c, now)
	}
	tok2, _ := r.tool.ClientAssertion(aud)
	c2, _ := verifyWithToolJWKS(t, r.tool, tok2)
	if jti, _ := c["jti"].(string); len(jti) < 22 || c2["jti"] == jti { // T-CC-04
		t.Errorf("jti %v then %v", c["jti"], c2["jti"])
	}

	// Options change the claims and the header before signing.
	tok, _ = r.tool.ClientAssertion(aud, toolsim.WithoutClaim("jti"), toolsim.WithClaim("aud", []string{aud}),
		func(c, h map[string]any) { h["x-test"] = "1" })
	c, h = verifyWithToolJWKS(t, r.tool, tok)
	if _, has := c["jti"]; has || !reflect.DeepEqual(c["aud"], []any{aud}) || h["x-test"] != "1" {
		t.Errorf("claims %v, header %v", c, h)
	}
}

func TestSignJWTReallySignsWithTheAlgAsked(t *testing.T) {
	r := newRig(t)
	claims := map[string]any{"iss": clientID, "n": 1}
	pubKey, err := keys.ParsePublicKeyPEM(r.tool.PublicKeyPEM())
	if err != nil {
		t.Fatal(err)
	}

	none, err := r.tool.SignJWT(claims, toolsim.WithAlg("none"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(none, ".")
	if len(parts) != 3 || parts[2] != "" || !strings.HasSuffix(none, ".") {
		t.Errorf("alg none token %q", none)
	}
	if h := decodeHeader(t, none); h["alg"] != "none" || h["kid"] != r.tool.KID() {
		t.Errorf("alg none header %v", h)
	}
	if _, err := jws.Verify([]byte(none), jws.WithKey(jwa.RS256(), pubKey)); err == nil {
		t.Error("an alg none token verified")
	}

	secret := []byte("a shared secret of at least 32 bytes!")
	hs, err := r.tool.SignJWT(claims, toolsim.WithHMACSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	if h := decodeHeader(t, hs); h["alg"] != "HS256" {
		t.Errorf("HS256 header %v", h)
	}
	if _, err := jws.Verify([]byte(hs), jws.WithKey(jwa.HS256(), secret)); err != nil {
		t.Errorf("HS256 with the secret: %v", err)
	}
	// HS256 without a secret: the public key PEM is the secret (algorithm confusion).
	confused, err := r.tool.SignJWT(claims, toolsim.WithAlg("HS256"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify([]byte(confused), jws.WithKey(jwa.HS256(), []byte(r.tool.PublicKeyPEM()))); err != nil {
		t.Errorf("HS256 with the public key: %v", err)
	}
	hs512, _ := r.tool.SignJWT(claims, toolsim.WithAlg("HS512"), toolsim.WithHMACSecret(secret))
	if _, err := jws.Verify([]byte(hs512), jws.WithKey(jwa.HS512(), secret)); err != nil {
		t.Errorf("HS512: %v", err)
	}

	ps, _ := r.tool.SignJWT(claims, toolsim.WithAlg("PS256"))
	if _, err := jws.Verify([]byte(ps), jws.WithKey(jwa.PS256(), pubKey)); err != nil {
		t.Errorf("PS256: %v", err)
	}

	forged, _ := r.tool.SignJWT(claims, toolsim.WithSigningKey(testkeys.RSAKey(t, 1)))
	if h := decodeHeader(t, forged); h["kid"] != r.tool.KID() || h["alg"] != "RS256" {
		t.Errorf("header %v", h)
	}
	if _, err := jws.Verify([]byte(forged), jws.WithKey(jwa.RS256(), pubKey)); err == nil {
		t.Error("a token signed with another key verified with the tool key")
	}

	noKid, _ := r.tool.SignJWT(claims, toolsim.WithoutHeader("kid"))
	if _, has := decodeHeader(t, noKid)["kid"]; has {
		t.Error("WithoutHeader(kid) kept the kid")
	}
	good, _ := r.tool.SignJWT(claims)
	c, _ := verifyWithToolJWKS(t, r.tool, good)
	if c["iss"] != clientID || c["n"] != float64(1) {
		t.Errorf("claims %v", c)
	}
	if len(claims) != 2 {
		t.Errorf("SignJWT changed the caller's claims: %v", claims)
	}
	if _, err := r.tool.SignJWT(claims, toolsim.WithAlg("ES256")); err == nil {
		t.Error("signed ES256 without an EC key")
	}
	if _, err := r.tool.SignJWT(claims, toolsim.WithoutHeader("alg")); err == nil {
		t.Error("signed without an alg")
	}
}

func TestRequestToken(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	scopes := []string{"https://purl.imsglobal.org/spec/lti-ags/scope/score", "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"}
	tr, status, err := r.tool.RequestToken(ctx, scopes)
	if err != nil || status != http.StatusOK {
		t.Fatalf("HTTP %d, %v: %+v", status, err, tr)
	}
	want := toolsim.TokenResponse{AccessToken: "access-1", TokenType: "Bearer", ExpiresIn: 3600, Scope: strings.Join(scopes, " ")}
	if tr != want {
		t.Errorf("%+v, want %+v", tr, want)
	}
	tr, status, err = r.tool.RequestToken(ctx, []string{"forbidden"})
	if err != nil || status != http.StatusBadRequest || tr.Error != "invalid_scope" || tr.ErrorDescription != "not allowed" {
		t.Errorf("HTTP %d, %v: %+v", status, err, tr)
	}
	tr, status, err = r.tool.RequestTokenWith(ctx, scopes, toolsim.WithoutClaim("jti"))
	if err != nil || status != http.StatusBadRequest || tr.Error != "invalid_client" {
		t.Errorf("without jti: HTTP %d, %v: %+v", status, err, tr)
	}
	tr, status, err = r.tool.RequestTokenWith(ctx, scopes, toolsim.WithSigningKey(testkeys.RSAKey(t, 1)))
	if err != nil || status != http.StatusUnauthorized || tr.Error != "invalid_client" {
		t.Errorf("bad signature: HTTP %d, %v: %+v", status, err, tr)
	}
	_, status, err = r.tool.PostToken(ctx, url.Values{"grant_type": {"password"}})
	if err != nil || status != http.StatusBadRequest {
		t.Errorf("PostToken: HTTP %d, %v", status, err)
	}

	// Not JSON: an error, with the status.
	cfg := r.p.config()
	cfg.TokenEndpoint = r.toolSrv.URL + toolsim.LoginPath
	r.tool.SetConfig(cfg)
	if _, status, err := r.tool.RequestToken(ctx, scopes); err == nil || status != http.StatusBadRequest {
		t.Errorf("non-JSON answer: HTTP %d, %v", status, err)
	}
}

func TestKeys(t *testing.T) {
	tool, err := toolsim.New(toolsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal(tool.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 {
		t.Fatalf("JWKS %s", tool.JWKS())
	}
	k := set.Keys[0]
	if k["kid"] != tool.KID() || k["alg"] != "RS256" || k["use"] != "sig" || k["kty"] != "RSA" || k["d"] != nil {
		t.Errorf("JWK %v", k)
	}
	fromJWK, err := keys.ParsePublicJWK(tool.PublicJWK())
	if err != nil {
		t.Fatal(err)
	}
	fromPEM, err := keys.ParsePublicKeyPEM(tool.PublicKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	if !fromJWK.Equal(fromPEM) || fromPEM.N.BitLen() != 2048 {
		t.Error("PublicJWK and PublicKeyPEM differ")
	}
	if kid, _ := keys.KID(fromPEM); kid != tool.KID() {
		t.Errorf("kid %q is not the thumbprint %q", tool.KID(), kid)
	}

	srv := newRig(t)
	res := get(t, srv.toolSrv.URL+toolsim.JWKSPath)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, srv.tool.KID()) {
		t.Errorf("GET /jwks: HTTP %d: %s", res.Status, res.Body)
	}
}

func TestAuthorizationParamsDriveALaunchByHand(t *testing.T) {
	r := newRig(t)
	login := r.loginParams("user-7", toolsim.ResourceLinkRequest)
	if _, err := r.tool.AuthorizationParams(login, ""); err == nil {
		t.Error("no redirect URI, yet params")
	}
	redirect := r.toolSrv.URL + toolsim.DeepLinkLaunchPath
	params, err := r.tool.AuthorizationParams(login, redirect)
	if err != nil {
		t.Fatal(err)
	}
	if params.Get("redirect_uri") != redirect || params.Get("login_hint") != "user-7" || params.Get("prompt") != "none" {
		t.Errorf("params %v", params)
	}
	// The platform may be asked by POST too; its form posts to the redirect URI given.
	page := postForm(t, r.p.srv.URL+"/authorize", params)
	action, form, ok := lmssim.ParseAutoSubmit(page.Body)
	if !ok || action != redirect {
		t.Fatalf("form to %q: %s", action, page.Body)
	}
	if res := postForm(t, action, form); res.Status != http.StatusOK {
		t.Errorf("HTTP %d: %s", res.Status, res.Body)
	}
	if _, err := r.tool.AuthorizationParams(url.Values{"iss": {r.p.issuer()}}, redirect); err == nil {
		t.Error("params for an incomplete login")
	}
}

func TestWaitLaunch(t *testing.T) {
	r := newRig(t)
	done := make(chan error)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, err := r.tryLaunch("user-1", toolsim.ResourceLinkRequest)
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := r.tool.WaitLaunch(ctx, 1)
	if err != nil || !l.OK || l.Subject != "user-1" {
		t.Errorf("%+v, %v", l, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := r.tool.WaitLaunch(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitLaunch(2): %v", err)
	}
	if _, err := r.tool.WaitLaunch(ctx, 0); err == nil {
		t.Error("WaitLaunch(0) succeeded")
	}
}

func TestConcurrentLaunchesAndSetConfig(t *testing.T) {
	r := newRig(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				r.tool.SetConfig(r.p.config())
				return
			}
			if res, err := r.tryLaunch("user-1", toolsim.ResourceLinkRequest); err != nil || res.Status != http.StatusOK {
				t.Errorf("HTTP %d, %v: %s", res.Status, err, res.Body)
			}
		})
	}
	wg.Wait()
	if n := len(r.tool.Launches()); n != 4 {
		t.Errorf("%d launches", n)
	}
}

// A tool that needs a custom parameter (Moodle's published tools need id) refuses launches
// without it, or with the variable the platform did not expand.
func TestRequiredCustomParameters(t *testing.T) {
	r := newRig(t)
	cfg := r.tool.Config()
	cfg.RequiredCustom = []string{"id"}
	r.tool.SetConfig(cfg)
	for _, tc := range []struct {
		name   string
		custom any
		ok     bool
	}{
		{"no custom claim", nil, false},
		{"no id", map[string]any{"other": "1"}, false},
		{"empty id", map[string]any{"id": ""}, false},
		{"variable left as written", map[string]any{"id": "$ResourceLink.id"}, false},
		{"id present", map[string]any{"id": "6f1c2b9e"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.p.setCustomize(func(c, _ map[string]any) {
				if tc.custom != nil {
					c[toolsim.ClaimCustom] = tc.custom
				}
			})
			defer r.p.setCustomize(nil)
			res := r.launch(t, "user-1", toolsim.ResourceLinkRequest)
			l, _ := r.tool.LastLaunch()
			if tc.ok != (res.Status == http.StatusOK) || l.OK != tc.ok || (!tc.ok && !strings.Contains(l.Err, `custom parameter "id"`)) {
				t.Errorf("HTTP %d, recorded %+v", res.Status, l)
			}
		})
	}
}
