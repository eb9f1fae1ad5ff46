package platformmode_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/test/utils/testcpu"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
)

// cannedData answers every data API call at once with a fixed body, in process: the
// benchmarks measure ltiop's own work (token, grant, request signing, JSON both ways), not
// the integrator's.
type cannedData struct {
	status int
	body   []byte
}

func (c cannedData) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: r}, nil
}

// benchService launches the tool with ltiop's services, gets a token, and returns the
// in-process handler and the service URLs, the data API answering with answer.
func benchService(b *testing.B, answer cannedData) (http.Handler, string, string, string) {
	handler, memberships, lineItem, tok, _ := benchHarness(b, answer)
	return handler, memberships, lineItem, tok
}

// benchHarness is benchService with the platform too.
func benchHarness(b *testing.B, answer cannedData) (http.Handler, string, string, string, *platformmode.Platform) {
	h := newHarness(b, func(r *v1alpha1.ToolRegistration) {
		r.Spec.Scopes = []v1alpha1.Scope{v1alpha1.ScopeNRPSMembership, v1alpha1.ScopeAGSLineItem, v1alpha1.ScopeAGSScore}
	})
	seedCourse(h, "course-1", 1)
	li := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz", ScoreMaximum: 10})
	memberships, _, lineItem, _ := serviceURLs(b, h.servedLaunch("course-1", li))
	tok := h.token(scopeNRPS, scopeScore)
	h.platform.SetData(&platformdata.Client{Sender: &webhook.Sender{Client: &http.Client{Transport: answer}, Key: func() []byte { return h.dataKey }}})
	return h.ltiop.Config.Handler, strings.TrimPrefix(memberships, h.ltiop.URL), strings.TrimPrefix(lineItem, h.ltiop.URL), tok, h.platform
}

// rosterPage100 is the data API's answer of a page of 100 members.
func rosterPage100() []byte {
	page := platformdata.MembersPage{Context: &platformdata.Context{ID: "course-1", Title: "Course"}, Next: "100"}
	for i := range 100 {
		page.Members = append(page.Members, advantage.Member{UserID: "user-" + strconv.Itoa(i), Roles: []string{"Learner"},
			Name: "Ada Lovelace " + strconv.Itoa(i), GivenName: "Ada", FamilyName: "Lovelace", Email: "ada" + strconv.Itoa(i) + "@example.edu"})
	}
	body, _ := json.Marshal(page)
	return body
}

// BenchmarkRosterPage100 serves one NRPS page of 100 members (target: ≤ 1 ms of server CPU),
// with the token of the pages before (the replica verified it already).
func BenchmarkRosterPage100(b *testing.B) {
	handler, path, _, tok := benchService(b, cannedData{status: 200, body: rosterPage100()})
	benchmarkRosterPage(b, handler, path, tok, func() {})
}

// benchmarkRosterPage times GET path?limit=100 with tok, calling each before every request.
func benchmarkRosterPage(b *testing.B, handler http.Handler, path, tok string, each func()) {
	b.ReportAllocs()
	b.ResetTimer()
	done := testcpu.PerOp(b)
	for b.Loop() {
		each()
		req := httptest.NewRequest("GET", path+"?limit=100", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	done()
}

// BenchmarkRosterPage100NewToken is BenchmarkRosterPage100 with a token the replica has
// not verified yet (a sync's first page): the RS256 check and the claims' decode included.
func BenchmarkRosterPage100NewToken(b *testing.B) {
	handler, path, _, tok, platform := benchHarness(b, cannedData{status: 200, body: rosterPage100()})
	benchmarkRosterPage(b, handler, path, tok, platform.ForgetVerifiedTokens)
}

// BenchmarkScorePost serves one AGS score post (target: ≤ 0.3 ms of server CPU).
func BenchmarkScorePost(b *testing.B) {
	handler, _, lineItem, tok := benchService(b, cannedData{status: 204})
	score := []byte(`{"userId":"user-7","scoreGiven":8,"scoreMaximum":10,"activityProgress":"Completed","gradingProgress":"FullyGraded","timestamp":"2026-11-29T01:00:00.123Z","comment":"Well done"}`)
	b.ReportAllocs()
	b.ResetTimer()
	done := testcpu.PerOp(b)
	for b.Loop() {
		req := httptest.NewRequest("POST", lineItem+"/scores", bytes.NewReader(score))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", mediaScore)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	done()
}
