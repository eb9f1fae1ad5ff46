package webserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// tableServer is a server with every handler group of the table; its handlers are absent
// (they answer 500): what is tested is the routing in front of them.
func tableServer() *Server {
	return New(Options{MaxBodyBytes: 1 << 20}, Handlers{
		APIKey: httpapi.NewAPIKey("s", "k"), Keys: http.NotFoundHandler(), KeySet: http.NotFoundHandler(),
		Tools: &admin.Tools{}, ToolDynReg: &admin.ToolDynReg{},
	})
}

var wildcard = regexp.MustCompile(`\{[^}]+\}`)

// concrete is a request path the pattern path matches.
func concrete(pattern string) string { return wildcard.ReplaceAllString(pattern, "x1") }

// The OpenAPI document lists exactly the operations of the route table, and each with the
// security schemes of the route's Auth.
func TestRouteTableIsTheOpenAPIDocument(t *testing.T) {
	schemes := map[Auth][]string{
		AuthNone:      nil,
		AuthBearer:    {"Bearer"},
		AuthLtik:      {"LTIK-AUTH-V1", "LTIK-AUTH-V2"},
		AuthService:   {"LTIK-AUTH-V1", "LTIK-AUTH-V2", "NOTICE-AUTH-V1", "SERVICE-AUTH-V1"},
		AuthToolToken: {"ToolAccessToken"},
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPISource, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{} // "METHOD /path" → security scheme names
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				continue
			}
			var op struct{ Security []map[string][]string }
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			var names []string
			for _, req := range op.Security {
				for name := range req {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			documented[strings.ToUpper(method)+" "+path] = slices.Compact(names)
		}
	}
	table := map[string]bool{}
	for _, rt := range tableServer().Routes() {
		route := rt.Method + " " + rt.Path
		table[route] = true
		names, ok := documented[route]
		switch {
		case !ok:
			t.Errorf("%s is served but not in openapi.json", route)
		case !slices.Equal(names, schemes[rt.Auth]):
			t.Errorf("%s: the table's Auth %s, the document's security %v", route, rt.Auth, names)
		}
	}
	for route := range documented {
		if !table[route] {
			t.Errorf("%s is in openapi.json but not in the route table", route)
		}
	}
}

// The mux serves exactly the table: each entry's request reaches that entry's pattern
// (none is shadowed or missing), and on the table's paths any method the table does not
// list there reaches another entry or none (a route registered beside the table would
// be found).
func TestRouteTableIsWhatTheMuxServes(t *testing.T) {
	s := tableServer()
	listed := map[string]bool{}
	for _, rt := range s.Routes() {
		route := rt.Method + " " + rt.Path
		if listed[route] {
			t.Errorf("%s is in the table twice", route)
		}
		listed[route] = true
	}
	for _, rt := range s.Routes() {
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			route := method + " " + rt.Path
			if method == "HEAD" && !listed[route] {
				route = "GET " + rt.Path // net/http serves HEAD by the GET route
			}
			_, got := s.mux.Handler(httptest.NewRequest(method, concrete(rt.Path), nil))
			if (listed[route] && got != route) || (got != "" && !listed[got]) {
				t.Errorf("%s %s reaches route %q; the table lists %s: %v", method, concrete(rt.Path), got, route, listed[route])
			}
		}
	}
}

// Nothing reachable without a credential is unlimited without saying why; a rate limit is
// for routes anyone can reach (a credential guards the others).
func TestRouteTableLimitsEveryOpenRoute(t *testing.T) {
	for _, rt := range tableServer().Routes() {
		route := rt.Method + " " + rt.Path
		switch {
		case rt.Auth == AuthNone && (rt.RateLimit == "") == (rt.Unlimited == ""):
			t.Errorf("%s: anyone can reach it; it needs a rate-limit group or a reason it has none, not both", route)
		case rt.Auth != AuthNone && (rt.RateLimit != "" || rt.Unlimited != ""):
			t.Errorf("%s: guarded by %s, yet has a rate limit or a reason for none", route, rt.Auth)
		}
	}
}

// The router checks each route's Auth before its handler runs (the handlers here would
// answer 500): without an Authorization header each guarded route answers 401 with its
// guard's words (Ltik and service guards share one code, so the description tells them
// apart), and no open route answers a guard's refusal.
func TestRouteTableAuthGuardsEachRoute(t *testing.T) {
	refusal := map[Auth]string{
		AuthBearer:    "send Authorization: Bearer <API_KEY>.",
		AuthLtik:      "The Authorization header must be LTIK-AUTH-V2 <API_KEY>:<ltik>.",
		AuthService:   "SERVICE-AUTH-V1 <API_KEY>:<serviceKey>",
		AuthToolToken: "Authorization: Bearer <access_token>", // the handler's own check
	}
	s := tableServer()
	for _, rt := range s.Routes() {
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(rt.Method, concrete(rt.Path), nil))
		var env httpapi.Envelope
		_ = json.Unmarshal(w.Body.Bytes(), &env)
		route := rt.Method + " " + rt.Path
		if rt.Auth == AuthNone {
			if strings.Contains(env.Details.Description, "<API_KEY>") {
				t.Errorf("%s is open, yet refused for want of a credential: %d %s", route, w.Code, w.Body)
			}
			continue
		}
		if want := refusal[rt.Auth]; w.Code != http.StatusUnauthorized || !strings.Contains(env.Details.Description, want) {
			t.Errorf("%s (Auth %s) without a credential: %d %s, want 401 saying %q", route, rt.Auth, w.Code, w.Body, want)
		}
	}
}

// The rate-limit table of docs/configuration.md names, in each group's row (the group is
// its YAML key), every route the route table puts in that group.
func TestConfigurationDocNamesEveryRateLimitedRoute(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[RateLimitGroup]string{} // group → its Routes cell
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(line, "|")
		if len(cells) > 3 && strings.HasPrefix(line, "| `") {
			rows[RateLimitGroup(strings.Trim(cells[1], " `"))] = cells[2]
		}
	}
	for _, rt := range tableServer().Routes() {
		if rt.RateLimit == "" {
			continue
		}
		if row, ok := rows[rt.RateLimit]; !ok || !strings.Contains(row, "`"+rt.Path+"`") {
			t.Errorf("docs/configuration.md: the rate-limit row of %s does not name %s (%s)", rt.RateLimit, rt.Path, rt.Method)
		}
	}
}

// A route whose path carries a secret, a registration token or a service grant, is
// logged by its pattern: SecretPath must say so.
func TestRouteTableHidesSecretPathsFromLogs(t *testing.T) {
	for _, rt := range tableServer().Routes() {
		secret := strings.Contains(rt.Path, "{token}") || strings.Contains(rt.Path, "{grant}")
		if secret != rt.SecretPath {
			t.Errorf("%s %s: SecretPath %v, its path carries a secret: %v", rt.Method, rt.Path, rt.SecretPath, secret)
		}
	}
}
