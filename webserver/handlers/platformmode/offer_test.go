package platformmode_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

// launchOffering launches h's tool into contextID with the services JSON given (the
// integrator's `services` of POST /api/launches/idtoken) and returns the launch the tool
// verified.
func (h *harness) launchOffering(contextID, services string) toolsim.Launch {
	h.t.Helper()
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "learner-1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"}})
	d := launchData(payload)
	d.Context.ID = contextID
	d.Services = &ltiplatform.Services{}
	if err := json.Unmarshal([]byte(services), d.Services); err != nil {
		h.t.Fatal(err)
	}
	_, l := h.answerAndPost(d)
	if !l.OK {
		h.t.Fatalf("the tool refused the launch: %s", l.Err)
	}
	return l
}

// claimURLs reads the service URLs of a launch's claims ("" when absent) and the root they
// share.
func claimURLs(t *testing.T, l toolsim.Launch) (root, memberships, lineItems, lineItem string, agsScopes []string) {
	t.Helper()
	if n, ok := l.Claims[claimNRPS].(map[string]any); ok {
		memberships, _ = n["context_memberships_url"].(string)
		root = strings.TrimSuffix(memberships, "/memberships")
	}
	if a, ok := l.Claims[claimAGS].(map[string]any); ok {
		lineItems, _ = a["lineitems"].(string)
		lineItem, _ = a["lineitem"].(string)
		for _, s := range a["scope"].([]any) {
			agsScopes = append(agsScopes, s.(string))
		}
		if root == "" && lineItem != "" {
			root = lineItem[:strings.LastIndex(lineItem, "/lineitems/")]
		}
		if root == "" {
			root = strings.TrimSuffix(lineItems, "/lineitems")
		}
	}
	if root == "" {
		t.Fatalf("the launch has no service claim of ltiop's: %v", l.Claims)
	}
	return root, memberships, lineItems, lineItem, agsScopes
}

// dataCallsSince returns the data API calls made after the first n.
func (h *harness) dataCallsSince(n int) []datasim.Request { return h.data.Calls()[n:] }

// TestServicesServeOnlyWhatTheLaunchOffered performs the attacks of issue #34 (1): a tool
// holding every scope, given a launch that offered less, tries the rest through the
// service root of that launch. Each is refused before the data API is called (P-NRPS-03,
// P-AGS-02), and what was offered still works.
func TestServicesServeOnlyWhatTheLaunchOffered(t *testing.T) {
	h := newHarness(t, func(r *v1alpha1.ToolRegistration) {
		r.Spec.Scopes = []v1alpha1.Scope{v1alpha1.ScopeNRPSMembership, v1alpha1.ScopeAGSLineItem, v1alpha1.ScopeAGSLineItemRead,
			v1alpha1.ScopeAGSScore, v1alpha1.ScopeAGSResultRead}
	})
	seedCourse(h, "course-1", 3)
	li := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz 1", ScoreMaximum: 10})
	other := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz 2", ScoreMaximum: 10})
	tok := h.token(scopeNRPS, scopeLineItem, scopeLineItemRead, scopeScore, scopeResult)
	score := func(user string) map[string]any {
		return map[string]any{"userId": user, "scoreGiven": 1, "scoreMaximum": 2, "activityProgress": "Completed",
			"gradingProgress": "FullyGraded", "timestamp": "2026-11-29T01:00:00.000Z"}
	}
	item := map[string]any{"label": "Made by the tool", "scoreMaximum": 5}

	t.Run("P-NRPS-03 namesAndRoles false, AGS narrowed to score: roster and line item management refused", func(t *testing.T) {
		h := h.on(t)
		l := h.launchOffering("course-1", `{"namesAndRoles": false, "assignmentAndGrades": {"lineItemId": `+jsonString(li)+`, "scopes": ["`+scopeScore+`"]}}`)
		root, memberships, lineItems, lineItem, scopes := claimURLs(t, l)
		if memberships != "" || !slices.Equal(scopes, []string{scopeScore}) || lineItems == "" || lineItem == "" {
			t.Fatalf("claims: memberships %q, scopes %v, lineitems %q, lineitem %q", memberships, scopes, lineItems, lineItem)
		}
		n := len(h.data.Calls())
		refused(t, h.call("GET", root+"/memberships", tok, "", "", nil), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("GET", lineItems, tok, "", "", nil), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("POST", lineItems, tok, "", mediaLineItem, item), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("GET", lineItem, tok, "", "", nil), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("PUT", lineItem, tok, "", mediaLineItem, item), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("DELETE", lineItem, tok, "", "", nil), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("GET", lineItem+"/results", tok, "", "", nil), 403, ltiplatform.CodeServiceNotOffered)
		if calls := h.dataCallsSince(n); len(calls) != 0 {
			t.Fatalf("refused calls reached the data API: %+v", calls)
		}
		if ans := h.call("POST", lineItem+"/scores", tok, "", mediaScore, score("u1")); ans.Status != 200 {
			t.Fatalf("the score the launch offered: %d %s", ans.Status, ans.Body)
		}
	})

	t.Run("P-AGS-02 lineItemOnly: the tool may use the link's line item and no other", func(t *testing.T) {
		h := h.on(t)
		l := h.launchOffering("course-1", `{"namesAndRoles": true, "assignmentAndGrades": {"lineItemId": `+jsonString(li)+`, "lineItemOnly": true}}`)
		root, _, lineItems, lineItem, _ := claimURLs(t, l)
		if lineItems != "" || lineItem != root+"/lineitems/"+url.PathEscape(li) {
			t.Fatalf("claims: lineitems %q (want none), lineitem %q", lineItems, lineItem)
		}
		container := root + "/lineitems"
		otherItem := container + "/" + url.PathEscape(other)
		n := len(h.data.Calls())
		refused(t, h.call("GET", container, tok, "", "", nil), 403, ltiplatform.CodeLineItemNotOffered)
		refused(t, h.call("POST", container, tok, "", mediaLineItem, item), 403, ltiplatform.CodeLineItemNotOffered)
		refused(t, h.call("GET", otherItem, tok, "", "", nil), 403, ltiplatform.CodeLineItemNotOffered)
		refused(t, h.call("PUT", otherItem, tok, "", mediaLineItem, item), 403, ltiplatform.CodeLineItemNotOffered)
		refused(t, h.call("DELETE", otherItem, tok, "", "", nil), 403, ltiplatform.CodeLineItemNotOffered)
		refused(t, h.call("POST", otherItem+"/scores", tok, "", mediaScore, score("u2")), 403, ltiplatform.CodeLineItemNotOffered)
		refused(t, h.call("GET", otherItem+"/results", tok, "", "", nil), 403, ltiplatform.CodeLineItemNotOffered)
		if calls := h.dataCallsSince(n); len(calls) != 0 {
			t.Fatalf("refused calls reached the data API: %+v", calls)
		}
		if len(h.data.Scores("course-1", other)) != 0 {
			t.Fatal("a score reached the line item the launch did not offer")
		}
		for _, ans := range []toolsim.ServiceAnswer{
			h.call("GET", lineItem, tok, mediaLineItem, "", nil),
			h.call("POST", lineItem+"/scores", tok, "", mediaScore, score("u3")),
			h.call("GET", lineItem+"/results", tok, mediaResults, "", nil),
			h.call("GET", root+"/memberships", tok, mediaMemberships, "", nil),
		} {
			if ans.Status != 200 {
				t.Fatalf("what the launch offered: %d %s", ans.Status, ans.Body)
			}
		}
	})

	t.Run("AGS false: no line item of the context through the roster's grant", func(t *testing.T) {
		h := h.on(t)
		root, memberships, _, _, _ := claimURLs(t, h.launchOffering("course-1", `{"namesAndRoles": true, "assignmentAndGrades": false}`))
		refused(t, h.call("GET", root+"/lineitems", tok, "", "", nil), 403, ltiplatform.CodeServiceNotOffered)
		refused(t, h.call("POST", root+"/lineitems/"+url.PathEscape(li)+"/scores", tok, "", mediaScore, score("u4")), 403, ltiplatform.CodeServiceNotOffered)
		if ans := h.call("GET", memberships, tok, mediaMemberships, "", nil); ans.Status != 200 {
			t.Fatalf("the roster the launch offered: %d %s", ans.Status, ans.Body)
		}
	})

	t.Run("lineItemOnly needs lineItemId, and ltiop's services", func(t *testing.T) {
		h := h.on(t)
		payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
		var body map[string]any
		b, _ := json.Marshal(launchData(payload))
		_ = json.Unmarshal(b, &body)
		body["services"] = map[string]any{"assignmentAndGrades": map[string]any{"lineItemOnly": true}}
		if status, code, desc := h.apiError("/api/launches/idtoken", body); status != 400 || code != "INVALID_PARAMETERS" ||
			!strings.HasPrefix(desc, "services.assignmentAndGrades.lineItemOnly") {
			t.Fatalf("lineItemOnly without lineItemId: %d %s %s", status, code, desc)
		}
		body["services"] = map[string]any{"assignmentAndGrades": map[string]any{"lineItemUrl": "https://lms.example.edu/li/1", "lineItemOnly": true}}
		if status, _, desc := h.apiError("/api/launches/idtoken", body); status != 400 || !strings.HasPrefix(desc, "services.assignmentAndGrades.lineItemOnly") {
			t.Fatalf("lineItemOnly with the integrator's URLs: %d %s", status, desc)
		}
		// The payload was not used up by the refusals.
		body["services"] = map[string]any{"assignmentAndGrades": map[string]any{"lineItemId": li, "lineItemOnly": true}}
		var ans platformmode.IDTokenAnswer
		if status := h.api("/api/launches/idtoken", body, &ans); status != 200 || strings.Contains(decodeMiddle(t, ans.IDToken), `"lineitems"`) {
			t.Fatalf("lineItemOnly: %d, a lineitems URL in the claim: %v", status, strings.Contains(decodeMiddle(t, ans.IDToken), `"lineitems"`))
		}
	})
}

// TestLineItemsBelongToTheirTool performs the attack of issue #34 (2): tool B, launched
// into the same course as tool A, goes for A's line items through its own grant. The data
// API (datasim, the reference implementation) sees B's tool id in every call and answers
// 404 for A's items, and B's list holds B's items only (P-AGS-06).
func TestLineItemsBelongToTheirTool(t *testing.T) {
	a := newHarness(t, func(r *v1alpha1.ToolRegistration) {
		r.Spec.Scopes = []v1alpha1.Scope{v1alpha1.ScopeAGSLineItem, v1alpha1.ScopeAGSScore, v1alpha1.ScopeAGSResultRead}
	})
	b := a.secondTool("tool-b", "tool-client-b")
	seedCourse(a, "course-1", 2)
	aItem := a.data.AddLineItem("course-1", a.reg.Name, datasim.LineItem{Label: "A's quiz", ScoreMaximum: 10})
	bItem := a.data.AddLineItem("course-1", b.reg.Name, datasim.LineItem{Label: "B's quiz", ScoreMaximum: 10})
	aRoot, _, _, _, _ := claimURLs(t, a.launchOffering("course-1", `{"assignmentAndGrades": {"lineItemId": `+jsonString(aItem)+`}}`))
	_, _, bItems, _, _ := claimURLs(t, b.launchOffering("course-1", `{"assignmentAndGrades": {"lineItemId": `+jsonString(bItem)+`}}`))
	aTok := a.token(scopeLineItem, scopeScore, scopeResult)
	bTok := b.token(scopeLineItem, scopeScore, scopeResult)
	aScore := map[string]any{"userId": "u1", "scoreGiven": 9, "scoreMaximum": 10, "activityProgress": "Completed",
		"gradingProgress": "FullyGraded", "timestamp": "2026-11-29T01:00:00.000Z"}
	if ans := a.call("POST", aRoot+"/lineitems/"+aItem+"/scores", aTok, "", mediaScore, aScore); ans.Status != 200 {
		t.Fatalf("A's own score: %d %s", ans.Status, ans.Body)
	}

	// B reaches for A's item with A's id under B's own grant.
	target := bItems + "/" + url.PathEscape(aItem)
	forged := map[string]any{"userId": "u1", "scoreGiven": 0, "scoreMaximum": 10, "activityProgress": "Completed",
		"gradingProgress": "FullyGraded", "timestamp": "2026-11-30T01:00:00.000Z"}
	refused(t, b.call("GET", target, bTok, "", "", nil), 404, "NOT_FOUND")
	refused(t, b.call("GET", target+"/results", bTok, "", "", nil), 404, "NOT_FOUND")
	refused(t, b.call("POST", target+"/scores", bTok, "", mediaScore, forged), 404, "NOT_FOUND")
	refused(t, b.call("PUT", target, bTok, "", mediaLineItem, map[string]any{"label": "Taken", "scoreMaximum": 1}), 404, "NOT_FOUND")
	refused(t, b.call("DELETE", target, bTok, "", "", nil), 404, "NOT_FOUND")
	// and through A's grant, B's token is not A's (P-NRPS-02).
	refused(t, b.call("GET", aRoot+"/lineitems", bTok, "", "", nil), 403, ltiplatform.CodeGrantOtherTool)

	ans := b.call("GET", bItems, bTok, mediaLineItems, "", nil)
	var list []map[string]any
	if ans.Status != 200 || json.Unmarshal(ans.Body, &list) != nil || len(list) != 1 || list[0]["label"] != "B's quiz" {
		t.Fatalf("B's list: %d %s", ans.Status, ans.Body)
	}
	created := b.call("POST", bItems, bTok, mediaLineItem, mediaLineItem, map[string]any{"label": "B's essay", "scoreMaximum": 5})
	if created.Status != 201 {
		t.Fatalf("B creates: %d %s", created.Status, created.Body)
	}
	ans = a.call("GET", aRoot+"/lineitems", aTok, mediaLineItems, "", nil)
	if ans.Status != 200 || json.Unmarshal(ans.Body, &list) != nil || len(list) != 1 || list[0]["label"] != "A's quiz" {
		t.Fatalf("A's list after B's create: %d %s", ans.Status, ans.Body)
	}
	if s := a.data.Scores("course-1", aItem); len(s) != 1 || *s[0].ScoreGiven != 9 {
		t.Fatalf("A's scores: %+v", s)
	}
	for _, c := range a.data.Calls() {
		if c.Tool.ID == "" || c.Tool.ClientID == "" || c.Tool.DeploymentID == "" {
			t.Fatalf("a data API call without the tool: %+v", c)
		}
	}
}

// TestTokensAndGrantsFollowTheRegistration performs the attacks of issue #34 (6): a token
// keeps no scope the registration lost, and a tool deleted and registered again under the
// same name and client id (another UID) accepts neither the old tokens nor the old grants.
func TestTokensAndGrantsFollowTheRegistration(t *testing.T) {
	h := newHarness(t, nil)
	seedCourse(h, "course-1", 2)
	li := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz", ScoreMaximum: 10})
	l := h.launchOffering("course-1", `{"namesAndRoles": true, "assignmentAndGrades": {"lineItemId": `+jsonString(li)+`}}`)
	_, memberships, _, lineItem, _ := claimURLs(t, l)
	tok := h.token(scopeNRPS, scopeLineItem, scopeScore)
	introspect := func(token string) platformmode.Introspection {
		var in platformmode.Introspection
		if status := h.api("/api/tokens/introspect", map[string]string{"token": token}, &in); status != 200 {
			t.Fatalf("introspect: %d", status)
		}
		return in
	}

	t.Run("a scope removed from the registration is refused to the tokens that hold it", func(t *testing.T) {
		h := h.on(t)
		reg := h.reg.DeepCopy()
		reg.Spec.Scopes = []v1alpha1.Scope{v1alpha1.ScopeAGSLineItem, v1alpha1.ScopeAGSScore}
		reg.Generation++
		reg.Status.Conditions[0].ObservedGeneration = reg.Generation
		h.tools.Apply(reg)
		defer h.tools.Apply(h.reg)
		ans := h.call("GET", memberships, tok, "", "", nil)
		refused(t, ans, 403, ltiplatform.CodeInsufficientScope)
		if !strings.Contains(ans.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
			t.Fatalf("WWW-Authenticate %q", ans.Header.Get("WWW-Authenticate"))
		}
		if in := introspect(tok); !in.Active || strings.Contains(in.Scope, scopeNRPS) {
			t.Fatalf("introspection still grants the removed scope: %+v", in)
		}
		if ans := h.call("GET", lineItem, tok, mediaLineItem, "", nil); ans.Status != 200 {
			t.Fatalf("a scope kept: %d %s", ans.Status, ans.Body)
		}
	})

	t.Run("a tool made again under the same names accepts neither old tokens nor old grants", func(t *testing.T) {
		h := h.on(t)
		again := h.reg.DeepCopy()
		again.UID = types.UID("uid-made-again")
		h.tools.Forget(h.reg)
		h.tools.Apply(again)
		defer func() {
			h.tools.Forget(again)
			h.tools.Apply(h.reg)
		}()
		refused(t, h.call("GET", memberships, tok, "", "", nil), http.StatusUnauthorized, platformmode.CodeToolInactive)
		if in := introspect(tok); in.Active {
			t.Fatalf("the old registration's token introspects active: %+v", in)
		}
		fresh := h.token(scopeNRPS)
		refused(t, h.call("GET", memberships, fresh, "", "", nil), 403, ltiplatform.CodeGrantOtherTool)
		_, current, _, _, _ := claimURLs(t, h.launchOffering("course-1", `{"namesAndRoles": true}`))
		if ans := h.call("GET", current, fresh, mediaMemberships, "", nil); ans.Status != 200 {
			t.Fatalf("the new registration's own launch: %d %s", ans.Status, ans.Body)
		}
	})
}
