package lmssim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

const toolConfigKey = "https://purl.imsglobal.org/spec/lti-tool-configuration"

// newDRPlatform is a simulated LMS with dynamic registration enabled in mode, and the
// registration token of a started registration.
func newDRPlatform(t *testing.T, mode lmssim.DeploymentMode, configure ...func(*lmssim.LMS)) (*lmssim.LMS, string) {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	lms, err := lmssim.New(srv.URL, "client-7", "deployment-7")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configure {
		c(lms)
	}
	srv.Config.Handler = lms.Handler()
	lms.EnableDynamicRegistration(mode)
	return lms, startToken(t, lms)
}

// startToken starts a registration and returns its token.
func startToken(t *testing.T, lms *lmssim.LMS) string {
	t.Helper()
	u, err := url.Parse(lms.RegistrationStart("https://tool.example/lti/register"))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("registration_token")
}

// toolRegistration is a valid registration, as ltiop sends it.
func toolRegistration() map[string]any {
	return map[string]any{
		"application_type":           "web",
		"grant_types":                []any{"client_credentials", "implicit"},
		"response_types":             []any{"id_token"},
		"redirect_uris":              []any{"https://tool.example/lti/launch"},
		"initiate_login_uri":         "https://tool.example/lti/login",
		"client_name":                "ltiop",
		"jwks_uri":                   "https://tool.example/lti/keys",
		"token_endpoint_auth_method": "private_key_jwt",
		"scope":                      lmssim.ScopeScore + " " + lmssim.ScopeNRPS,
		toolConfigKey: map[string]any{
			"domain":            "tool.example",
			"target_link_uri":   "https://tool.example/lti/launch",
			"custom_parameters": map[string]any{"chapter": "1"},
			"claims":            []any{"iss", "sub"},
			"messages": []any{map[string]any{
				"type": "LtiResourceLinkRequest", "target_link_uri": "https://tool.example/lti/launch", "label": "ltiop",
			}},
		},
	}
}

func postRegistration(t *testing.T, lms *lmssim.LMS, token string, reg any) reply {
	t.Helper()
	body, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return send(t, "POST", lms.Issuer+lmssim.RegisterPath, h, string(body))
}

func getConfiguration(t *testing.T, lms *lmssim.LMS, token string) reply {
	t.Helper()
	h := map[string]string{"Accept": "application/json"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return send(t, "GET", lms.Issuer+lmssim.OpenIDConfigurationPath, h, "")
}

func TestDynamicRegistrationAnswers404UntilEnabled(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	lms, err := lmssim.New(srv.URL, "client-1", "deployment-1")
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = lms.Handler()
	tok := startToken(t, lms)
	if res := getConfiguration(t, lms, tok); res.Status != 404 {
		t.Errorf("openid-configuration before EnableDynamicRegistration: HTTP %d, want 404", res.Status)
	}
	if res := postRegistration(t, lms, tok, toolRegistration()); res.Status != 404 {
		t.Errorf("register before EnableDynamicRegistration: HTTP %d, want 404", res.Status)
	}
	lms.EnableDynamicRegistration(lmssim.DeploymentTopLevel)
	if res := getConfiguration(t, lms, tok); res.Status != 200 {
		t.Errorf("openid-configuration after EnableDynamicRegistration: HTTP %d: %s", res.Status, res.Body)
	}
}

func TestRegistrationStartURL(t *testing.T) {
	lms, _ := newDRPlatform(t, lmssim.DeploymentTopLevel)
	first, err := url.Parse(lms.RegistrationStart("https://tool.example/lti/register"))
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Scheme + "://" + first.Host + first.Path; got != "https://tool.example/lti/register" {
		t.Errorf("registration URL %q", got)
	}
	q := first.Query()
	if got, want := q.Get("openid_configuration"), lms.Issuer+lmssim.OpenIDConfigurationPath; got != want {
		t.Errorf("openid_configuration = %q, want %q", got, want)
	}
	if q.Get("registration_token") == "" {
		t.Error("no registration_token")
	}
	second, _ := url.Parse(lms.RegistrationStart("https://tool.example/lti/register?tenant=a"))
	if second.Query().Get("tenant") != "a" || second.Query().Get("registration_token") == q.Get("registration_token") {
		t.Errorf("second start %s: want the tool's query kept and a fresh token", second)
	}
}

func TestOpenIDConfigurationT_DR_03RequiresTheRegistrationToken(t *testing.T) {
	lms, tok := newDRPlatform(t, lmssim.DeploymentTopLevel)
	for name, token := range map[string]string{"none": "", "unknown": "regtok-unknown"} {
		res := getConfiguration(t, lms, token)
		if res.Status != 401 || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s token: HTTP %d (%s), want 401 with WWW-Authenticate", name, res.Status, res.Body)
		}
	}
	if res := send(t, "GET", lms.Issuer+lmssim.OpenIDConfigurationPath, map[string]string{"Authorization": "Basic " + tok}, ""); res.Status != 401 {
		t.Errorf("Basic scheme: HTTP %d, want 401", res.Status)
	}
	if res := getConfiguration(t, lms, tok); res.Status != 200 {
		t.Fatalf("current token: HTTP %d: %s", res.Status, res.Body)
	}
	newer := startToken(t, lms)
	if res := getConfiguration(t, lms, tok); res.Status != 401 {
		t.Errorf("superseded token: HTTP %d, want 401", res.Status)
	}
	if res := getConfiguration(t, lms, newer); res.Status != 200 {
		t.Errorf("new token: HTTP %d", res.Status)
	}
}

func TestOpenIDConfigurationDocument(t *testing.T) {
	for _, tc := range []struct {
		mode    lmssim.DeploymentMode
		product string
	}{
		{lmssim.DeploymentTopLevel, "canvas"},
		{lmssim.DeploymentInToolConfig, "moodle"},
		{lmssim.DeploymentAbsent, "desire2learn"},
	} {
		t.Run(tc.product, func(t *testing.T) {
			lms, tok := newDRPlatform(t, tc.mode)
			res := getConfiguration(t, lms, tok)
			if res.Status != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("HTTP %d %s: %s", res.Status, res.Header.Get("Content-Type"), res.Body)
			}
			doc := res.json(t)
			for k, want := range map[string]string{
				"issuer":                 lms.Issuer,
				"authorization_endpoint": lms.Issuer + lmssim.AuthPath,
				"token_endpoint":         lms.Issuer + lmssim.TokenPath,
				"jwks_uri":               lms.Issuer + lmssim.JWKSPath,
				"registration_endpoint":  lms.Issuer + lmssim.RegisterPath,
				"authorization_server":   lms.Issuer + lmssim.TokenPath,
			} {
				if doc[k] != want {
					t.Errorf("%s = %v, want %q", k, doc[k], want)
				}
			}
			scopes, _ := doc["scopes_supported"].([]any)
			if len(scopes) != len(lmssim.AllScopes()) {
				t.Errorf("scopes_supported = %v, want AllScopes", doc["scopes_supported"])
			}
			pc, _ := doc["https://purl.imsglobal.org/spec/lti-platform-configuration"].(map[string]any)
			if pc["product_family_code"] != tc.product {
				t.Errorf("product_family_code = %v, want %s", pc["product_family_code"], tc.product)
			}
			if msgs, _ := pc["messages_supported"].([]any); len(msgs) != 2 {
				t.Errorf("messages_supported = %v", pc["messages_supported"])
			}
		})
	}
	t.Run("authorization_server is TokenAudience when set", func(t *testing.T) {
		lms, tok := newDRPlatform(t, lmssim.DeploymentAbsent, func(l *lmssim.LMS) {
			l.TokenAudience = "https://api.brightspace.com/auth/token"
		})
		if got := getConfiguration(t, lms, tok).json(t)["authorization_server"]; got != "https://api.brightspace.com/auth/token" {
			t.Errorf("authorization_server = %v", got)
		}
	})
}

func TestRegisterT_DR_05DeploymentIDPerMode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   lmssim.DeploymentMode
		status int
	}{
		{"top level (Canvas)", lmssim.DeploymentTopLevel, 200},
		{"in tool configuration (Moodle)", lmssim.DeploymentInToolConfig, 201},
		{"absent (Brightspace)", lmssim.DeploymentAbsent, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lms, tok := newDRPlatform(t, tc.mode)
			res := postRegistration(t, lms, tok, toolRegistration())
			if res.Status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", res.Status, tc.status, res.Body)
			}
			out := res.json(t)
			if out["client_id"] != "client-7" || out["client_name"] != "ltiop" || out["scope"] != lmssim.ScopeScore+" "+lmssim.ScopeNRPS {
				t.Errorf("answer does not echo the registration with the client_id: %v", out)
			}
			tool, _ := out[toolConfigKey].(map[string]any)
			top, inTool := out["deployment_id"], tool["deployment_id"]
			switch tc.mode {
			case lmssim.DeploymentTopLevel:
				if top != "deployment-7" || inTool != nil {
					t.Errorf("deployment_id top=%v tool=%v, want top only", top, inTool)
				}
			case lmssim.DeploymentInToolConfig:
				if top != nil || inTool != "deployment-7" {
					t.Errorf("deployment_id top=%v tool=%v, want in tool configuration only", top, inTool)
				}
			case lmssim.DeploymentAbsent:
				if top != nil || inTool != nil {
					t.Errorf("deployment_id top=%v tool=%v, want none", top, inTool)
				}
			}
			regs := lms.Registrations()
			if len(regs) != 1 || regs[0]["initiate_login_uri"] != "https://tool.example/lti/login" || regs[0]["client_id"] != nil {
				t.Errorf("Registrations() = %v, want the request as received", regs)
			}
		})
	}
}

func TestRegisterTokenIsSingleUse(t *testing.T) {
	lms, tok := newDRPlatform(t, lmssim.DeploymentTopLevel)
	if res := postRegistration(t, lms, "", toolRegistration()); res.Status != 401 {
		t.Errorf("no token: HTTP %d, want 401", res.Status)
	}
	if res := postRegistration(t, lms, "regtok-other", toolRegistration()); res.Status != 401 || res.json(t)["error"] != "invalid_token" {
		t.Errorf("unknown token: HTTP %d %s, want 401 invalid_token", res.Status, res.Body)
	}
	if res := postRegistration(t, lms, tok, toolRegistration()); res.Status != 200 {
		t.Fatalf("first use: HTTP %d: %s", res.Status, res.Body)
	}
	res := postRegistration(t, lms, tok, toolRegistration())
	if res.Status != 401 || res.json(t)["error"] != "token_already_used" {
		t.Errorf("second use: HTTP %d %s, want 401 token_already_used", res.Status, res.Body)
	}
	if res := getConfiguration(t, lms, tok); res.Status != 200 {
		t.Errorf("openid-configuration with the used token: HTTP %d, want 200", res.Status)
	}
	startToken(t, lms) // a newer registration does not make the old token usable
	if res := postRegistration(t, lms, tok, toolRegistration()); res.Status != 401 || res.json(t)["error"] != "token_already_used" {
		t.Errorf("used, superseded token: HTTP %d %s", res.Status, res.Body)
	}
	if n := len(lms.Registrations()); n != 1 {
		t.Errorf("%d registrations recorded, want 1", n)
	}
}

func TestRegisterTokenConcurrentUse(t *testing.T) {
	lms, tok := newDRPlatform(t, lmssim.DeploymentTopLevel)
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() { statuses[i] = postRegistration(t, lms, tok, toolRegistration()).Status })
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		if s == 200 {
			ok++
		} else if s != 401 {
			t.Errorf("HTTP %d", s)
		}
	}
	if ok != 1 || len(lms.Registrations()) != 1 {
		t.Errorf("%d registrations accepted with one token, want 1", ok)
	}
}

func TestRegisterValidatesLikeMoodle(t *testing.T) {
	mutations := map[string]func(reg, tool map[string]any){
		"missing response_types":             func(r, _ map[string]any) { delete(r, "response_types") },
		"missing initiate_login_uri":         func(r, _ map[string]any) { delete(r, "initiate_login_uri") },
		"missing redirect_uris":              func(r, _ map[string]any) { delete(r, "redirect_uris") },
		"missing client_name":                func(r, _ map[string]any) { delete(r, "client_name") },
		"missing jwks_uri":                   func(r, _ map[string]any) { delete(r, "jwks_uri") },
		"missing token_endpoint_auth_method": func(r, _ map[string]any) { delete(r, "token_endpoint_auth_method") },
		"missing tool configuration":         func(r, _ map[string]any) { delete(r, toolConfigKey) },
		"missing domain":                     func(_, tc map[string]any) { delete(tc, "domain") },
		"missing target_link_uri":            func(_, tc map[string]any) { delete(tc, "target_link_uri") },
		"response_types without id_token":    func(r, _ map[string]any) { r["response_types"] = []any{"code"} },
		"redirect_uris not an array":         func(r, _ map[string]any) { r["redirect_uris"] = "https://tool.example/lti/launch" },
		"client_secret_basic auth method":    func(r, _ map[string]any) { r["token_endpoint_auth_method"] = "client_secret_basic" },
		"native application_type":            func(r, _ map[string]any) { r["application_type"] = "native" },
		"missing application_type":           func(r, _ map[string]any) { delete(r, "application_type") },
		"grant_types without implicit":       func(r, _ map[string]any) { r["grant_types"] = []any{"client_credentials"} },
		"scope not a string":                 func(r, _ map[string]any) { r["scope"] = []any{lmssim.ScopeScore} },
		"relative jwks_uri":                  func(r, _ map[string]any) { r["jwks_uri"] = "/lti/keys" },
		"numeric custom parameter":           func(_, tc map[string]any) { tc["custom_parameters"] = map[string]any{"n": 1} },
		"unknown message type":               func(_, tc map[string]any) { tc["messages"] = []any{map[string]any{"type": "LtiFooRequest"}} },
		"tool configuration not an object":   func(r, _ map[string]any) { r[toolConfigKey] = "yes" },
	}
	lms, tok := newDRPlatform(t, lmssim.DeploymentInToolConfig)
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			reg := toolRegistration()
			mutate(reg, reg[toolConfigKey].(map[string]any))
			res := postRegistration(t, lms, tok, reg)
			if res.Status != 400 || res.json(t)["error"] != "invalid_client_metadata" {
				t.Errorf("HTTP %d %s, want 400 invalid_client_metadata", res.Status, res.Body)
			}
		})
	}
	for name, body := range map[string]string{"not JSON": "{", "an array": "[]", "two objects": "{}{}"} {
		res := send(t, "POST", lms.Issuer+lmssim.RegisterPath,
			map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}, body)
		if res.Status != 400 {
			t.Errorf("%s: HTTP %d, want 400", name, res.Status)
		}
	}
	res := send(t, "POST", lms.Issuer+lmssim.RegisterPath,
		map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "text/plain"}, "{}")
	if res.Status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: HTTP %d, want 415", res.Status)
	}
	// Refused registrations leave the token unused.
	if res := postRegistration(t, lms, tok, toolRegistration()); res.Status != 201 {
		t.Errorf("valid registration after refusals: HTTP %d: %s", res.Status, res.Body)
	}
	if n := len(lms.Registrations()); n != 1 {
		t.Errorf("%d registrations recorded, want 1", n)
	}
}
