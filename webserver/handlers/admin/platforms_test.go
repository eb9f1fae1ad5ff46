package admin_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

var prGroup = schema.GroupResource{Group: ltiv1.GroupVersion.Group, Resource: "platformregistrations"}

func canvasBody(clientID string) map[string]any {
	return map[string]any{
		"url":                    "https://canvas.instructure.com",
		"clientId":               clientID,
		"name":                   "Canvas",
		"authenticationEndpoint": "https://sso.canvaslms.com/api/lti/authorize_redirect",
		"accesstokenEndpoint":    "https://sso.canvaslms.com/login/oauth2/token",
		"authConfig":             map[string]any{"method": "JWK_SET", "key": "https://sso.canvaslms.com/api/lti/security/jwks"},
	}
}

func with(body map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// create posts a registration and returns its API representation.
func (h *harness) create(body map[string]any) map[string]any {
	h.t.Helper()
	res := h.call("POST", "/api/platforms", body)
	if res.Status != http.StatusCreated {
		h.t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	return res.JSON(h.t)
}

func rsaPublicPEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p, err := keys.PublicKeyPEM(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// POST /api/platforms creates a registration with a DNS-safe generated name, under the
// field manager ltiop-api, and answers it with the key the controller made for it.
func TestCreate(t *testing.T) {
	h := newHarness(t)
	res := h.call("POST", "/api/platforms", with(canvasBody("c1"), "deploymentIds", []string{"d1", "d2"}, "active", false,
		"authorizationServer", "https://sso.canvaslms.com/login/oauth2/token"))
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	p := res.JSON(t)
	id, _ := p["id"].(string)
	if len(p) != 9 || !strings.HasPrefix(id, "canvas-instructure-com-") || len(validation.IsDNS1123Subdomain(id)) != 0 {
		t.Fatalf("answer %v", p)
	}
	if res.Header.Get("Location") != "/api/platforms/"+id {
		t.Fatalf("Location %q", res.Header.Get("Location"))
	}
	if want := h.reg.Get(id).PublicKeyPEM(); p["publicKey"] != want || !strings.HasPrefix(want, "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("publicKey %v is not the registration's key", p["publicKey"])
	}
	if p["active"] != false || p["clientId"] != "c1" || p["authConfig"].(map[string]any)["method"] != "JWK_SET" {
		t.Fatalf("answer %v", p)
	}
	stored := h.get(id)
	want := ltiv1.PlatformRegistrationSpec{
		URL: "https://canvas.instructure.com", ClientID: "c1", Name: "Canvas",
		AuthenticationEndpoint: "https://sso.canvaslms.com/api/lti/authorize_redirect",
		AccesstokenEndpoint:    "https://sso.canvaslms.com/login/oauth2/token",
		AuthorizationServer:    "https://sso.canvaslms.com/login/oauth2/token",
		AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://sso.canvaslms.com/api/lti/security/jwks"},
		DeploymentIDs:          []string{"d1", "d2"}, Active: stored.Spec.Active,
	}
	if !reflect.DeepEqual(stored.Spec, want) || stored.Spec.IsActive() {
		t.Fatalf("stored spec %+v, want %+v", stored.Spec, want)
	}
	if len(stored.ManagedFields) == 0 || stored.ManagedFields[0].Manager != "ltiop-api" {
		t.Fatalf("managed fields %+v", stored.ManagedFields)
	}

	got := h.call("GET", "/api/platforms/"+id, nil)
	if got.Status != http.StatusOK || !reflect.DeepEqual(got.JSON(t), p) {
		t.Fatalf("get after create: %d %s", got.Status, got.Body)
	}
	// T-QUIRK-01: the same client on another issuer is another platform.
	h.create(with(canvasBody("c1"), "url", "https://canvas.school.example"))
}

// The answer waits (at most KeyWait) for the controller's key; without it in time, the
// registration is still created and answered without publicKey.
func TestCreateWaitsForTheKey(t *testing.T) {
	h := newHarness(t)
	h.keyDelay.Store(int64(200 * time.Millisecond))
	if p := h.create(canvasBody("slow")); !strings.HasPrefix(fmt.Sprint(p["publicKey"]), "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("answered before the key: %v", p)
	}

	h = newHarness(t, func(c *harnessConfig) { c.keyWait = 50 * time.Millisecond })
	h.keyDelay.Store(int64(time.Hour))
	p := h.create(canvasBody("late"))
	if p["publicKey"] != "" || p["clientId"] != "late" || len(h.stored()) != 1 {
		t.Fatalf("answer %v, %d stored", p, len(h.stored()))
	}
}

// Every refusal of POST /api/platforms: status, code, the field named, and nothing
// written to the API server.
func TestCreateRefusals(t *testing.T) {
	h := newHarness(t)
	existing := h.create(canvasBody("taken"))
	writes := h.writes.Passed()
	jwkOct := `{"kty":"oct","k":"c2VjcmV0"}`
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
		says   []string
	}{
		{"missing url and name", with(canvasBody("x"), "url", nil, "name", nil), 400, "INVALID_PARAMETERS", []string{"url: required", "name: required"}},
		{"a blank clientId", with(canvasBody("x"), "clientId", "  "), 400, "INVALID_PARAMETERS", []string{"clientId: required"}},
		{"a relative endpoint", with(canvasBody("x"), "authenticationEndpoint", "/auth"), 400, "INVALID_PARAMETERS", []string{"authenticationEndpoint"}},
		{"http outside dev mode", with(canvasBody("x"), "accesstokenEndpoint", "http://lms.example/token"), 400, "INVALID_PARAMETERS", []string{"accesstokenEndpoint", "https"}},
		{"a too long name", with(canvasBody("x"), "name", strings.Repeat("n", 256)), 400, "INVALID_PARAMETERS", []string{"name: at most 255"}},
		{"a too long clientId", with(canvasBody(strings.Repeat("c", 256))), 400, "INVALID_PARAMETERS", []string{"clientId: at most 255"}},
		{"a too long url", with(canvasBody("x"), "url", "https://lms.example/"+strings.Repeat("p", 2048)), 400, "INVALID_PARAMETERS", []string{"url: at most 2048"}},
		{"no authConfig", with(canvasBody("x"), "authConfig", nil), 400, "INVALID_PARAMETERS", []string{"authConfig: required"}},
		{"an unknown method", with(canvasBody("x"), "authConfig", map[string]any{"method": "HS256", "key": "x"}), 400, "INVALID_PARAMETERS", []string{"authConfig.method"}},
		{"an empty key", with(canvasBody("x"), "authConfig", map[string]any{"method": "RSA_KEY", "key": " "}), 400, "INVALID_PARAMETERS", []string{"authConfig.key: required"}},
		{"a too long key", with(canvasBody("x"), "authConfig", map[string]any{"method": "RSA_KEY", "key": strings.Repeat("k", 16385)}), 400, "INVALID_PARAMETERS", []string{"authConfig.key: at most 16384"}},
		{"an RSA_KEY that does not parse", with(canvasBody("x"), "authConfig", map[string]any{"method": "RSA_KEY", "key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}), 400, "INVALID_PARAMETERS", []string{"authConfig.key", "RSA_KEY"}},
		{"a JWK_KEY that is not RSA", with(canvasBody("x"), "authConfig", map[string]any{"method": "JWK_KEY", "key": jwkOct}), 400, "INVALID_PARAMETERS", []string{"authConfig.key", "JWK_KEY"}},
		{"a JWK_SET that is not a URL", with(canvasBody("x"), "authConfig", map[string]any{"method": "JWK_SET", "key": "jwks.json"}), 400, "INVALID_PARAMETERS", []string{"authConfig.key", "JWK_SET"}},
		{"a JWK_SET with a fragment", with(canvasBody("x"), "authConfig", map[string]any{"method": "JWK_SET", "key": "https://lms.example/jwks#k"}), 400, "INVALID_PARAMETERS", []string{"authConfig.key", "fragment"}},
		{"a too long authorizationServer", with(canvasBody("x"), "authorizationServer", strings.Repeat("a", 2049)), 400, "INVALID_PARAMETERS", []string{"authorizationServer: at most 2048"}},
		{"an empty deployment id", with(canvasBody("x"), "deploymentIds", []string{"d", ""}), 400, "INVALID_PARAMETERS", []string{"deploymentIds[1]"}},
		{"a deployment id twice", with(canvasBody("x"), "deploymentIds", []string{"d", "d"}), 400, "INVALID_PARAMETERS", []string{`deploymentIds[1]: "d" is listed twice`}},
		{"too many deployment ids", with(canvasBody("x"), "deploymentIds", manyIDs(1001)), 400, "INVALID_PARAMETERS", []string{"deploymentIds: at most 1000"}},
		{"an unknown field", with(canvasBody("x"), "clientSecret", "s"), 400, "INVALID_PARAMETERS", []string{"clientSecret"}},
		{"a field of the wrong type", with(canvasBody("x"), "name", 42), 400, "INVALID_PARAMETERS", []string{"name"}},
		{"not JSON", `{"url":`, 400, "INVALID_REQUEST_BODY", nil},
		{"two JSON values", `{} {}`, 400, "INVALID_REQUEST_BODY", nil},
		{"no body", "", 400, "INVALID_REQUEST_BODY", nil},
		{"too large", with(canvasBody("x"), "name", strings.Repeat("x", 70<<10)), 413, "PAYLOAD_TOO_LARGE", nil},
		{"a duplicate (url, clientId)", canvasBody("taken"), 409, "PLATFORM_ALREADY_REGISTERED", []string{existing["id"].(string)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc := testhttp.WantError(t, h.call("POST", "/api/platforms", tc.body), tc.status, tc.code)
			for _, s := range tc.says {
				if !strings.Contains(desc, s) {
					t.Errorf("description %q does not say %q", desc, s)
				}
			}
		})
	}
	t.Run("a form body", func(t *testing.T) {
		testhttp.WantError(t, h.call("POST", "/api/platforms", "url=x", "Content-Type", "application/x-www-form-urlencoded"), 415, "UNSUPPORTED_MEDIA_TYPE")
	})
	if n := h.writes.Passed(); n != writes || len(h.stored()) != 1 {
		t.Fatalf("refused requests wrote %d times; %d registrations stored", n-writes, len(h.stored()))
	}
	if len(h.reg.List(nil)) != 1 {
		t.Fatal("the registry changed")
	}
}

func manyIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d%d", i)
	}
	return out
}

// A failing API server is answered without its internals: its validation as 400 naming
// the field, a conflict as 409, anything else as 503.
func TestCreateWhenTheAPIServerRefuses(t *testing.T) {
	h := newHarness(t)
	invalid := apierrors.NewInvalid(ltiv1.GroupVersion.WithKind("PlatformRegistration").GroupKind(), "x",
		field.ErrorList{field.Invalid(field.NewPath("spec", "url"), "x", "must be https")})
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		says   string
	}{
		{"invalid", invalid, 400, "INVALID_PARAMETERS", "url: "},
		{"already exists", apierrors.NewAlreadyExists(prGroup, "x"), 409, "CONFLICT", ""},
		{"unreachable", errAPIServerDown, 503, "API_SERVER_UNAVAILABLE", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.writes.FailNext(tc.err)
			res := h.call("POST", "/api/platforms", canvasBody("x"))
			desc := testhttp.WantError(t, res, tc.status, tc.code)
			if !strings.Contains(desc, tc.says) || strings.Contains(res.Body, "10.96.0.1") || strings.Contains(desc, "spec.") {
				t.Fatalf("description %q", desc)
			}
			if len(h.stored()) != 0 || len(h.reg.List(nil)) != 0 {
				t.Fatal("a refused create left a registration")
			}
		})
	}
}

// In dev mode, plain-http endpoints are accepted.
func TestCreateInDevMode(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.devMode = true })
	h.create(with(canvasBody("dev"), "url", "http://127.0.0.1:8080", "accesstokenEndpoint", "http://127.0.0.1:8080/token",
		"authConfig", map[string]any{"method": "JWK_SET", "key": "http://127.0.0.1:8080/jwks"}))
}

// GET /api/platforms lists registrations filtered by id, url and clientId; GET
// /api/platforms/{id} answers one; /admin/platforms is the same API.
func TestListAndGet(t *testing.T) {
	h := newHarness(t)
	a := h.create(canvasBody("shared"))
	b := h.create(with(canvasBody("shared"), "url", "https://canvas.school.example"))
	c := h.create(canvasBody("other"))
	ids := func(path string) []string {
		res := h.call("GET", path, nil)
		if res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.Status, res.Body)
		}
		var out struct{ Platforms []map[string]any }
		if err := json.Unmarshal([]byte(res.Body), &out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range out.Platforms {
			got = append(got, p["id"].(string))
		}
		return got
	}
	same := func(got []string, want ...map[string]any) bool {
		if len(got) != len(want) {
			return false
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w["id"]
			}
			if !found {
				return false
			}
		}
		return true
	}
	for path, want := range map[string][]map[string]any{
		"/api/platforms":                 {a, b, c},
		"/api/platforms?clientId=shared": {a, b},
		"/api/platforms?clientId=shared&url=https://canvas.instructure.com": {a},
		"/api/platforms?id=" + c["id"].(string):                             {c},
		"/admin/platforms?url=https://canvas.school.example":                {b},
	} {
		if got := ids(path); !same(got, want...) {
			t.Errorf("%s: %v", path, got)
		}
	}
	if none := h.call("GET", "/api/platforms?id=nope", nil); none.Body != `{"platforms":[]}` {
		t.Fatalf("empty list %s", none.Body)
	}
	for _, prefix := range []string{"/api/platforms/", "/admin/platforms/"} {
		if got := h.call("GET", prefix+a["id"].(string), nil); got.Status != 200 || !reflect.DeepEqual(got.JSON(t), a) {
			t.Fatalf("get: %d %s", got.Status, got.Body)
		}
	}
}

// Every route on a platform answers 404 PLATFORM_NOT_FOUND for an unknown id, writing nothing.
func TestUnknownPlatform(t *testing.T) {
	h := newHarness(t)
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/platforms/nope"}, {"PUT", "/api/platforms/nope"}, {"DELETE", "/api/platforms/nope"},
		{"POST", "/api/platforms/nope/activate"}, {"POST", "/api/platforms/nope/deactivate"}, {"GET", "/admin/platforms/nope"},
	} {
		var body any
		if r.method == "PUT" {
			body = canvasBody("x")
		}
		desc := testhttp.WantError(t, h.call(r.method, r.path, body), 404, "PLATFORM_NOT_FOUND")
		if !strings.Contains(desc, `"nope"`) {
			t.Errorf("%s %s: description %q", r.method, r.path, desc)
		}
	}
	if h.writes.Passed() != 0 {
		t.Fatal("a request for an unknown platform wrote")
	}
}

// PUT replaces the §4.4 fields by server-side apply as ltiop-api; the tool key and the
// extension fields it does not name (active, deploymentIds, authorizationServer) are kept.
func TestUpdate(t *testing.T) {
	h := newHarness(t)
	p := h.create(with(canvasBody("c"), "deploymentIds", []string{"d1"}, "authorizationServer", "https://auth.example/token"))
	id := p["id"].(string)
	if res := h.call("POST", "/api/platforms/"+id+"/deactivate", nil); res.Status != 200 {
		t.Fatalf("deactivate: %d %s", res.Status, res.Body)
	}
	publicPEM := rsaPublicPEM(t)
	body := with(canvasBody("c2"), "name", "Canvas (renamed)", "url", "https://canvas.renamed.example",
		"authConfig", map[string]any{"method": "RSA_KEY", "key": publicPEM})
	res := h.call("PUT", "/api/platforms/"+id, body)
	if res.Status != http.StatusOK {
		t.Fatalf("put: %d %s", res.Status, res.Body)
	}
	got := res.JSON(t)
	if got["name"] != "Canvas (renamed)" || got["clientId"] != "c2" || got["url"] != "https://canvas.renamed.example" ||
		got["publicKey"] != p["publicKey"] || got["active"] != false {
		t.Fatalf("answer %v", got)
	}
	stored := h.get(id)
	if stored.Spec.AuthConfig != (ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: publicPEM}) ||
		!reflect.DeepEqual(stored.Spec.DeploymentIDs, []string{"d1"}) || stored.Spec.AuthorizationServer != "https://auth.example/token" ||
		stored.Spec.IsActive() {
		t.Fatalf("stored %+v", stored.Spec)
	}
	applied := false
	for _, m := range stored.ManagedFields {
		applied = applied || m.Manager == "ltiop-api" && m.Operation == metav1.ManagedFieldsOperationApply
	}
	if !applied {
		t.Fatalf("managed fields %+v", stored.ManagedFields)
	}
	if again := h.call("GET", "/api/platforms/"+id, nil); !reflect.DeepEqual(again.JSON(t), got) {
		t.Fatalf("a read after the write disagrees: %s", again.Body)
	}
	// Its own (url, clientId) is no duplicate.
	if res := h.call("PUT", "/api/platforms/"+id, body); res.Status != http.StatusOK {
		t.Fatalf("put again: %d %s", res.Status, res.Body)
	}
}

// Refusals of PUT: nothing written, the stored registration unchanged.
func TestUpdateRefusals(t *testing.T) {
	h := newHarness(t)
	a := h.create(canvasBody("a"))
	b := h.create(canvasBody("b"))
	id := a["id"].(string)
	before := h.get(id).Spec
	writes := h.writes.Passed()
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
		says   string
	}{
		{"incomplete", with(canvasBody("a"), "accesstokenEndpoint", nil), 400, "INVALID_PARAMETERS", "accesstokenEndpoint: required"},
		{"http outside dev mode", with(canvasBody("a"), "url", "http://canvas.instructure.com"), 400, "INVALID_PARAMETERS", "url"},
		{"another registration's (url, clientId)", canvasBody("b"), 409, "PLATFORM_ALREADY_REGISTERED", b["id"].(string)},
		{"not JSON", "{", 400, "INVALID_REQUEST_BODY", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc := testhttp.WantError(t, h.call("PUT", "/api/platforms/"+id, tc.body), tc.status, tc.code)
			if !strings.Contains(desc, tc.says) {
				t.Fatalf("description %q does not say %q", desc, tc.says)
			}
		})
	}
	t.Run("a form body", func(t *testing.T) {
		testhttp.WantError(t, h.call("PUT", "/api/platforms/"+id, "a=b", "Content-Type", "text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE")
	})
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"the API server no longer has it", apierrors.NewNotFound(prGroup, id), 404, "PLATFORM_NOT_FOUND"},
		{"changed meanwhile", apierrors.NewConflict(prGroup, id, fmt.Errorf("uid precondition")), 409, "CONFLICT"},
		{"the API server unreachable", errAPIServerDown, 503, "API_SERVER_UNAVAILABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.writes.FailNext(tc.err)
			testhttp.WantError(t, h.call("PUT", "/api/platforms/"+id, with(canvasBody("a"), "name", "new")), tc.status, tc.code)
		})
	}
	if n := h.writes.Passed(); n != writes || !reflect.DeepEqual(h.get(id).Spec, before) || h.reg.Get(id).Spec.Name != "Canvas" {
		t.Fatalf("refused updates changed something (%d writes): %+v", n-writes, h.get(id).Spec)
	}

	t.Run("deleted while the write waited for the registry", func(t *testing.T) {
		h.deleteOnWrite.Store(true)
		defer h.deleteOnWrite.Store(false)
		desc := testhttp.WantError(t, h.call("PUT", "/api/platforms/"+id, canvasBody("a")), 404, "PLATFORM_NOT_FOUND")
		if !strings.Contains(desc, "meanwhile") {
			t.Fatalf("description %q", desc)
		}
	})
}

// A registration in dev mode takes plain-http URLs on PUT even outside dev mode.
func TestUpdateOfADevModeRegistration(t *testing.T) {
	h := newHarness(t)
	id := h.create(canvasBody("dev"))["id"].(string)
	h.update(id, func(pr *ltiv1.PlatformRegistration) { pr.Spec.DevMode = true })
	res := h.call("PUT", "/api/platforms/"+id, with(canvasBody("dev"), "url", "http://127.0.0.1:8080"))
	if res.Status != http.StatusOK || res.JSON(t)["url"] != "http://127.0.0.1:8080" || !h.get(id).Spec.DevMode {
		t.Fatalf("put: %d %s", res.Status, res.Body)
	}
}

// DELETE removes the registration; refused, it stays.
func TestDelete(t *testing.T) {
	h := newHarness(t)
	id := h.create(canvasBody("d"))["id"].(string)

	h.writes.FailNext(errAPIServerDown)
	testhttp.WantError(t, h.call("DELETE", "/api/platforms/"+id, nil), 503, "API_SERVER_UNAVAILABLE")
	h.writes.FailNext(apierrors.NewNotFound(prGroup, id))
	testhttp.WantError(t, h.call("DELETE", "/api/platforms/"+id, nil), 404, "PLATFORM_NOT_FOUND")
	if len(h.stored()) != 1 || h.reg.Get(id) == nil {
		t.Fatal("a refused delete removed the registration")
	}

	res := h.call("DELETE", "/api/platforms/"+id, nil)
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if len(h.stored()) != 0 || h.reg.Get(id) != nil {
		t.Fatal("the registration is still there")
	}
	testhttp.WantError(t, h.call("GET", "/api/platforms/"+id, nil), 404, "PLATFORM_NOT_FOUND")
	testhttp.WantError(t, h.call("DELETE", "/api/platforms/"+id, nil), 404, "PLATFORM_NOT_FOUND")
}

// Activation answers once the registration is launchable: a registration that had no key
// (a dynamic one gets it at its first activation) is answered with it, not before (issue
// #25); past KeyWait, create and activate answer what they have, with Retry-After.
func TestActivateWaitsUntilLaunchable(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.keyWait = 5 * time.Second })
	h.keyDelay.Store(int64(time.Hour)) // no key until the activation
	id := "dyn"
	dynamic := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: id}, Spec: ltiv1.PlatformRegistrationSpec{
		URL: "https://moodle.example", ClientID: "dyn", Name: "Moodle", Active: ptr.To(false),
		AuthenticationEndpoint: "https://moodle.example/auth", AccesstokenEndpoint: "https://moodle.example/token",
		AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://moodle.example/certs"},
	}}
	if err := h.k8s.Create(context.Background(), dynamic); err != nil { // as /lti/register writes it
		t.Fatal(err)
	}
	h.keyDelay.Store(int64(200 * time.Millisecond))
	res := h.call("POST", "/api/platforms/"+id+"/activate", nil)
	if res.Status != http.StatusOK || res.Header.Get("Retry-After") != "" || !strings.HasPrefix(fmt.Sprint(res.JSON(t)["publicKey"]), "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("activate answered before the key: %d %v %s", res.Status, res.Header, res.Body)
	}
	if p := h.reg.Get(id); p == nil || !p.Launchable() {
		t.Fatal("activate answered before the registry saw the registration launchable")
	}

	h = newHarness(t, func(c *harnessConfig) { c.keyWait = 50 * time.Millisecond })
	h.keyDelay.Store(int64(time.Hour))
	late := h.call("POST", "/api/platforms", canvasBody("late"))
	if late.Status != http.StatusCreated || late.Header.Get("Retry-After") != "1" || late.JSON(t)["publicKey"] != "" {
		t.Fatalf("create past keyWait: %d %v %s", late.Status, late.Header, late.Body)
	}
	id = late.JSON(t)["id"].(string)
	for _, path := range []string{"/api/platforms/" + id + "/activate", "/admin/platforms/" + id + "/activate"} {
		res := h.call("POST", path, nil)
		if res.Status != http.StatusOK || res.Header.Get("Retry-After") != "1" || res.JSON(t)["active"] != true || !h.get(id).Spec.IsActive() {
			t.Fatalf("%s past keyWait: %d %v %s", path, res.Status, res.Header, res.Body)
		}
	}
	if res := h.call("POST", "/api/platforms/"+id+"/deactivate", nil); res.Status != http.StatusOK || res.Header.Get("Retry-After") != "" {
		t.Fatalf("deactivate has nothing to wait for: %d %v", res.Status, res.Header)
	}
	// An update that activates waits the same way.
	body := with(canvasBody("late"), "active", true)
	if res := h.call("PUT", "/api/platforms/"+id, body); res.Status != http.StatusOK || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("an update that activates, past keyWait: %d %v %s", res.Status, res.Header, res.Body)
	}
}

// POST …/deactivate and …/activate set spec.active by a merge patch as ltiop-api.
func TestActivateAndDeactivate(t *testing.T) {
	h := newHarness(t)
	id := h.create(canvasBody("act"))["id"].(string)
	for _, tc := range []struct {
		path   string
		active bool
	}{{"/api/platforms/" + id + "/deactivate", false}, {"/admin/platforms/" + id + "/activate", true}} {
		res := h.call("POST", tc.path, nil)
		if res.Status != http.StatusOK || res.JSON(t)["active"] != tc.active || h.get(id).Spec.IsActive() != tc.active {
			t.Fatalf("%s: %d %s", tc.path, res.Status, res.Body)
		}
		if got := h.call("GET", "/api/platforms/"+id, nil).JSON(t)["active"]; got != tc.active {
			t.Fatalf("a read after %s shows active %v", tc.path, got)
		}
	}

	writes := h.writes.Passed()
	h.writes.FailNext(errAPIServerDown)
	testhttp.WantError(t, h.call("POST", "/api/platforms/"+id+"/deactivate", nil), 503, "API_SERVER_UNAVAILABLE")
	h.writes.FailNext(apierrors.NewConflict(prGroup, id, fmt.Errorf("uid precondition")))
	testhttp.WantError(t, h.call("POST", "/api/platforms/"+id+"/deactivate", nil), 409, "CONFLICT")
	if !h.get(id).Spec.IsActive() || !h.reg.Get(id).Spec.IsActive() || h.writes.Passed() != writes {
		t.Fatal("a refused deactivation changed the registration")
	}

	h.deleteOnWrite.Store(true)
	testhttp.WantError(t, h.call("POST", "/api/platforms/"+id+"/deactivate", nil), 404, "PLATFORM_NOT_FOUND")
}
