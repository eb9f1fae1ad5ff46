package platformdata_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
)

// TestCallMapsTheIntegratorsAnswers (P-AGS-09): what the tool is told for each answer of the
// data API, and that the integrator's description is passed on only when it is one short line.
func TestCallMapsTheIntegratorsAnswers(t *testing.T) {
	var status int
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/base/lineitems/get" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	key := []byte("a key of at least twenty-four bytes")
	c := &platformdata.Client{Sender: &webhook.Sender{Client: webhook.NewClient(testoutbound.Public()), Key: func() []byte { return key }}}
	req := &platformdata.Request{Operation: platformdata.OpGetLineItem, ContextID: "c1", LineItemID: "7"}
	long := strings.Repeat("x", 600)
	for _, tc := range []struct {
		status     int
		body       string
		wantStatus int
		wantCode   string
		wantDesc   string
	}{
		{404, `{"details":{"description":"No line item 7 in c1."}}`, 404, "NOT_FOUND", "No line item 7 in c1."},
		{400, `{"details":{"description":"label: too long"}}`, 400, platformdata.CodeRefused, "label: too long"},
		{422, `{"details":{"description":"` + long + `"}}`, 400, platformdata.CodeRefused, "The platform refused the request."},
		{400, `{"details":{"description":"two\nlines"}}`, 400, platformdata.CodeRefused, "The platform refused the request."},
		{403, ``, 403, platformdata.CodeForbidden, "The platform refused the request."},
		{409, `not json`, 409, "CONFLICT", "The request conflicts with the platform's state."},
		{500, `{"details":{"description":"database down"}}`, 502, platformdata.CodeUnavailable, ""},
		{401, ``, 502, platformdata.CodeUnavailable, ""},
		{200, `not json`, 502, platformdata.CodeUnavailable, ""},
	} {
		status, body = tc.status, tc.body
		var out map[string]any
		e := c.Call(context.Background(), srv.URL+"/base/", req, &out)
		if e == nil || e.Status != tc.wantStatus || e.Code != tc.wantCode || (tc.wantDesc != "" && e.Description != tc.wantDesc) {
			t.Errorf("integrator %d %q: got %+v, want %d %s %q", tc.status, tc.body, e, tc.wantStatus, tc.wantCode, tc.wantDesc)
		}
		if e != nil && e.Status == 502 && strings.Contains(e.Description, "database down") {
			t.Errorf("a 5xx description reached the tool: %q", e.Description)
		}
	}
	status, body = 200, `{"id":"7","label":"Quiz"}`
	var out map[string]any
	if e := c.Call(context.Background(), srv.URL+"/base", req, &out); e != nil || out["label"] != "Quiz" {
		t.Fatalf("a 200: %v %v", e, out)
	}
	if e := c.Call(context.Background(), "", req, nil); e == nil || e.Code != platformdata.CodeNotConfigured {
		t.Fatalf("no base URL: %v", e)
	}
}
