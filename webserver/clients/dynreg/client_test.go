package dynreg

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixturesDir holds real LMS captures, copied from the shared fixtures into testdata/lms.
var fixturesDir = filepath.Join("..", "..", "..", "testdata", "lms")

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir, name))
	if err != nil {
		t.Fatalf("LMS fixture %s: %v", name, err)
	}
	return string(b)
}

const fixtureHost = "canvas.home.russfeld.me"

// platform is a test platform serving an OpenID configuration and a registration endpoint.
type platform struct {
	srv *httptest.Server

	mu        sync.Mutex
	config    string // served at /config; {{base}} and {{host}} are replaced
	configSt  int
	regStatus int
	regBody   string
	requests  []*recorded
}

type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func newPlatform(t *testing.T, tls bool) *platform {
	t.Helper()
	p := &platform{configSt: 200, regStatus: 200, regBody: `{"client_id":"c-1"}`}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.requests = append(p.requests, &recorded{r.Method, r.URL.Path, r.Header.Clone(), body})
		config, configSt, regSt, regBody := p.config, p.configSt, p.regStatus, p.regBody
		p.mu.Unlock()
		switch r.URL.Path {
		case "/config":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(configSt)
			_, _ = io.WriteString(w, p.expand(config))
		case "/register":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(regSt)
			_, _ = io.WriteString(w, p.expand(regBody))
		default:
			http.NotFound(w, r)
		}
	})
	if tls {
		p.srv = httptest.NewTLSServer(h)
	} else {
		p.srv = httptest.NewServer(h)
	}
	t.Cleanup(p.srv.Close)
	return p
}

func (p *platform) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(p.srv.URL, "https://"), "http://")
}

func (p *platform) expand(s string) string {
	return strings.NewReplacer("{{base}}", p.srv.URL, "{{host}}", p.host()).Replace(s)
}

func (p *platform) set(f func(p *platform)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *platform) last() *recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		return nil
	}
	return p.requests[len(p.requests)-1]
}

// canvasConfig is the Canvas fixture with its host replaced by the test server's.
func canvasConfig(t *testing.T) string {
	raw := readFixture(t, "canvas_openid_configuration.json")
	return strings.NewReplacer("https://"+fixtureHost, "{{base}}", fixtureHost, "{{host}}").Replace(raw)
}

// minimalConfig is a valid OpenID configuration on the test server, with extra members.
func minimalConfig(extra map[string]any) string {
	doc := map[string]any{
		"issuer":                 "{{base}}",
		"authorization_endpoint": "{{base}}/auth",
		"registration_endpoint":  "{{base}}/register",
		"jwks_uri":               "{{base}}/jwks",
		"token_endpoint":         "{{base}}/token",
	}
	for k, v := range extra {
		if v == nil {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

func wantCode(t *testing.T, err error, code string, status int) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *Error %s", err, err, code)
	}
	if e.Code != code || e.Status != status {
		t.Fatalf("error %v: code %s status %d, want %s %d", e, e.Code, e.Status, code, status)
	}
	if CodeOf(err) != code {
		t.Fatalf("CodeOf = %q", CodeOf(err))
	}
	return e
}

func TestFetchConfigurationT_DR_02_T_DR_03CanvasFixture(t *testing.T) {
	p := newPlatform(t, true)
	p.set(func(p *platform) { p.config = canvasConfig(t) })
	configURL := p.srv.URL + "/config?registration_token=abc"
	pc, err := FetchConfiguration(context.Background(), p.srv.Client(), configURL, "reg-token-1")
	if err != nil {
		t.Fatal(err)
	}
	req := p.last()
	if got := req.header.Get("Authorization"); got != "Bearer reg-token-1" {
		t.Errorf("T-DR-03: Authorization = %q, want the registration token as Bearer", got)
	}
	if got := req.header.Get("Accept"); got != "application/json" {
		t.Errorf("Accept = %q", got)
	}
	if req.header.Get("User-Agent") == "" {
		t.Error("no User-Agent")
	}
	base := p.srv.URL
	for name, got := range map[string][2]string{
		"Issuer":                {pc.Issuer, base},
		"AuthorizationEndpoint": {pc.AuthorizationEndpoint, base + "/api/lti/authorize_redirect"},
		"RegistrationEndpoint":  {pc.RegistrationEndpoint, base + "/api/lti/registrations"},
		"JWKSURI":               {pc.JWKSURI, base + "/api/lti/security/jwks"},
		"TokenEndpoint":         {pc.TokenEndpoint, base + "/login/oauth2/token"},
		"AuthorizationServer":   {pc.AuthorizationServer, p.host()},
		"ProductFamilyCode":     {pc.ProductFamilyCode, "canvas"},
		"Version":               {pc.Version, "OpenSource"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", name, got[0], got[1])
		}
	}
	if !pc.IsCanvas() {
		t.Error("IsCanvas() = false")
	}
	// T-DR-06: Canvas's authorization_server is a bare host; the token URL is the audience.
	if got := pc.TokenAudience(); got != pc.TokenEndpoint {
		t.Errorf("T-DR-06: TokenAudience() = %q, want the token endpoint", got)
	}
	if len(pc.ScopesSupported) != 17 || pc.ScopesSupported[0] != "openid" {
		t.Errorf("ScopesSupported = %v", pc.ScopesSupported)
	}
	if len(pc.MessagesSupported) != 3 || pc.MessagesSupported[1].Type != MessageDeepLinking ||
		len(pc.MessagesSupported[1].Placements) != 15 || pc.MessagesSupported[2].Placements != nil {
		t.Errorf("MessagesSupported = %+v", pc.MessagesSupported)
	}
	var raw map[string]any
	if err := json.Unmarshal(pc.Raw, &raw); err != nil || raw["issuer"] != base {
		t.Errorf("Raw is not the served document: %v", err)
	}
}

func TestFetchConfigurationT_DR_03NoTokenNoAuthorization(t *testing.T) {
	p := newPlatform(t, false)
	p.set(func(p *platform) { p.config = minimalConfig(nil) })
	if _, err := FetchConfiguration(context.Background(), p.srv.Client(), p.srv.URL+"/config", ""); err != nil {
		t.Fatal(err)
	}
	if got := p.last().header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
}

func TestFetchConfigurationTokenAudience(t *testing.T) {
	p := newPlatform(t, false)
	p.set(func(p *platform) {
		p.config = minimalConfig(map[string]any{"authorization_server": "https://api.brightspace.com/auth/token"})
	})
	pc, err := FetchConfiguration(context.Background(), p.srv.Client(), p.srv.URL+"/config", "t")
	if err != nil {
		t.Fatal(err)
	}
	if got := pc.TokenAudience(); got != "https://api.brightspace.com/auth/token" {
		t.Errorf("T-DR-06 T-QUIRK-06: TokenAudience() = %q, want the advertised URL", got)
	}
	if pc.IsCanvas() || pc.ScopesSupported != nil {
		t.Errorf("IsCanvas %v, ScopesSupported %v", pc.IsCanvas(), pc.ScopesSupported)
	}
}

func TestFetchConfigurationT_DR_02Refusals(t *testing.T) {
	other := "http://other.example"
	cases := []struct {
		name   string
		tls    bool
		config string
		status int // served status
		code   string
	}{
		{name: "not JSON", config: "<html>", code: CodeInvalidConfiguration},
		{name: "a JSON array", config: "[]", code: CodeInvalidConfiguration},
		{name: "JSON null", config: "null", code: CodeInvalidConfiguration},
		{name: "no issuer", config: minimalConfig(map[string]any{"issuer": nil}), code: CodeInvalidConfiguration},
		{name: "no authorization_endpoint", config: minimalConfig(map[string]any{"authorization_endpoint": nil}), code: CodeInvalidConfiguration},
		{name: "no registration_endpoint", config: minimalConfig(map[string]any{"registration_endpoint": nil}), code: CodeInvalidConfiguration},
		{name: "no jwks_uri", config: minimalConfig(map[string]any{"jwks_uri": nil}), code: CodeInvalidConfiguration},
		{name: "no token_endpoint", config: minimalConfig(map[string]any{"token_endpoint": nil}), code: CodeInvalidConfiguration},
		{name: "empty issuer", config: minimalConfig(map[string]any{"issuer": ""}), code: CodeInvalidConfiguration},
		{name: "numeric issuer", config: minimalConfig(map[string]any{"issuer": 42}), code: CodeInvalidConfiguration},
		{name: "relative jwks_uri", config: minimalConfig(map[string]any{"jwks_uri": "/jwks"}), code: CodeInvalidConfiguration},
		{name: "ftp token_endpoint", config: minimalConfig(map[string]any{"token_endpoint": "ftp://{{host}}/token"}), code: CodeInvalidConfiguration},
		{name: "user info in authorization_endpoint", config: minimalConfig(map[string]any{"authorization_endpoint": "http://u:p@{{host}}/auth"}), code: CodeInvalidConfiguration},
		{name: "http endpoint from an https configuration", tls: true, config: minimalConfig(map[string]any{"token_endpoint": "http://{{host}}/token"}), code: CodeInvalidConfiguration},
		{name: "issuer on another host", config: minimalConfig(map[string]any{"issuer": other}), code: CodeIssuerMismatch},
		{name: "issuer on another port", config: minimalConfig(map[string]any{"issuer": "http://127.0.0.1:1"}), code: CodeIssuerMismatch},
		{name: "registration endpoint on another host", config: minimalConfig(map[string]any{"registration_endpoint": other + "/register"}), code: CodeIssuerMismatch},
		{name: "HTTP 404", config: minimalConfig(nil), status: 404, code: CodeConfigurationUnavailable},
		{name: "HTTP 401 (token refused)", config: `{"errors":[{"message":"Invalid token"}]}`, status: 401, code: CodeConfigurationUnavailable},
		{name: "HTTP 204", config: "", status: 204, code: CodeConfigurationUnavailable},
		{name: "larger than 1 MiB", config: `{"issuer":"` + strings.Repeat("a", MaxBody) + `"}`, code: CodeInvalidConfiguration},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlatform(t, tc.tls)
			status := tc.status
			if status == 0 {
				status = 200
			}
			p.set(func(p *platform) { p.config, p.configSt = tc.config, status })
			pc, err := FetchConfiguration(context.Background(), p.srv.Client(), p.srv.URL+"/config", "t")
			if pc != nil {
				t.Errorf("configuration returned with the error")
			}
			e := wantCode(t, err, tc.code, status) // Status is the platform's whenever it answered
			if tc.status == 401 && !strings.Contains(e.Message, "Invalid token") {
				t.Errorf("message %q does not quote the platform's answer", e.Message)
			}
		})
	}
}

func TestFetchConfigurationBadURLsAndNetwork(t *testing.T) {
	for _, u := range []string{"", "/config", "ftp://lms.example/config", "https://", "https://user:pw@lms.example/c", "::"} {
		_, err := FetchConfiguration(context.Background(), http.DefaultClient, u, "t")
		_ = wantCode(t, err, CodeInvalidConfiguration, 0)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	addr := closed.URL
	closed.Close()
	_, err := FetchConfiguration(context.Background(), http.DefaultClient, addr+"/config", "t")
	_ = wantCode(t, err, CodeConfigurationUnavailable, 0)

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = FetchConfiguration(ctx, slow.Client(), slow.URL+"/config", "t")
	e := wantCode(t, err, CodeConfigurationUnavailable, 0)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(e.Message, "in time") {
		t.Errorf("timeout error %v does not say so", err)
	}
	if _, err := FetchConfiguration(context.Background(), nil, slow.URL, "t"); err == nil {
		t.Error("nil client accepted")
	}
}

func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://LMS.example.edu", "https://lms.example.edu/x", true},
		{"https://lms.example.edu:443", "https://lms.example.edu", true},
		{"http://lms.example.edu:80/moodle", "http://lms.example.edu/moodle/mod/lti/openid-configuration.php", true},
		{"https://lms.example.edu.", "https://lms.example.edu", true},
		{"https://lms.example.edu:8443", "https://lms.example.edu", false},
		{"https://evil.example.edu", "https://lms.example.edu", false},
		{"https://lms.example.edu.evil.example", "https://lms.example.edu", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := sameHost(a, b); got != tc.want {
			t.Errorf("sameHost(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func registeredPlatform(t *testing.T, regStatus int, regBody string) (*platform, *PlatformConfig) {
	t.Helper()
	p := newPlatform(t, false)
	p.set(func(p *platform) {
		p.config, p.regStatus, p.regBody = minimalConfig(nil), regStatus, regBody
	})
	pc, err := FetchConfiguration(context.Background(), p.srv.Client(), p.srv.URL+"/config", "t")
	if err != nil {
		t.Fatal(err)
	}
	return p, pc
}

func TestRegisterT_DR_03_T_DR_05(t *testing.T) {
	tool := ToolConfig{PublicURL: "https://ltiop.example.edu", Name: "ltiop"}
	cases := []struct {
		name         string
		status       int
		body         string
		clientID     string
		deploymentID string
	}{
		{"T-DR-05 deployment_id at the top level (Canvas)", 200,
			`{"client_id":"10000000000005","deployment_id":"9:8865aa"}`, "10000000000005", "9:8865aa"},
		{"T-DR-05 deployment_id in the tool configuration (Moodle)", 200,
			`{"client_id":"abc","https://purl.imsglobal.org/spec/lti-tool-configuration":{"domain":"x","deployment_id":"1"}}`, "abc", "1"},
		{"T-DR-05 deployment_id absent (Brightspace)", 201, `{"client_id":"d2l-client"}`, "d2l-client", ""},
		{"T-DR-05 top level wins over tool configuration", 200,
			`{"client_id":"c","deployment_id":"top","https://purl.imsglobal.org/spec/lti-tool-configuration":{"deployment_id":"inner"}}`, "c", "top"},
		{"T-QUIRK-04 numeric ids", 200, `{"client_id":1000000000000005,"deployment_id":7}`, "1000000000000005", "7"},
		{"T-QUIRK-04 tool configuration of the wrong type", 200,
			`{"client_id":"c","https://purl.imsglobal.org/spec/lti-tool-configuration":"x"}`, "c", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, pc := registeredPlatform(t, tc.status, tc.body)
			reg := BuildRegistration(tool, pc, nil, "")
			got, err := Register(context.Background(), p.srv.Client(), pc, "reg-token-2", reg)
			if err != nil {
				t.Fatal(err)
			}
			if got.ClientID != tc.clientID || got.DeploymentID != tc.deploymentID || string(got.Raw) != tc.body {
				t.Errorf("got %+v, want client %q deployment %q", got, tc.clientID, tc.deploymentID)
			}
			req := p.last()
			if req.method != "POST" || req.path != "/register" {
				t.Fatalf("request %s %s", req.method, req.path)
			}
			if h := req.header.Get("Authorization"); h != "Bearer reg-token-2" {
				t.Errorf("T-DR-03: Authorization = %q", h)
			}
			if h := req.header.Get("Content-Type"); h != "application/json" {
				t.Errorf("Content-Type = %q", h)
			}
			var sent map[string]any
			if err := json.Unmarshal(req.body, &sent); err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(reg)
			var wantMap map[string]any
			_ = json.Unmarshal(want, &wantMap)
			if !jsonEqual(sent, wantMap) {
				t.Errorf("sent %s, want %s", req.body, want)
			}
		})
	}
}

func TestRegisterWithoutToken(t *testing.T) {
	p, pc := registeredPlatform(t, 200, `{"client_id":"c"}`)
	if _, err := Register(context.Background(), p.srv.Client(), pc, "", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if h := p.last().header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
}

func TestRegisterCanvasFixtureResponse(t *testing.T) {
	body := readFixture(t, "canvas_dr_registration_response.json")
	p, pc := registeredPlatform(t, 200, body)
	got, err := Register(context.Background(), p.srv.Client(), pc, "t", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ClientID != "10000000000005" || got.DeploymentID != "9:8865aa05b4b79b64a91a86042e43af5ea8ae79eb" {
		t.Errorf("T-DR-05: got %+v", got)
	}
}

func TestRegisterRefusals(t *testing.T) {
	long := strings.Repeat("x", 4000)
	cases := []struct {
		name, body string
		status     int
		code       string
		inMessage  string
	}{
		{"HTTP 400 with the platform's reason", `{"error":"invalid_client_metadata","error_description":"missing domain"}`, 400, CodeRegistrationRefused, "missing domain"},
		{"HTTP 401 token already used", `{"error":"token_already_used"}`, 401, CodeRegistrationRefused, "token_already_used"},
		{"HTTP 500 with a long body", long, 500, CodeRegistrationRefused, "HTTP 500"},
		{"HTTP 302", "", 302, CodeRegistrationRefused, "HTTP 302"},
		{"no client_id", `{"deployment_id":"1"}`, 200, CodeInvalidRegistrationResponse, "client_id"},
		{"empty client_id", `{"client_id":""}`, 200, CodeInvalidRegistrationResponse, "client_id"},
		{"client_id of the wrong type", `{"client_id":{"id":1}}`, 200, CodeInvalidRegistrationResponse, "client_id"},
		{"not JSON", `<html>ok</html>`, 200, CodeInvalidRegistrationResponse, "JSON object"},
		{"a JSON array", `[{"client_id":"c"}]`, 201, CodeInvalidRegistrationResponse, "JSON object"},
		{"larger than 1 MiB", `{"client_id":"c","x":"` + strings.Repeat("a", MaxBody) + `"}`, 200, CodeInvalidRegistrationResponse, "1 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, pc := registeredPlatform(t, tc.status, tc.body)
			client := p.srv.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			got, err := Register(context.Background(), client, pc, "t", map[string]any{})
			if got != nil {
				t.Error("registration returned with the error")
			}
			e := wantCode(t, err, tc.code, tc.status)
			if !strings.Contains(e.Message, tc.inMessage) {
				t.Errorf("message %q lacks %q", e.Message, tc.inMessage)
			}
			if len(e.Message) > 1000 || strings.Contains(e.Message, "xxxx") {
				t.Errorf("message of %d bytes: the body is not truncated", len(e.Message))
			}
		})
	}
}

func TestRegisterNoAnswerAndBadInput(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	pc := &PlatformConfig{RegistrationEndpoint: closed.URL + "/register"}
	closed.Close()
	_, err := Register(context.Background(), http.DefaultClient, pc, "t", map[string]any{})
	_ = wantCode(t, err, CodeRegistrationUnavailable, 0)

	_, err = Register(context.Background(), http.DefaultClient, &PlatformConfig{}, "t", map[string]any{})
	_ = wantCode(t, err, CodeInvalidConfiguration, 0)
	_, err = Register(context.Background(), http.DefaultClient, nil, "t", map[string]any{})
	_ = wantCode(t, err, CodeInvalidConfiguration, 0)
	_, err = Register(context.Background(), http.DefaultClient, &PlatformConfig{RegistrationEndpoint: "/register"}, "t", map[string]any{})
	_ = wantCode(t, err, CodeInvalidConfiguration, 0)

	_, err = Register(context.Background(), http.DefaultClient, pc, "t", map[string]any{"bad": make(chan int)})
	if err == nil || CodeOf(err) != "" {
		t.Errorf("unencodable registration: %v, want a plain error", err)
	}
	if _, err := Register(context.Background(), nil, pc, "t", nil); err == nil {
		t.Error("nil client accepted")
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Code: CodeRegistrationRefused, Message: "no", Status: 400}
	if got := e.Error(); got != "dynreg: REGISTRATION_REFUSED: no (HTTP 400)" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&Error{Code: CodeIssuerMismatch, Message: "m"}).Error(); got != "dynreg: ISSUER_MISMATCH: m" {
		t.Errorf("Error() = %q", got)
	}
	if CodeOf(errors.New("x")) != "" || CodeOf(nil) != "" {
		t.Error("CodeOf of a non-*Error")
	}
}

// A platform's error answer is quoted by its JSON error fields only: an HTML or text page
// is never echoed.
func TestExcerptQuotesOnlyJSONErrorFields(t *testing.T) {
	for body, want := range map[string]string{
		"":                            "",
		"a\n\tb\x00\x1b[31m  c":       "",
		"<html>Internal admin</html>": "",
		`{"error":"invalid_client_metadata","error_description":"missing\u0000 domain","trace":"x"}`: `: {"error":"invalid_client_metadata","error_description":"missing domain"}`,
	} {
		if got := excerpt(strings.NewReader(body)); got != want {
			t.Errorf("excerpt(%q) = %q, want %q", body, got, want)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestParseConfigurationReadsBackRaw(t *testing.T) {
	p := newPlatform(t, true)
	p.set(func(p *platform) { p.config = canvasConfig(t) })
	fetched, err := FetchConfiguration(context.Background(), p.srv.Client(), p.srv.URL+"/config", "t")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseConfiguration(fetched.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(parsed, fetched) {
		t.Errorf("parsed %+v, fetched %+v", parsed, fetched)
	}
}

func TestParseConfigurationT_DR_02Refusals(t *testing.T) {
	base := map[string]any{
		"issuer": "https://lms.example.edu", "authorization_endpoint": "https://sso.example.edu/auth",
		"registration_endpoint": "https://lms.example.edu/register", "jwks_uri": "https://sso.example.edu/jwks",
		"token_endpoint": "https://auth.example.com/token",
	}
	doc := func(k string, v any) []byte {
		m := map[string]any{}
		for kk, vv := range base {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	if _, err := ParseConfiguration(doc("", nil)); err != nil {
		t.Fatalf("valid configuration (endpoints on other hosts than the issuer's are fine): %v", err)
	}
	for name, tc := range map[string]struct {
		raw  []byte
		code string
	}{
		"not JSON":                      {[]byte("{"), CodeInvalidConfiguration},
		"no jwks_uri":                   {doc("jwks_uri", nil), CodeInvalidConfiguration},
		"http token endpoint":           {doc("token_endpoint", "http://auth.example.com/token"), CodeInvalidConfiguration},
		"registration on another host":  {doc("registration_endpoint", "https://evil.example/register"), CodeIssuerMismatch},
		"registration on another port":  {doc("registration_endpoint", "https://lms.example.edu:8443/register"), CodeIssuerMismatch},
		"relative registration":         {doc("registration_endpoint", "/register"), CodeInvalidConfiguration},
		"issuer of the wrong JSON type": {doc("issuer", []string{"https://lms.example.edu"}), CodeInvalidConfiguration},
	} {
		_, err := ParseConfiguration(tc.raw)
		if CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", name, err, tc.code)
		}
	}
	// An http issuer (Moodle on http, dev mode) allows http endpoints.
	m := map[string]any{}
	_ = json.Unmarshal(doc("", nil), &m)
	for k, v := range m {
		m[k] = strings.Replace(v.(string), "https://", "http://", 1)
	}
	b, _ := json.Marshal(m)
	if _, err := ParseConfiguration(b); err != nil {
		t.Errorf("http configuration: %v", err)
	}
}
