package deploy

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// routedPrefixes are the path prefixes the chart's Ingress and HTTPRoute send to ltiop.
func routedPrefixes(t *testing.T, objs testmanifests.Objects) (ingress, route []string) {
	t.Helper()
	for _, rule := range nested(t, objs.Find("Ingress", "ltiop"), "spec", "rules").([]any) {
		for _, p := range rule.(map[string]any)["http"].(map[string]any)["paths"].([]any) {
			p := p.(map[string]any)
			if p["pathType"] != "Prefix" {
				t.Fatalf("Ingress path %v: pathType %v, want Prefix", p["path"], p["pathType"])
			}
			ingress = append(ingress, p["path"].(string))
		}
	}
	for _, rule := range nested(t, objs.Find("HTTPRoute", "ltiop"), "spec", "rules").([]any) {
		for _, m := range rule.(map[string]any)["matches"].([]any) {
			p := m.(map[string]any)["path"].(map[string]any)
			if p["type"] != "PathPrefix" {
				t.Fatalf("HTTPRoute path %v: type %v, want PathPrefix", p["value"], p["type"])
			}
			route = append(route, p["value"].(string))
		}
	}
	return ingress, route
}

// prefixMatches is Prefix matching as the Ingress and Gateway APIs define it: element-wise.
func prefixMatches(prefix, p string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// The Ingress and the HTTPRoute publish what LMSs, tools, browsers and the integrator call,
// and not the probes: /readyz?verbose names a failing Secret (issue #35 §3). Every route of
// ltiop's web port is either published or a probe.
func TestChartPublishesOnlyPublicPaths(t *testing.T) {
	on := map[string]any{
		"ingress":   map[string]any{"enabled": true, "host": "lti.example.com"},
		"httpRoute": map[string]any{"enabled": true, "parentRefs": []any{map[string]any{"name": "gateway"}}},
	}
	ingress, route := routedPrefixes(t, render(t, on))
	if !slices.Equal(ingress, route) {
		t.Fatalf("the Ingress publishes %v, the HTTPRoute %v", ingress, route)
	}
	published := func(p string) bool {
		return slices.ContainsFunc(ingress, func(prefix string) bool { return prefixMatches(prefix, p) })
	}
	probes := []string{"/healthz", "/livez", "/readyz"}
	for _, p := range probes {
		if published(p) {
			t.Errorf("%s is published by default", p)
		}
	}
	public := []string{"/lti/login", "/admin/platforms", "/lti/platform/services/g/memberships", "/api/idtoken", "/oauth/callback", "/register/canvas"}
	for _, p := range public {
		if !published(p) {
			t.Errorf("%s is not published", p)
		}
	}
	// Every route ltiop serves on its web port is published or a probe.
	for _, route := range webRoutes(t) {
		if !published(route) && !slices.Contains(probes, route) {
			t.Errorf("route %s is neither published nor a probe", route)
		}
	}
	if published("/ltix") {
		t.Error("a prefix matches beyond its path element")
	}

	on["publicPathPrefixes"] = []any{"/"}
	ingress, route = routedPrefixes(t, render(t, on))
	if !slices.Equal(ingress, []string{"/"}) || !slices.Equal(route, []string{"/"}) {
		t.Fatalf(`publicPathPrefixes ["/"]: %v %v`, ingress, route)
	}
	for _, bad := range []any{"lti", "/lti/", "/lti*", ""} {
		on["publicPathPrefixes"] = []any{bad}
		if _, err := testmanifests.Chart(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace, on); err == nil ||
			!strings.Contains(err.Error(), "publicPathPrefixes") {
			t.Errorf("publicPathPrefixes [%q]: %v, want a refusal naming it", bad, err)
		}
	}
}

// webRoutes are the paths of webserver/openapi.json, the document of every route of the web
// port (a test there compares it with the route table), with their parameters as elements.
func webRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "webserver", "openapi.json"))
	if err == nil {
		err = json.Unmarshal(raw, &doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		out = append(out, path.Clean(p))
	}
	slices.Sort(out)
	return out
}
