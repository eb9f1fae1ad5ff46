package advantage

import (
	"encoding/json"
	"strings"
	"testing"
)

// T-SR-08: a line item's submissionReview is checked member by member, the wrong one named.
func TestValidateLineItemSubmissionReview(t *testing.T) {
	for _, tc := range []struct {
		name, review string
		field        string // "" = valid
	}{
		{"AGS example", `{"reviewableStatus":["InProgress","Submitted","Completed"],"label":"Open My Tool Viewer",` +
			`"url":"https://platform.example.com/act/849023/sub","custom":{"action":"review","a_id":"23942"}}`, ""},
		{"status only", `{"reviewableStatus":["Submitted"]}`, ""},
		{"null (none)", `null`, ""},
		{"extension member", `{"reviewableStatus":["Completed"],"https://lms.example/x":{"a":1}}`, ""},
		{"empty custom value", `{"reviewableStatus":["Completed"],"custom":{"a":""}}`, ""},
		{"not an object", `"yes"`, "submissionReview"},
		{"an array", `[{"reviewableStatus":["Submitted"]}]`, "submissionReview"},
		{"no reviewableStatus", `{"label":"x"}`, "submissionReview.reviewableStatus"},
		{"empty reviewableStatus", `{"reviewableStatus":[]}`, "submissionReview.reviewableStatus"},
		{"reviewableStatus a string", `{"reviewableStatus":"Submitted"}`, "submissionReview.reviewableStatus"},
		{"reviewableStatus null", `{"reviewableStatus":null}`, "submissionReview.reviewableStatus"},
		{"unknown status", `{"reviewableStatus":["Submitted","Graded"]}`, "submissionReview.reviewableStatus[1]"},
		{"status twice", `{"reviewableStatus":["Submitted","Submitted"]}`, "submissionReview.reviewableStatus[1]"},
		{"label a number", `{"reviewableStatus":["Submitted"],"label":3}`, "submissionReview.label"},
		{"label too long", `{"reviewableStatus":["Submitted"],"label":"` + strings.Repeat("l", maxReviewLabel+1) + `"}`, "submissionReview.label"},
		{"url relative", `{"reviewableStatus":["Submitted"],"url":"/review"}`, "submissionReview.url"},
		{"url javascript", `{"reviewableStatus":["Submitted"],"url":"javascript:alert(1)"}`, "submissionReview.url"},
		{"url null", `{"reviewableStatus":["Submitted"],"url":null}`, "submissionReview.url"},
		{"custom an array", `{"reviewableStatus":["Submitted"],"custom":["a"]}`, "submissionReview.custom"},
		{"custom number value", `{"reviewableStatus":["Submitted"],"custom":{"a":1}}`, "submissionReview.custom"},
		{"custom null value", `{"reviewableStatus":["Submitted"],"custom":{"a":null}}`, "submissionReview.custom.a"},
		{"misspelt member", `{"reviewableStatuses":["Submitted"]}`, "submissionReview.reviewableStatuses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var li LineItem
			body := `{"label":"Essay","scoreMaximum":10,"submissionReview":` + tc.review + `}`
			if err := json.Unmarshal([]byte(body), &li); err != nil {
				t.Fatal(err)
			}
			fe := ValidateLineItem(&li)
			switch {
			case tc.field == "" && fe != nil:
				t.Fatalf("refused: %v", fe)
			case tc.field != "" && (fe == nil || fe.Field != tc.field):
				t.Fatalf("got %v, want an error on %s", fe, tc.field)
			}
		})
	}
}

// The submissionReview sent is the one returned, member for member (nothing dropped).
func TestSubmissionReviewRoundTrip(t *testing.T) {
	const review = `{"reviewableStatus":["Submitted"],"label":"Open","url":"https://tool.example/r?x=1","custom":{"a":"b"}}`
	var li LineItem
	if err := json.Unmarshal([]byte(`{"label":"Essay","scoreMaximum":10,"submissionReview":`+review+`}`), &li); err != nil {
		t.Fatal(err)
	}
	sr, fe := li.SubmissionReview()
	if fe != nil || sr == nil || sr.URL != "https://tool.example/r?x=1" || sr.Label != "Open" || sr.Custom["a"] != "b" ||
		len(sr.ReviewableStatus) != 1 {
		t.Fatalf("parsed %+v, %v", sr, fe)
	}
	out, err := json.Marshal(li)
	if err != nil || !strings.Contains(string(out), `"submissionReview":`+review) {
		t.Fatalf("marshalled %s, %v", out, err)
	}
	if sr, fe := (&LineItem{}).SubmissionReview(); sr != nil || fe != nil {
		t.Fatalf("a line item without one: %+v %v", sr, fe)
	}
}
