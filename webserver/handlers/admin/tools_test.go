package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/test/utils/testclient"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// toolsHarness serves /api/tools on loopback; writes go to the fake API server and are
// shown in the tool registry as the informer and the controller would (Ready for the
// generation).
type toolsHarness struct {
	t      *testing.T
	tools  *registry.Tools
	k8s    client.Client
	api    *httptest.Server
	writes testclient.Gate
	dynreg *admin.ToolDynReg
	// judgeAfter, when set, makes the controller's Ready verdict (judgement) arrive that
	// long after a write, as it does on a cluster; judgement defaults to True.
	judgeAfter time.Duration
	judgement  metav1.ConditionStatus
}

func newToolsHarness(t *testing.T) *toolsHarness {
	t.Helper()
	h := &toolsHarness{t: t, tools: registry.NewTools()}
	show := func(ctx context.Context, c client.Client, name string) {
		var tr ltiv1.ToolRegistration
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &tr); err != nil {
			t.Errorf("reading back %s: %v", name, err)
			return
		}
		judged := tr.DeepCopy()
		judged.Status.Conditions = []metav1.Condition{{Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue,
			ObservedGeneration: tr.Generation, Reason: ltiv1.ReasonReady}}
		if h.judgement != "" {
			judged.Status.Conditions[0].Status = h.judgement
		}
		if h.judgeAfter == 0 {
			h.tools.Apply(judged)
			return
		}
		h.tools.Apply(&tr) // seen before the controller's verdict on this generation
		time.AfterFunc(h.judgeAfter, func() { h.tools.Apply(judged) })
	}
	h.k8s = interceptor.NewClient(testclient.NewFake(t), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			if obj.GetName() == "" && obj.GetGenerateName() != "" {
				obj.SetName(obj.GetGenerateName() + "x" + time.Now().Format("150405.000000000")[7:])
			}
			testclient.Created(obj)
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			show(ctx, c, obj.GetName())
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			show(ctx, c, obj.GetName())
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			h.tools.Forget(obj)
			return nil
		},
	})
	sealing, err := keyring.Sealing.NewKey(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cursors, err := sessions.NewKeyring([]keyring.SealingKey{sealing})
	if err != nil {
		t.Fatal(err)
	}
	api := &admin.Tools{Registry: h.tools, Client: h.k8s, Namespace: namespace, KeyWait: 500 * time.Millisecond, Cursors: cursors}
	h.dynreg = &admin.ToolDynReg{Tools: api, Sealer: cursors, Replays: replay.NewMemory(1000), Issuer: "https://lti.example.com"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/tools/registrations", h.dynreg.Start)
	mux.HandleFunc("GET "+paths.PlatformOpenIDConfiguration, h.dynreg.Configuration)
	mux.HandleFunc("POST "+paths.PlatformRegister, h.dynreg.Register)
	mux.HandleFunc("GET "+paths.PlatformRegistrationPage, h.dynreg.Page)
	mux.HandleFunc("GET /api/tools", api.List)
	mux.HandleFunc("POST /api/tools", api.Create)
	mux.HandleFunc("GET /api/tools/{id}", api.Get)
	mux.HandleFunc("PUT /api/tools/{id}", api.Update)
	mux.HandleFunc("DELETE /api/tools/{id}", api.Delete)
	mux.HandleFunc("POST /api/tools/{id}/activate", api.Activate)
	mux.HandleFunc("POST /api/tools/{id}/deactivate", api.Deactivate)
	h.api = httptest.NewServer(httpapi.LimitBody(64 << 10)(mux))
	t.Cleanup(h.api.Close)
	api.PublicURL, h.dynreg.PublicURL = h.api.URL, h.api.URL
	return h
}

func (h *toolsHarness) call(method, path string, body any) testhttp.Reply {
	h.t.Helper()
	return testhttp.Do(h.t, http.DefaultClient, testhttp.NewRequest(h.t, method, h.api.URL+path, body))
}

func (h *toolsHarness) stored(name string) *ltiv1.ToolRegistration {
	h.t.Helper()
	var tr ltiv1.ToolRegistration
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &tr); err != nil {
		return nil
	}
	return &tr
}

func toolBody(id, clientID string) map[string]any {
	b := map[string]any{
		"name": "Example Tool", "clientId": clientID, "loginUrl": "https://tool.example.com/lti/login",
		"redirectionUris": []string{"https://tool.example.com/lti/launch"}, "targetLinkUri": "https://tool.example.com/lti/launch",
		"authConfig": map[string]any{"method": "JWK_SET", "key": "https://tool.example.com/jwks"},
		"scopes":     []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore)},
		"custom":     map[string]string{"course": "$Context.id"}, "platformDataUrl": "https://learn.example.edu/ltiop-data",
	}
	if id != "" {
		b["id"] = id
	}
	return b
}

func decodeTool(t *testing.T, r testhttp.Reply) admin.Tool {
	t.Helper()
	var tool admin.Tool
	if err := json.Unmarshal([]byte(r.Body), &tool); err != nil {
		t.Fatalf("%d %s: %v", r.Status, r.Body, err)
	}
	return tool
}

func envelopeCode(t *testing.T, r testhttp.Reply) (string, string) {
	t.Helper()
	var env httpapi.Envelope
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
		t.Fatalf("%d %s: not the envelope", r.Status, r.Body)
	}
	return env.Details.Message, env.Details.Description
}

func TestToolsLifecycle(t *testing.T) {
	h := newToolsHarness(t)
	r := h.call("POST", "/api/tools", toolBody("example-tool", "example-client"))
	created := decodeTool(t, r)
	if r.Status != 201 || r.Header.Get("Location") != "/api/tools/example-tool" || created.ID != "example-tool" || created.ClientID != "example-client" ||
		!created.Active || !created.Ready || created.DeploymentID != "1" || created.PlatformDataURL != "https://learn.example.edu/ltiop-data" || created.Custom["course"] != "$Context.id" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if s := h.stored("example-tool"); s == nil || s.Spec.ClientID != "example-client" || len(s.Spec.Scopes) != 2 {
		t.Fatalf("stored: %+v", s)
	}
	r = h.call("GET", "/api/tools/example-tool", nil)
	got := decodeTool(t, r)
	if r.Status != 200 || got.Name != "Example Tool" {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}

	// PUT accepts what GET answered, with a change; fields left out are cleared (custom).
	var body map[string]any
	_ = json.Unmarshal([]byte(r.Body), &body)
	body["name"] = "Example Tool 2"
	delete(body, "custom")
	r = h.call("PUT", "/api/tools/example-tool", body)
	if r.Status != 200 || decodeTool(t, r).Name != "Example Tool 2" {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if s := h.stored("example-tool"); s.Spec.Name != "Example Tool 2" || len(s.Spec.Custom) != 0 || s.Spec.ClientID != "example-client" {
		t.Fatalf("stored after PUT: %+v", s.Spec)
	}
	body["id"] = "another"
	if r = h.call("PUT", "/api/tools/example-tool", body); r.Status != 400 {
		t.Fatalf("PUT with another id: %d %s", r.Status, r.Body)
	}

	r = h.call("POST", "/api/tools/example-tool/deactivate", nil)
	if r.Status != 200 || decodeTool(t, r).Active || h.tools.Get("example-tool").Usable() {
		t.Fatalf("deactivate: %d %s", r.Status, r.Body)
	}
	r = h.call("POST", "/api/tools/example-tool/activate", nil)
	if r.Status != 200 || !decodeTool(t, r).Active || !h.tools.Get("example-tool").Usable() {
		t.Fatalf("activate: %d %s", r.Status, r.Body)
	}

	if r = h.call("DELETE", "/api/tools/example-tool", nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/api/tools/example-tool"}, {"DELETE", "/api/tools/example-tool"},
		{"POST", "/api/tools/example-tool/activate"}, {"PUT", "/api/tools/example-tool"}} {
		var b any
		if c.method == "PUT" {
			b = toolBody("", "")
		}
		r = h.call(c.method, c.path, b)
		if code, _ := envelopeCode(t, r); r.Status != 404 || code != admin.CodeToolNotFound {
			t.Errorf("%s %s after delete: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if h.stored("example-tool") != nil {
		t.Fatal("still stored")
	}
}

// TestToolsWritesAnswerOnceJudged: POST, PUT and activate answer once the controller has
// judged the written generation, so ready in the answer holds and a launch may follow at
// once; a tool judged not Ready is answered as such.
func TestToolsWritesAnswerOnceJudged(t *testing.T) {
	h := newToolsHarness(t)
	h.judgeAfter = 50 * time.Millisecond
	r := h.call("POST", "/api/tools", toolBody("example-tool", "example-client"))
	if r.Status != 201 || !decodeTool(t, r).Ready {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	body := toolBody("example-tool", "example-client")
	body["name"] = "Example Tool 2"
	if r = h.call("PUT", "/api/tools/example-tool", body); r.Status != 200 || !decodeTool(t, r).Ready {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if r = h.call("POST", "/api/tools/example-tool/deactivate", nil); r.Status != 200 || !decodeTool(t, r).Ready {
		t.Fatalf("deactivate: %d %s", r.Status, r.Body)
	}
	if r = h.call("POST", "/api/tools/example-tool/activate", nil); r.Status != 200 || !decodeTool(t, r).Ready || !h.tools.Get("example-tool").Usable() {
		t.Fatalf("activate: %d %s", r.Status, r.Body)
	}
	h.judgement = metav1.ConditionFalse
	if r = h.call("POST", "/api/tools", toolBody("refused-tool", "other-client")); r.Status != 201 || decodeTool(t, r).Ready {
		t.Fatalf("a tool the controller refuses: %d %s", r.Status, r.Body)
	}
}

// TestToolsShowLaunchHealth: GET answers status.launchHealth in UTC, and leaves it out
// while nothing was recorded (an empty object included).
func TestToolsShowLaunchHealth(t *testing.T) {
	h := newToolsHarness(t)
	if r := h.call("POST", "/api/tools", toolBody("example-tool", "example-client")); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	shown := func(health *ltiv1.LaunchHealth) string {
		t.Helper()
		reg := h.stored("example-tool")
		reg.Status.Conditions = []metav1.Condition{{Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: reg.Generation, Reason: ltiv1.ReasonReady}}
		reg.Status.LaunchHealth = health
		h.tools.Apply(reg)
		var got struct {
			LaunchHealth json.RawMessage `json:"launchHealth"`
		}
		r := h.call("GET", "/api/tools/example-tool", nil)
		if err := json.Unmarshal([]byte(r.Body), &got); r.Status != 200 || err != nil {
			t.Fatalf("get: %d %s", r.Status, r.Body)
		}
		return string(got.LaunchHealth)
	}
	if got := shown(nil); got != "" {
		t.Errorf("no launch health: %s", got)
	}
	if got := shown(&ltiv1.LaunchHealth{}); got != "" {
		t.Errorf("an empty launch health: %s", got)
	}
	paris := time.FixedZone("CET", 3600)
	launched := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, paris))
	refused := ltiv1.LaunchRefusal{Time: metav1.NewTime(time.Date(2026, 11, 29, 10, 5, 0, 0, paris)), Code: "AUDIENCE_MISMATCH", Rule: "P-TOK-05"}
	want := `{"lastLaunchTime":"2026-11-29T09:00:00Z","lastRefusal":{"time":"2026-11-29T09:05:00Z","code":"AUDIENCE_MISMATCH","rule":"P-TOK-05"}}`
	if got := shown(&ltiv1.LaunchHealth{LastLaunchTime: &launched, LastRefusal: &refused}); got != want {
		t.Errorf("launch health:\n got %s\nwant %s", got, want)
	}
	refused.Rule = ""
	want = `{"lastRefusal":{"time":"2026-11-29T09:05:00Z","code":"AUDIENCE_MISMATCH"}}`
	if got := shown(&ltiv1.LaunchHealth{LastRefusal: &refused}); got != want {
		t.Errorf("a refusal without a rule, no launch yet:\n got %s\nwant %s", got, want)
	}
}

func TestToolsRefusals(t *testing.T) {
	h := newToolsHarness(t)
	if r := h.call("POST", "/api/tools", toolBody("first", "client-1")); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	before := h.writes.Passed()
	for name, c := range map[string]struct {
		change func(map[string]any)
		want   string
	}{
		"no name":               {func(b map[string]any) { delete(b, "name") }, "name: required"},
		"no loginUrl":           {func(b map[string]any) { delete(b, "loginUrl") }, "loginUrl: required"},
		"http outside dev mode": {func(b map[string]any) { b["targetLinkUri"] = "http://tool.example.com/launch" }, "targetLinkUri"},
		"fragment":              {func(b map[string]any) { b["redirectionUris"] = []string{"https://tool.example.com/launch#x"} }, "redirectionUris[0]: must not carry a fragment"},
		"no redirection URI":    {func(b map[string]any) { delete(b, "redirectionUris") }, "redirectionUris: at least one"},
		"unknown scope":         {func(b map[string]any) { b["scopes"] = []string{"openid"} }, `scopes[0]: "openid"`},
		"bad key method":        {func(b map[string]any) { b["authConfig"] = map[string]any{"method": "HS256", "key": "x"} }, "authConfig.method"},
		"bad custom key":        {func(b map[string]any) { b["custom"] = map[string]string{"a b": "1"} }, "custom: key"},
		"bad platform data URL": {func(b map[string]any) { b["platformDataUrl"] = "ftp://x" }, "platformDataUrl"},
		"unknown field":         {func(b map[string]any) { b["colour"] = "red" }, "unknown field"},
		"bad id":                {func(b map[string]any) { b["id"] = "Not A Name" }, "id:"},
		"duplicate client id":   {func(b map[string]any) { b["id"], b["clientId"] = "second", "client-1" }, "client id"},
		"existing id":           {func(b map[string]any) { b["clientId"] = "client-9" }, "exists"},
	} {
		b := toolBody("first", "client-2")
		c.change(b)
		r := h.call("POST", "/api/tools", b)
		_, desc := envelopeCode(t, r)
		if r.Status/100 != 4 || !strings.Contains(desc, c.want) {
			t.Errorf("%s: %d %s, want a refusal naming %q", name, r.Status, r.Body, c.want)
		}
	}
	// The existing id reached the API server (which refused it); nothing else did.
	if n := h.writes.Passed() - before; n > 1 {
		t.Fatalf("%d refused requests reached the API server", n)
	}
	if s := h.stored("second"); s != nil {
		t.Fatal("a refused tool was stored")
	}
}

func TestToolsListPaging(t *testing.T) {
	h := newToolsHarness(t)
	for _, id := range []string{"tool-a", "tool-b", "tool-c", "tool-d", "tool-e"} {
		if r := h.call("POST", "/api/tools", toolBody(id, "client-"+id)); r.Status != 201 {
			t.Fatalf("create %s: %d %s", id, r.Status, r.Body)
		}
	}
	h.call("POST", "/api/tools/tool-c/deactivate", nil)
	var all []string
	next := "/api/tools?limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 4 {
			t.Fatal("paging does not end")
		}
		r := h.call("GET", strings.TrimPrefix(next, h.api.URL), nil)
		var list admin.ToolList
		if err := json.Unmarshal([]byte(r.Body), &list); err != nil || r.Status != 200 || len(list.Tools) > 2 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		for _, tool := range list.Tools {
			all = append(all, tool.ID)
		}
		next = list.Next
		if next != "" && r.Header.Get("Link") != "<"+next+`>; rel="next"` {
			t.Fatalf("Link %q", r.Header.Get("Link"))
		}
	}
	if strings.Join(all, ",") != "tool-a,tool-b,tool-c,tool-d,tool-e" {
		t.Fatalf("paged: %v", all)
	}
	var list admin.ToolList
	r := h.call("GET", "/api/tools?active=false", nil)
	_ = json.Unmarshal([]byte(r.Body), &list)
	if len(list.Tools) != 1 || list.Tools[0].ID != "tool-c" || list.Next != "" {
		t.Fatalf("active=false: %s", r.Body)
	}
	r = h.call("GET", "/api/tools?clientId=client-tool-d", nil)
	_ = json.Unmarshal([]byte(r.Body), &list)
	if len(list.Tools) != 1 || list.Tools[0].ID != "tool-d" {
		t.Fatalf("clientId filter: %s", r.Body)
	}
	// A cursor is for the filters it was issued with.
	r = h.call("GET", "/api/tools?limit=1&active=true", nil)
	_ = json.Unmarshal([]byte(r.Body), &list)
	cursor := list.Next[strings.Index(list.Next, "cursor=")+len("cursor="):]
	if i := strings.IndexByte(cursor, '&'); i >= 0 {
		cursor = cursor[:i]
	}
	if r = h.call("GET", "/api/tools?active=false&cursor="+cursor, nil); r.Status != 400 {
		t.Fatalf("cursor with other filters: %d %s", r.Status, r.Body)
	}
	for _, q := range []string{"limit=0", "limit=x", "active=maybe", "cursor=forged"} {
		if r = h.call("GET", "/api/tools?"+q, nil); r.Status != 400 {
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
		}
	}
}
