package platformdata_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
)

// The data API simulator keeps its own copy of the wire types (a simulator imports no
// product code). Every member set, read into the simulator's type, must come out the same
// JSON, and again through ltiop's: a member one side lacks or names differently fails here.
func TestSimulatorWireTypesMatchTheClients(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	released := true
	ext := map[string]json.RawMessage{"https://canvas.instructure.com/lti/submission_type": json.RawMessage(`{"type":"external_tool"}`)}
	lineItem := advantage.LineItem{ID: "li-1", Label: "Quiz", ScoreMaximum: 10, ResourceLinkID: "rl-1", ResourceID: "r-1", Tag: "quiz",
		StartDateTime: "2026-11-01T00:00:00Z", EndDateTime: "2026-11-30T00:00:00Z", GradesReleased: &released,
		Extensions: map[string]json.RawMessage{"submissionReview": json.RawMessage(`{"label":"Review"}`)}}
	score := advantage.Score{UserID: "u-1", ScoreGiven: f(8.5), ScoreMaximum: f(10), Comment: "Good", ActivityProgress: "Completed",
		GradingProgress: "FullyGraded", Timestamp: "2026-11-29T01:00:00.123Z", ScoringUserID: "t-1",
		Submission: &advantage.Submission{StartedAt: "2026-11-29T00:00:00Z", SubmittedAt: "2026-11-29T00:30:00Z"}, Extensions: ext}
	member := advantage.Member{UserID: "u-1", Roles: []string{"Learner"}, Status: "Active", Email: "u@example.edu", Name: "U One",
		GivenName: "U", FamilyName: "One", MiddleName: "M", LisPersonSourcedID: "sis-1", Picture: "https://example.edu/u.png",
		LTI11LegacyUserID: "legacy-1"}
	for _, tc := range []struct {
		name        string
		client, sim any
	}{
		{"request", &platformdata.Request{Operation: platformdata.OpScore, Tool: platformdata.Tool{ID: "t", ClientID: "c", DeploymentID: "d"},
			ContextID: "course-1", LineItemID: "li-1", Role: "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner", ResourceLinkID: "rl-1",
			ResourceID: "r-1", Tag: "quiz", UserID: "u-1", Limit: 10, Cursor: "20", LineItem: &lineItem, Score: &score}, &datasim.Request{}},
		{"members page", &platformdata.MembersPage{Context: &platformdata.Context{ID: "course-1", Label: "C1", Title: "Course"},
			Members: []advantage.Member{member}, Next: "1"}, &datasim.MembersPage{}},
		{"line items page", &platformdata.LineItemsPage{LineItems: []advantage.LineItem{lineItem}, Next: "1"}, &datasim.LineItemsPage{}},
		{"results page", &platformdata.ResultsPage{Results: []platformdata.Result{{UserID: "u-1", ResultScore: f(8.5), ResultMaximum: f(10),
			Comment: "Good", ScoringUserID: "t-1", Timestamp: "2026-11-29T01:00:00.123Z"}}, Next: "1"}, &datasim.ResultsPage{}},
	} {
		sent, err := json.Marshal(tc.client)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := json.Unmarshal(sent, tc.sim); err != nil {
			t.Fatalf("%s: the simulator's type: %v", tc.name, err)
		}
		back, err := json.Marshal(tc.sim)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		fresh := reflect.New(reflect.TypeOf(tc.client).Elem()).Interface()
		if err := json.Unmarshal(back, fresh); err != nil {
			t.Fatalf("%s: ltiop's type: %v", tc.name, err)
		}
		again, _ := json.Marshal(fresh)
		// Compared as written by each (Go reads member names case-insensitively, so a
		// round trip alone would miss a name that differs in case).
		for _, out := range [][]byte{back, again} {
			var want, got any
			_ = json.Unmarshal(sent, &want)
			_ = json.Unmarshal(out, &got)
			if !reflect.DeepEqual(want, got) {
				t.Errorf("%s: drifted:\nltiop's:   %s\ncompared:  %s", tc.name, sent, out)
			}
		}
	}
	for _, op := range [][2]string{{platformdata.OpMemberships, datasim.OpMemberships}, {platformdata.OpLineItems, datasim.OpLineItems},
		{platformdata.OpCreateLineItem, datasim.OpCreateLineItem}, {platformdata.OpGetLineItem, datasim.OpGetLineItem},
		{platformdata.OpUpdateLineItem, datasim.OpUpdateLineItem}, {platformdata.OpDeleteLineItem, datasim.OpDeleteLineItem},
		{platformdata.OpScore, datasim.OpScore}, {platformdata.OpResults, datasim.OpResults}} {
		if op[0] != op[1] || datasim.Path(op[1]) != platformdata.Path(op[0]) {
			t.Errorf("operation %s (the simulator's %s): ltiop posts to %q, the simulator serves %q", op[0], op[1], platformdata.Path(op[0]), datasim.Path(op[1]))
		}
	}
}
