package platformmode_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testdocs"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

const (
	claimNRPS          = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	claimAGS           = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	mediaMemberships   = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
	mediaLineItem      = "application/vnd.ims.lis.v2.lineitem+json"
	mediaLineItems     = "application/vnd.ims.lis.v2.lineitemcontainer+json"
	mediaResults       = "application/vnd.ims.lis.v2.resultcontainer+json"
	mediaScore         = "application/vnd.ims.lis.v1.score+json"
	roleLearner        = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	roleInstructor     = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	scopeLineItemRead  = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
	servicesPathPrefix = "/lti/platform/services/"
)

var allScopes = []string{scopeNRPS, scopeLineItem, scopeScore, scopeResult}

// servedLaunch launches h's tool into contextID with the services ltiop serves
// (namesAndRoles: true, assignmentAndGrades: {lineItemId}) and returns the launch the tool
// verified.
func (h *harness) servedLaunch(contextID, lineItemID string) toolsim.Launch {
	h.t.Helper()
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "learner-1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"}})
	d := launchData(payload)
	d.Context.ID = contextID
	d.Services = servedServices(lineItemID)
	_, l := h.answerAndPost(d)
	if !l.OK {
		h.t.Fatalf("the tool refused the launch: %s", l.Err)
	}
	return l
}

func servedServices(lineItemID string) *ltiplatform.Services {
	var s ltiplatform.Services
	if err := json.Unmarshal([]byte(`{"namesAndRoles": true, "assignmentAndGrades": {"lineItemId": `+jsonString(lineItemID)+`}}`), &s); err != nil {
		panic(err)
	}
	return &s
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// serviceURLs reads the NRPS and AGS claims of a launch.
func serviceURLs(t testing.TB, l toolsim.Launch) (memberships, lineItems, lineItem string, agsScopes []string) {
	t.Helper()
	n, _ := l.Claims[claimNRPS].(map[string]any)
	a, _ := l.Claims[claimAGS].(map[string]any)
	if n == nil || a == nil {
		t.Fatalf("the launch has no NRPS or AGS claim: %v", l.Claims)
	}
	memberships, _ = n["context_memberships_url"].(string)
	lineItems, _ = a["lineitems"].(string)
	lineItem, _ = a["lineitem"].(string)
	for _, s := range a["scope"].([]any) {
		agsScopes = append(agsScopes, s.(string))
	}
	return memberships, lineItems, lineItem, agsScopes
}

// token gets an access token for h's tool at ltiop's token endpoint.
func (h *harness) token(scopes ...string) string {
	h.t.Helper()
	tr, status, err := h.tool.RequestToken(context.Background(), scopes)
	if err != nil || status != http.StatusOK || tr.AccessToken == "" {
		h.t.Fatalf("token: %d %v %+v", status, err, tr)
	}
	return tr.AccessToken
}

func (h *harness) call(method, target, token, accept, contentType string, body any) toolsim.ServiceAnswer {
	h.t.Helper()
	var b []byte
	if body != nil {
		switch v := body.(type) {
		case string:
			b = []byte(v)
		default:
			b, _ = json.Marshal(v)
		}
	}
	ans, err := h.tool.CallService(context.Background(), method, target, token, accept, contentType, b)
	if err != nil {
		h.t.Fatal(err)
	}
	return ans
}

// refused checks that an answer is a refusal with status and code, in the error envelope.
func refused(t *testing.T, ans toolsim.ServiceAnswer, status int, code string) {
	t.Helper()
	var env httpapi.Envelope
	if ans.Status != status || json.Unmarshal(ans.Body, &env) != nil || env.Details.Message != code || env.Status != status {
		t.Fatalf("got %d %s, want %d %s", ans.Status, ans.Body, status, code)
	}
}

func seedCourse(h *harness, contextID string, n int) {
	members := make([]datasim.Member, 0, n)
	for i := range n {
		role := "Learner" // the contract's short form: ltiop answers the full URI (P-NRPS-04)
		if i == 0 {
			role = roleInstructor
		}
		members = append(members, datasim.Member{UserID: contextID + "-user-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26),
			Roles: []string{role}, Name: "Member", Email: "m@example.edu"})
	}
	h.data.AddMembers(contextID, "Course "+contextID, members...)
}

// TestServicesEndToEnd runs every operation of NRPS and AGS served by ltiop, as the tool
// calls them after a launch, with the data from the integrator's data API.
func TestServicesEndToEnd(t *testing.T) {
	h := newHarness(t, func(r *v1alpha1.ToolRegistration) {
		r.Spec.Scopes = []v1alpha1.Scope{v1alpha1.ScopeNRPSMembership, v1alpha1.ScopeAGSLineItem, v1alpha1.ScopeAGSScore, v1alpha1.ScopeAGSResultRead}
	})
	seedCourse(h, "course-1", 5)
	liID := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz 1", ScoreMaximum: 10, ResourceLinkID: "rl-1", Tag: "quiz"})
	l := h.servedLaunch("course-1", liID)
	memberships, lineItems, lineItem, agsScopes := serviceURLs(t, l)
	root := h.ltiop.URL + servicesPathPrefix
	if !strings.HasPrefix(memberships, root) || !strings.HasSuffix(memberships, "/memberships") ||
		lineItems != strings.TrimSuffix(memberships, "/memberships")+"/lineitems" || lineItem != lineItems+"/"+liID {
		t.Fatalf("service URLs: %s %s %s", memberships, lineItems, lineItem)
	}
	if !slices.Equal(agsScopes, []string{scopeLineItem, scopeResult, scopeScore}) {
		t.Fatalf("AGS claim scopes %v: the three AGS scopes the tool holds", agsScopes)
	}
	tok := h.token(allScopes...)

	t.Run("P-NRPS-04 memberships with paging P-NRPS-06", func(t *testing.T) {
		h := h.on(t)
		ans := h.call("GET", memberships+"?limit=2", tok, mediaMemberships, "", nil)
		if ans.Status != 200 || ans.Header.Get("Content-Type") != mediaMemberships {
			t.Fatalf("memberships: %d %s %s", ans.Status, ans.Header.Get("Content-Type"), ans.Body)
		}
		var page struct {
			ID      string `json:"id"`
			Context struct{ ID, Title string }
			Members []struct {
				UserID string   `json:"user_id"`
				Roles  []string `json:"roles"`
				Status string   `json:"status"`
				Email  string   `json:"email"`
			}
		}
		_ = json.Unmarshal(ans.Body, &page)
		if page.Context.ID != "course-1" || page.Context.Title != "Course course-1" || len(page.Members) != 2 ||
			page.Members[0].Roles[0] != roleInstructor || page.Members[1].Roles[0] != roleLearner || page.Members[1].Status != "Active" || page.ID != memberships+"?limit=2" {
			t.Fatalf("page: %s", ans.Body)
		}
		var all []string
		next := memberships + "?limit=2"
		for pages := 0; next != ""; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			ans := h.call("GET", next, tok, mediaMemberships, "", nil)
			var p struct {
				Members []struct {
					UserID string `json:"user_id"`
				}
			}
			_ = json.Unmarshal(ans.Body, &p)
			for _, m := range p.Members {
				all = append(all, m.UserID)
			}
			next = ""
			if link := ans.Header.Get("Link"); link != "" {
				if !strings.HasSuffix(link, `>; rel="next"`) {
					t.Fatalf("Link %q", link)
				}
				next = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
				if !strings.Contains(next, "limit=2") { // the tool uses next as is: filters stay in it
					t.Fatalf("next %q dropped the limit", next)
				}
			}
		}
		if len(all) != 5 {
			t.Fatalf("paged members %v, want 5", all)
		}
	})

	t.Run("P-NRPS-05 role filter and rlid P-NRPS-07", func(t *testing.T) {
		h := h.on(t)
		ans := h.call("GET", memberships+"?role=Instructor&rlid=rl-1", tok, "", "", nil)
		if ans.Status != 200 || !strings.Contains(string(ans.Body), roleInstructor) || strings.Contains(string(ans.Body), roleLearner) {
			t.Fatalf("role filter: %d %s", ans.Status, ans.Body)
		}
		calls := h.data.Calls()
		last := calls[len(calls)-1]
		if last.Role != roleInstructor || last.ResourceLinkID != "rl-1" || last.ContextID != "course-1" || last.Tool.ClientID != testClientID ||
			last.Tool.DeploymentID != testDeployment || last.Operation != platformdata.OpMemberships {
			t.Fatalf("the data API call: %+v", last)
		}
		refused(t, h.call("GET", memberships+"?role=Teacher", tok, "", "", nil), 400, "INVALID_PARAMETERS")
		refused(t, h.call("GET", memberships+"?limit=0", tok, "", "", nil), 400, "INVALID_PARAMETERS")
		refused(t, h.call("GET", memberships+"?limit=x", tok, "", "", nil), 400, "INVALID_PARAMETERS")
	})

	var created string
	t.Run("P-AGS-05 create, get, update a line item", func(t *testing.T) {
		h := h.on(t)
		ans := h.call("POST", lineItems, tok, mediaLineItem, mediaLineItem,
			map[string]any{"label": "Essay", "scoreMaximum": 50, "resourceId": "essay-1", "tag": "essay",
				"https://canvas.instructure.com/lti/submission_type": map[string]any{"type": "external_tool"}})
		var li map[string]any
		_ = json.Unmarshal(ans.Body, &li)
		created, _ = li["id"].(string)
		if ans.Status != 201 || ans.Header.Get("Content-Type") != mediaLineItem || !strings.HasPrefix(created, lineItems+"/") ||
			ans.Header.Get("Location") != created || li["https://canvas.instructure.com/lti/submission_type"] == nil {
			t.Fatalf("create: %d %s", ans.Status, ans.Body)
		}
		ans = h.call("GET", created, tok, mediaLineItem, "", nil)
		if ans.Status != 200 || !strings.Contains(string(ans.Body), `"label":"Essay"`) {
			t.Fatalf("get: %d %s", ans.Status, ans.Body)
		}
		li["label"] = "Essay (final)"
		ans = h.call("PUT", created, tok, mediaLineItem, mediaLineItem, li)
		if ans.Status != 200 || !strings.Contains(string(ans.Body), `"label":"Essay (final)"`) || !strings.Contains(string(ans.Body), `"id":"`+created+`"`) {
			t.Fatalf("put: %d %s", ans.Status, ans.Body)
		}
		li["id"] = lineItems + "/other"
		refused(t, h.call("PUT", created, tok, "", mediaLineItem, li), 400, ltiplatform.CodeInvalidLineItem)
	})

	t.Run("P-AGS-04 container filters and paging", func(t *testing.T) {
		h := h.on(t)
		ans := h.call("GET", lineItems+"?tag=essay", tok, mediaLineItems, "", nil)
		var items []map[string]any
		_ = json.Unmarshal(ans.Body, &items)
		if ans.Status != 200 || ans.Header.Get("Content-Type") != mediaLineItems || len(items) != 1 || items[0]["id"] != created {
			t.Fatalf("tag filter: %d %s", ans.Status, ans.Body)
		}
		ans = h.call("GET", lineItems+"?resource_link_id=rl-1", tok, "", "", nil)
		if ans.Status != 200 || !strings.Contains(string(ans.Body), `"label":"Quiz 1"`) || strings.Contains(string(ans.Body), "Essay") {
			t.Fatalf("resource_link_id filter: %s", ans.Body)
		}
		ans = h.call("GET", lineItems+"?resource_id=essay-1", tok, "", "", nil)
		if !strings.Contains(string(ans.Body), "Essay") || strings.Contains(string(ans.Body), "Quiz 1") {
			t.Fatalf("resource_id filter: %s", ans.Body)
		}
		ans = h.call("GET", lineItems+"?limit=1", tok, "", "", nil)
		link := ans.Header.Get("Link")
		if !strings.Contains(link, `rel="next"`) || !strings.Contains(link, "cursor=1") {
			t.Fatalf("paging Link %q", link)
		}
		next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		ans = h.call("GET", next, tok, "", "", nil)
		if ans.Status != 200 || !strings.Contains(string(ans.Body), "Essay") || ans.Header.Get("Link") != "" {
			t.Fatalf("second page: %s %q", ans.Body, ans.Header.Get("Link"))
		}
	})

	t.Run("P-AGS-07 score and P-AGS-08 results", func(t *testing.T) {
		h := h.on(t)
		score := map[string]any{"userId": "course-1-user-b", "scoreGiven": 8.5, "scoreMaximum": 10, "comment": "Good",
			"activityProgress": "Completed", "gradingProgress": "FullyGraded", "timestamp": "2026-11-29T01:00:00.123Z",
			"submission": map[string]any{"startedAt": "2026-11-29T00:30:00Z", "submittedAt": "2026-11-29T00:59:00Z"}}
		ans := h.call("POST", lineItem+"/scores", tok, "", mediaScore, score)
		if ans.Status != 200 || !strings.Contains(string(ans.Body), `"resultUrl":"`+lineItem+`/results?user_id=course-1-user-b"`) {
			t.Fatalf("score: %d %s", ans.Status, ans.Body)
		}
		got := h.data.Scores("course-1", liID)
		if len(got) != 1 || *got[0].ScoreGiven != 8.5 || got[0].Timestamp != "2026-11-29T01:00:00.123Z" || got[0].Submission.SubmittedAt == "" {
			t.Fatalf("the integrator received %+v", got)
		}
		// An older score than the one on record: the integrator's 409 reaches the tool.
		score["timestamp"] = "2026-11-29T00:00:00.000Z"
		refused(t, h.call("POST", lineItem+"/scores", tok, "", mediaScore, score), 409, "CONFLICT")

		ans = h.call("GET", lineItem+"/results?user_id=course-1-user-b", tok, mediaResults, "", nil)
		var results []map[string]any
		_ = json.Unmarshal(ans.Body, &results)
		if ans.Status != 200 || ans.Header.Get("Content-Type") != mediaResults || len(results) != 1 || results[0]["resultScore"] != 8.5 ||
			results[0]["scoreOf"] != lineItem || results[0]["userId"] != "course-1-user-b" || results[0]["id"] != lineItem+"/results?user_id=course-1-user-b" {
			t.Fatalf("results: %d %s", ans.Status, ans.Body)
		}
	})

	t.Run("delete a line item", func(t *testing.T) {
		h := h.on(t)
		if ans := h.call("DELETE", created, tok, "", "", nil); ans.Status != 204 {
			t.Fatalf("delete: %d %s", ans.Status, ans.Body)
		}
		refused(t, h.call("GET", created, tok, "", "", nil), 404, "NOT_FOUND") // P-AGS-09: 404 stays 404
	})
}

// TestServiceRefusals shows each attempt outside the grant refused (P-NRPS-01..03,
// P-AGS-01..03, P-AGS-07).
func TestServiceRefusals(t *testing.T) {
	h := newHarness(t, func(r *v1alpha1.ToolRegistration) {
		r.Spec.Scopes = []v1alpha1.Scope{v1alpha1.ScopeNRPSMembership, v1alpha1.ScopeAGSLineItem, v1alpha1.ScopeAGSScore, v1alpha1.ScopeAGSResultRead}
	})
	seedCourse(h, "course-1", 3)
	seedCourse(h, "course-2", 3)
	li1 := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz 1", ScoreMaximum: 10})
	li2 := h.data.AddLineItem("course-2", h.reg.Name, datasim.LineItem{Label: "Quiz 2", ScoreMaximum: 10})
	memberships, lineItems, lineItem, _ := serviceURLs(t, h.servedLaunch("course-1", li1))
	tok := h.token(allScopes...)
	goodScore := map[string]any{"userId": "u1", "scoreGiven": 1, "scoreMaximum": 2, "activityProgress": "Completed",
		"gradingProgress": "FullyGraded", "timestamp": "2026-11-29T01:00:00.000Z"}

	t.Run("P-NRPS-01 P-AGS-01 no token, another scheme, a forged token", func(t *testing.T) {
		h := h.on(t)
		ans := h.call("GET", memberships, "", "", "", nil)
		refused(t, ans, 401, httpapi.CodeMissingAuthorization)
		if !strings.HasPrefix(ans.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("WWW-Authenticate %q", ans.Header.Get("WWW-Authenticate"))
		}
		refused(t, h.call("GET", memberships, "", "", "", nil), 401, httpapi.CodeMissingAuthorization)
		forged := tok[:len(tok)-4] + "AAAA"
		ans = h.call("GET", memberships, forged, "", "", nil)
		refused(t, ans, 401, ltiplatform.CodeInvalidAccessToken)
		if !strings.Contains(ans.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("WWW-Authenticate %q", ans.Header.Get("WWW-Authenticate"))
		}
		// A token signed by the platform key for another purpose (an id_token) is not an access token.
		req, _ := http.NewRequest("GET", memberships, nil)
		req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
		res, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("Basic auth: %d", res.StatusCode)
		}
	})

	t.Run("P-NRPS-02 P-AGS-01 forged grant", func(t *testing.T) {
		h := h.on(t)
		grant := strings.TrimPrefix(strings.TrimSuffix(memberships, "/memberships"), h.ltiop.URL+servicesPathPrefix)
		// Flip a character inside the ciphertext: the seal does not open.
		parts := strings.Split(grant, ".")
		c := []byte(parts[3])
		c[5] ^= 1
		if c[5] == '.' {
			c[5] = 'A'
		}
		parts[3] = string(c)
		forged := h.ltiop.URL + servicesPathPrefix + strings.Join(parts, ".") + "/memberships"
		refused(t, h.call("GET", forged, tok, "", "", nil), 404, ltiplatform.CodeInvalidGrant)
		refused(t, h.call("GET", h.ltiop.URL+servicesPathPrefix+"not-a-grant/memberships", tok, "", "", nil), 404, ltiplatform.CodeInvalidGrant)
	})

	t.Run("P-AGS-02 missing scope", func(t *testing.T) {
		h := h.on(t)
		nrpsOnly := h.token(scopeNRPS)
		ans := h.call("POST", lineItem+"/scores", nrpsOnly, "", mediaScore, goodScore)
		refused(t, ans, 403, ltiplatform.CodeInsufficientScope)
		if !strings.Contains(ans.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
			t.Fatalf("WWW-Authenticate %q", ans.Header.Get("WWW-Authenticate"))
		}
		refused(t, h.call("GET", lineItems, nrpsOnly, "", "", nil), 403, ltiplatform.CodeInsufficientScope)
		refused(t, h.call("GET", lineItem+"/results", nrpsOnly, "", "", nil), 403, ltiplatform.CodeInsufficientScope)
		scoreOnly := h.token(scopeScore)
		refused(t, h.call("GET", memberships, scoreOnly, "", "", nil), 403, ltiplatform.CodeInsufficientScope) // P-NRPS-03
		refused(t, h.call("POST", lineItems, scoreOnly, "", mediaLineItem, map[string]any{"label": "x", "scoreMaximum": 1}), 403, ltiplatform.CodeInsufficientScope)
		refused(t, h.call("DELETE", lineItem, scoreOnly, "", "", nil), 403, ltiplatform.CodeInsufficientScope)
		if n := len(h.data.Scores("course-1", li1)); n != 0 {
			t.Fatalf("%d scores reached the integrator", n)
		}
	})

	t.Run("P-AGS-06 wrong context: course 2's line item through course 1's grant", func(t *testing.T) {
		h := h.on(t)
		refused(t, h.call("POST", lineItems+"/"+li2+"/scores", tok, "", mediaScore, goodScore), 404, "NOT_FOUND")
		refused(t, h.call("GET", lineItems+"/"+li2, tok, "", "", nil), 404, "NOT_FOUND")
		if n := len(h.data.Scores("course-2", li2)); n != 0 {
			t.Fatalf("a score reached course 2")
		}
	})

	t.Run("wrong context: another tool's grant for course 2", func(t *testing.T) {
		h := h.on(t)
		other := h.secondTool("other-tool", "tool-client-2")
		otherMemberships, otherLineItems, _, _ := serviceURLs(t, other.servedLaunch("course-2", li2))
		refused(t, h.call("GET", otherMemberships, tok, "", "", nil), 403, ltiplatform.CodeGrantOtherTool)
		refused(t, h.call("POST", otherLineItems+"/"+li2+"/scores", tok, "", mediaScore, goodScore), 403, ltiplatform.CodeGrantOtherTool)
		// and the other tool, with its own token, reads its own course.
		if ans := other.call("GET", otherMemberships, other.token(scopeNRPS), "", "", nil); ans.Status != 200 || !strings.Contains(string(ans.Body), "course-2") {
			t.Fatalf("other tool: %d %s", ans.Status, ans.Body)
		}
	})

	t.Run("P-AGS-03 media types", func(t *testing.T) {
		h := h.on(t)
		refused(t, h.call("POST", lineItem+"/scores", tok, "", "application/json", goodScore), 415, httpapi.CodeUnsupportedMedia)
		refused(t, h.call("POST", lineItems, tok, "", "application/json", map[string]any{"label": "x", "scoreMaximum": 1}), 415, httpapi.CodeUnsupportedMedia)
		refused(t, h.call("POST", lineItem+"/scores", tok, "", mediaScore, "{not json"), 400, httpapi.CodeInvalidBody)
	})

	t.Run("P-AGS-07 bad scores", func(t *testing.T) {
		h := h.on(t)
		before := len(h.data.Calls())
		for name, change := range map[string]func(map[string]any){
			"no userId":                  func(s map[string]any) { delete(s, "userId") },
			"no timestamp":               func(s map[string]any) { delete(s, "timestamp") },
			"timestamp without zone":     func(s map[string]any) { s["timestamp"] = "2026-11-29T01:00:00" },
			"negative scoreGiven":        func(s map[string]any) { s["scoreGiven"] = -1 },
			"scoreGiven without maximum": func(s map[string]any) { delete(s, "scoreMaximum") },
			"zero scoreMaximum":          func(s map[string]any) { s["scoreMaximum"] = 0 },
			"no activityProgress":        func(s map[string]any) { delete(s, "activityProgress") },
			"unknown gradingProgress":    func(s map[string]any) { s["gradingProgress"] = "Done" },
			"submitted before started": func(s map[string]any) {
				s["submission"] = map[string]any{"startedAt": "2026-11-29T01:00:00Z", "submittedAt": "2026-11-29T00:00:00Z"}
			},
			"scoreGiven is not a number": func(s map[string]any) { s["scoreGiven"] = "ten" },
		} {
			s := map[string]any{}
			for k, v := range goodScore {
				s[k] = v
			}
			change(s)
			ans := h.call("POST", lineItem+"/scores", tok, "", mediaScore, s)
			if ans.Status != 400 {
				t.Errorf("%s: %d %s", name, ans.Status, ans.Body)
			}
		}
		if n := len(h.data.Calls()); n != before {
			t.Fatalf("%d bad scores reached the integrator", n-before)
		}
		// Moodle's grade sync: scoreGiven a string of digits, timestamp PHP's ISO8601 (+0000).
		moodle := map[string]any{"userId": "u2", "scoreGiven": "8.50000", "scoreMaximum": 10, "activityProgress": "Completed",
			"gradingProgress": "FullyGraded", "timestamp": "2026-11-29T01:00:00+0000"}
		if ans := h.call("POST", lineItem+"/scores", tok, "", mediaScore, moodle); ans.Status != 200 {
			t.Fatalf("Moodle's score: %d %s", ans.Status, ans.Body)
		}
		if got := h.data.Scores("course-1", li1); *got[len(got)-1].ScoreGiven != 8.5 {
			t.Fatalf("the integrator got %v", *got[len(got)-1].ScoreGiven)
		}
		// extra credit is allowed (AGS §3.4: scoreGiven may exceed scoreMaximum), a cleared score too.
		extra := map[string]any{"userId": "u1", "scoreGiven": 12, "scoreMaximum": 10, "activityProgress": "Completed",
			"gradingProgress": "FullyGraded", "timestamp": "2026-11-29T02:00:00.000Z"}
		if ans := h.call("POST", lineItem+"/scores", tok, "", mediaScore, extra); ans.Status != 200 {
			t.Fatalf("extra credit: %d %s", ans.Status, ans.Body)
		}
	})

	t.Run("P-AGS-05 bad line items", func(t *testing.T) {
		h := h.on(t)
		refused(t, h.call("POST", lineItems, tok, "", mediaLineItem, map[string]any{"label": " ", "scoreMaximum": 1}), 400, ltiplatform.CodeInvalidLineItem)
		refused(t, h.call("POST", lineItems, tok, "", mediaLineItem, map[string]any{"label": "x", "scoreMaximum": 0}), 400, ltiplatform.CodeInvalidLineItem)
		refused(t, h.call("POST", lineItems, tok, "", mediaLineItem, map[string]any{"label": "x", "scoreMaximum": 1, "endDateTime": "tomorrow"}), 400, ltiplatform.CodeInvalidLineItem)
	})

	t.Run("P-NRPS-08 integrator down: 5xx, unreachable, too slow", func(t *testing.T) {
		h := h.on(t)
		before := len(h.data.Scores("course-1", li1))
		h.data.Fail(500)
		ans := h.call("POST", lineItem+"/scores", tok, "", mediaScore, goodScore)
		refused(t, ans, 502, platformdata.CodeUnavailable)
		if ans.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After on 502")
		}
		refused(t, h.call("GET", memberships, tok, "", "", nil), 502, platformdata.CodeUnavailable)
		h.data.Fail(401) // the integrator refuses our signature: a configuration problem, not the tool's
		refused(t, h.call("GET", memberships, tok, "", "", nil), 502, platformdata.CodeUnavailable)
		h.data.Fail(0)
		h.data.Delay(dataTimeout + time.Second)
		refused(t, h.call("GET", lineItems, tok, "", "", nil), 502, platformdata.CodeUnavailable)
		h.data.Delay(0)
		if n := len(h.data.Scores("course-1", li1)); n != before {
			t.Fatal("a score was written while the integrator failed")
		}
	})

	t.Run("P-AGS-09 integrator refusals mapped", func(t *testing.T) {
		h := h.on(t)
		for status, want := range map[int]struct {
			status int
			code   string
		}{400: {400, platformdata.CodeRefused}, 422: {400, platformdata.CodeRefused}, 403: {403, platformdata.CodeForbidden},
			404: {404, "NOT_FOUND"}, 409: {409, "CONFLICT"}, 503: {502, platformdata.CodeUnavailable}} {
			h.data.Fail(status)
			refused(t, h.call("GET", lineItem, tok, "", "", nil), want.status, want.code)
		}
		h.data.Fail(0)
	})

	t.Run("P-NRPS-01 expired token", func(t *testing.T) {
		h := h.on(t)
		h.clock.Advance(platformmode.AccessTokenTTL + time.Minute)
		defer h.clock.Advance(-platformmode.AccessTokenTTL - time.Minute)
		refused(t, h.call("GET", memberships, tok, "", "", nil), 401, ltiplatform.CodeAccessTokenExpired)
	})

	t.Run("P-NRPS-02 expired grant", func(t *testing.T) {
		h := h.on(t)
		h.clock.Advance(platformmode.DefaultServiceGrantTTL + time.Hour)
		defer h.clock.Advance(-platformmode.DefaultServiceGrantTTL - time.Hour)
		// The tool's assertion is dated on the platform's (advanced) clock.
		at := h.clock.Now()
		tr, status, err := h.tool.RequestTokenWith(context.Background(), []string{scopeNRPS},
			toolsim.WithClaim("iat", at.Unix()), toolsim.WithClaim("exp", at.Add(time.Minute).Unix()))
		if err != nil || status != 200 {
			t.Fatalf("token: %d %v %+v", status, err, tr)
		}
		refused(t, h.call("GET", memberships, tr.AccessToken, "", "", nil), 404, ltiplatform.CodeGrantExpired)
	})

	t.Run("inactive tool", func(t *testing.T) {
		h := h.on(t)
		reg := h.reg.DeepCopy()
		off := false
		reg.Spec.Active = &off
		h.tools.Apply(reg)
		defer h.tools.Apply(h.reg)
		refused(t, h.call("GET", memberships, tok, "", "", nil), 401, platformmode.CodeToolInactive)
	})

	t.Run("wrong deployment: the tool was re-deployed since the launch", func(t *testing.T) {
		h := h.on(t)
		reg := h.reg.DeepCopy()
		reg.Spec.DeploymentID = "deploy-2"
		h.tools.Apply(reg)
		defer h.tools.Apply(h.reg)
		// Even with a token of the new deployment, the grant of the old one opens nothing.
		h.tool.SetConfig(withDeployment(h.tool.Config(), "deploy-2"))
		defer h.tool.SetConfig(withDeployment(h.tool.Config(), testDeployment))
		refused(t, h.call("GET", memberships, h.token(scopeNRPS), "", "", nil), 403, ltiplatform.CodeDeploymentMismatch)
		refused(t, h.call("GET", memberships, tok, "", "", nil), 403, ltiplatform.CodeDeploymentMismatch)
	})
}

func withDeployment(c toolsim.Config, d string) toolsim.Config {
	c.DeploymentID = d
	return c
}

// secondTool registers another tool (its own toolsim and key) and returns a harness for it.
func (h *harness) secondTool(name, clientID string) *harness {
	h.t.Helper()
	o := *h
	tool, err := toolsim.New(toolsim.Config{ClientID: clientID, DeploymentID: testDeployment, Issuer: h.ltiop.URL,
		AuthorizationEndpoint: h.ltiop.URL + paths.PlatformAuthorize, TokenEndpoint: h.ltiop.URL + paths.PlatformToken,
		PlatformJWKSURL: h.ltiop.URL + paths.PlatformJWKS})
	if err != nil {
		h.t.Fatal(err)
	}
	srv := httptest.NewServer(tool.Handler())
	h.t.Cleanup(srv.Close)
	reg := h.reg.DeepCopy()
	reg.Name, reg.UID, reg.Spec.ClientID = name, types.UID("uid-"+name), clientID
	reg.Spec.LoginURL = v1alpha1.EndpointURL(srv.URL + "/login")
	reg.Spec.RedirectionURIs = []v1alpha1.EndpointURL{v1alpha1.EndpointURL(srv.URL + "/launch")}
	reg.Spec.TargetLinkURI = v1alpha1.EndpointURL(srv.URL + "/launch")
	reg.Spec.DeepLinkingURL = ""
	reg.Spec.AuthConfig.Key = srv.URL + "/jwks"
	h.tools.Apply(reg)
	o.tool, o.toolSrv, o.reg = tool, srv, reg
	return &o
}

// TestServedClaimsLaunchSide covers POST /api/launches/idtoken with the services ltiop
// serves: the claims carry ltiop's URLs, integrator-hosted URLs are unchanged, and what
// cannot be bound is refused without using the payload up.
func TestServedClaimsLaunchSide(t *testing.T) {
	h := newHarness(t, nil)
	t.Run("integrator-hosted URLs keep working", func(t *testing.T) {
		h := h.on(t)
		payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
		_, l := h.answerAndPost(launchData(payload))
		m, items, _, _ := serviceURLs(t, l)
		if m != "https://lms.example.edu/courses/1/members" || items != "https://lms.example.edu/courses/1/lineitems" {
			t.Fatalf("claims: %s %s", m, items)
		}
	})
	t.Run("refusals keep the payload", func(t *testing.T) {
		h := h.on(t)
		payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
		d := launchData(payload)
		d.Context = nil
		d.Services = servedServices("")
		if status, code, desc := h.apiError("/api/launches/idtoken", d); status != 400 || code != "INVALID_PARAMETERS" || !strings.HasPrefix(desc, "context.id") {
			t.Fatalf("no context: %d %s %s", status, code, desc)
		}
		var body map[string]any
		b, _ := json.Marshal(launchData(payload))
		_ = json.Unmarshal(b, &body)
		body["services"] = map[string]any{"assignmentAndGrades": map[string]any{"lineItemsUrl": "https://lms.example.edu/x", "lineItemId": "7"}}
		if status, _, desc := h.apiError("/api/launches/idtoken", body); status != 400 || !strings.HasPrefix(desc, "services.assignmentAndGrades.lineItemId") {
			t.Fatalf("lineItemId with URLs: %d %s", status, desc)
		}
		body["services"] = map[string]any{"namesAndRoles": map[string]any{"contextMembershipsUrl": "https://lms.example.edu/m", "extra": 1}}
		if status, _, desc := h.apiError("/api/launches/idtoken", body); status != 400 || !strings.Contains(desc, "extra") {
			t.Fatalf("unknown field: %d %s", status, desc)
		}
		body["services"] = map[string]any{"namesAndRoles": false, "assignmentAndGrades": false}
		var ans platformmode.IDTokenAnswer
		if status := h.api("/api/launches/idtoken", body, &ans); status != 200 {
			t.Fatalf("false: %d", status)
		}
		if strings.Contains(decodeMiddle(t, ans.IDToken), "namesroleservice") {
			t.Fatal("false still made a claim")
		}
	})
	t.Run("no data API: served claims refused", func(t *testing.T) {
		h := newHarness(t, nil)
		h.platform.SetData(nil)
		payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
		d := launchData(payload)
		d.Services = servedServices("")
		if status, _, desc := h.apiError("/api/launches/idtoken", d); status != 400 || !strings.Contains(desc, "platform data API") {
			t.Fatalf("%d %s", status, desc)
		}
	})
}

func decodeMiddle(t *testing.T, jwt string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServicesGivenAtCreateLaunch: POST /api/launches takes the services too; the answer
// without services uses them (ltiop's URLs), and a served claim survives the message hint
// and the payload.
func TestServicesGivenAtCreateLaunch(t *testing.T) {
	h := newHarness(t, nil)
	seedCourse(h, "course-1", 2)
	li := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz", ScoreMaximum: 10})
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "learner-1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"},
		Services: servedServices(li)})
	d := launchData(payload)
	d.Services = nil
	_, l := h.answerAndPost(d)
	memberships, lineItems, lineItem, _ := serviceURLs(t, l)
	if !strings.HasPrefix(memberships, h.ltiop.URL+servicesPathPrefix) || lineItem != lineItems+"/"+li {
		t.Fatalf("claims: %s %s", memberships, lineItem)
	}
	if ans := h.call("GET", memberships, h.token(scopeNRPS), "", "", nil); ans.Status != 200 {
		t.Fatalf("memberships: %d %s", ans.Status, ans.Body)
	}
	// false survives too: no claim.
	var off ltiplatform.Services
	_ = json.Unmarshal([]byte(`{"namesAndRoles": false, "assignmentAndGrades": false}`), &off)
	payload = h.launchToPayload(platformmode.CreateLaunchRequest{User: "learner-1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"}, Services: &off})
	d = launchData(payload)
	d.Services = nil
	_, l = h.answerAndPost(d)
	if l.Claims[claimNRPS] != nil || l.Claims[claimAGS] != nil {
		t.Fatalf("false made claims: %v", l.Claims)
	}
}

// TestSubmissionReviewLaunch: POST /api/launches with LtiSubmissionReviewRequest opens the
// tool's review of a learner's submission: for_user, the line item under review (here
// ltiop's), the submissionReview URL as target link; what a review needs is refused
// without using the payload up.
func TestSubmissionReviewLaunch(t *testing.T) {
	h := newHarness(t, nil)
	li := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Essay", ScoreMaximum: 10})
	review := h.toolSrv.URL + "/launch?review=essay"
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "teacher-1", MessageType: ltiplatform.MessageSubmissionReview,
		TargetLinkURI: review, ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"}})
	d := launchData(payload)
	d.User.Roles = []string{roleInstructor}
	d.Services = servedServices(li)

	noLearner := d
	noLearner.ForUser = nil
	if status, _, desc := h.apiError("/api/launches/idtoken", noLearner); status != 400 || !strings.HasPrefix(desc, "forUser.id") {
		t.Fatalf("without forUser: %d %s", status, desc)
	}
	noItem := d
	noItem.ForUser = &ltiplatform.ForUser{ID: "learner-7"}
	noItem.Services = servedServices("") // the container only: no line item under review
	if status, _, desc := h.apiError("/api/launches/idtoken", noItem); status != 400 || !strings.HasPrefix(desc, "services.assignmentAndGrades.lineItemUrl") {
		t.Fatalf("without a line item: %d %s", status, desc)
	}

	d.ForUser = &ltiplatform.ForUser{ID: "learner-7", Name: "Ada Lovelace", Email: "ada@example.edu", Roles: []string{"Learner"}}
	_, l := h.answerAndPost(d)
	if !l.OK || l.MessageType != "LtiSubmissionReviewRequest" {
		t.Fatalf("the tool refused the review: %s", l.Err)
	}
	fu, _ := l.Claims["https://purl.imsglobal.org/spec/lti/claim/for_user"].(map[string]any)
	_, _, lineItem, _ := serviceURLs(t, l)
	if fu["user_id"] != "learner-7" || fu["name"] != "Ada Lovelace" || !strings.HasSuffix(lineItem, "/lineitems/"+li) ||
		l.Claims["https://purl.imsglobal.org/spec/lti/claim/target_link_uri"] != review {
		t.Fatalf("claims: for_user %v, lineitem %s, target %v", fu, lineItem, l.Claims["https://purl.imsglobal.org/spec/lti/claim/target_link_uri"])
	}
	// forUser outside a submission review is refused.
	payload = h.launchToPayload(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}})
	rl := launchData(payload)
	rl.ForUser = &ltiplatform.ForUser{ID: "learner-7"}
	if status, _, desc := h.apiError("/api/launches/idtoken", rl); status != 400 || !strings.HasPrefix(desc, "forUser") {
		t.Fatalf("forUser in a resource-link launch: %d %s", status, desc)
	}
}

// TestDataAPIOutboundPolicy: the data API is called under the webhook's outbound policy: a
// tool's spec.platformDataUrl on an internal address is never called (the tool gets 502),
// and the per-tool URL overrides the installation's.
func TestDataAPIOutboundPolicy(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	h := newHarness(t, func(r *v1alpha1.ToolRegistration) {
		r.Spec.PlatformDataURL = v1alpha1.EndpointURL(internal.URL + "/data")
	})
	policy := testoutbound.Public()
	policy.Timeout = dataTimeout
	h.platform.SetData(&platformdata.Client{Sender: &webhook.Sender{Client: webhook.NewClient(policy), Key: func() []byte { return h.dataKey }}})
	seedCourse(h, "course-1", 2)
	memberships, _, _, _ := serviceURLs(t, h.servedLaunch("course-1", "li-1"))
	refused(t, h.call("GET", memberships, h.token(scopeNRPS), "", "", nil), 502, platformdata.CodeUnavailable)
	internal.Untouched(t)
	if n := len(h.data.Calls()); n != 0 {
		t.Fatalf("the installation's data API was called %d times: the tool's own URL overrides it", n)
	}
}

// TestDocsServicesCurlExamples runs docs/platform-services.md's curl examples as written:
// the integrator's answer with ltiop's services, and a tool's token, roster read and score.
func TestDocsServicesCurlExamples(t *testing.T) {
	h := newHarness(t, nil)
	seedCourse(h, "course-7", 3)
	page := "../../../docs/platform-services.md"
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "learner-1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl-1"}})
	out := testdocs.Run(t, page, "## Launching with ltiop's services", "LTIOP_URL="+h.ltiop.URL, "LTIOP_API_KEY=k", "PAYLOAD="+payload)
	var ans platformmode.IDTokenAnswer
	if err := json.Unmarshal([]byte(out), &ans); err != nil || !strings.Contains(decodeMiddle(t, ans.IDToken), h.ltiop.URL+servicesPathPrefix) ||
		!strings.Contains(decodeMiddle(t, ans.IDToken), "/lineitems/31") {
		t.Fatalf("the launch example: %s", out)
	}

	li := h.data.AddLineItem("course-7", h.reg.Name, datasim.LineItem{Label: "Quiz 3", ScoreMaximum: 10})
	memberships, _, lineItem, _ := serviceURLs(t, h.servedLaunch("course-7", li))
	assertion, err := h.tool.ClientAssertion(h.ltiop.URL + paths.PlatformToken)
	if err != nil {
		t.Fatal(err)
	}
	out = testdocs.Run(t, page, "## What tools call", "LTIOP_URL="+h.ltiop.URL, "ASSERTION="+assertion,
		"MEMBERSHIPS_URL="+memberships, "LINEITEM_URL="+lineItem)
	if !strings.Contains(out, `"user_id":"course-7-user-b"`) || !strings.Contains(out, `"resultUrl":"`) {
		t.Fatalf("the tool's example: %s", out)
	}
	if got := h.data.Scores("course-7", li); len(got) != 1 || got[0].UserID != "user-42" {
		t.Fatalf("the integrator received %+v", got)
	}
}
