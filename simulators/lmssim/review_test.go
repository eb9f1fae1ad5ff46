package lmssim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// Line items keep a valid submissionReview and refuse a broken one; a submission review
// launch of such a line item targets its url, names the learner and adds its custom.
func TestSubmissionReviewLineItemAndLaunch(t *testing.T) {
	r := newRig(t)
	tok := r.token(t)
	container := agsClaim(r)["lineitems"].(string)
	ctype := map[string]string{"Content-Type": lmssim.MediaLineItem}
	for _, bad := range []string{
		`"submissionReview":"yes"`,
		`"submissionReview":{}`,
		`"submissionReview":{"reviewableStatus":[]}`,
		`"submissionReview":{"reviewableStatus":["Graded"]}`,
		`"submissionReview":{"reviewableStatus":["Submitted"],"url":"/relative"}`,
		`"submissionReview":{"reviewableStatus":["Submitted"],"label":3}`,
		`"submissionReview":{"reviewableStatus":["Submitted"],"custom":{"a":1}}`,
	} {
		if res := call(t, "POST", container, tok, ctype, `{"label":"x","scoreMaximum":1,`+bad+`}`); res.Status != 400 {
			t.Errorf("%s: HTTP %d, want 400", bad, res.Status)
		}
	}
	const review = `{"reviewableStatus":["InProgress","Submitted","Completed"],"label":"Open","url":"https://tool.example/review?view=1","custom":{"action":"review"}}`
	res := call(t, "POST", container, tok, ctype, `{"label":"Essay","scoreMaximum":10,"submissionReview":`+review+`}`)
	if res.Status != 201 {
		t.Fatalf("create: HTTP %d %s", res.Status, res.Body)
	}
	item := res.json(t)
	sr, _ := item["submissionReview"].(map[string]any)
	if sr["url"] != "https://tool.example/review?view=1" || sr["label"] != "Open" {
		t.Fatalf("submissionReview not kept: %v", item)
	}

	// The launch: start names the line item's review URL as the target.
	r.lms.ToolLoginURL, r.lms.ToolRedirectURI = "https://tool.example/login", "https://tool.example/launch"
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"message": {lmssim.MessageSubmissionReview}, "for_user": {"user-2"}, "lineitem": {item["id"].(string)}}
	startRes, err := noRedirect.Get(r.srv.URL + lmssim.StartPath + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	startRes.Body.Close()
	login, _ := url.Parse(startRes.Header.Get("Location"))
	if got := login.Query().Get("target_link_uri"); got != "https://tool.example/review?view=1" {
		t.Fatalf("login target_link_uri %q", got)
	}
	claims := r.lms.Claims("user-1", "n", "https://tool.example/review?view=1")
	r.lms.MakeSubmissionReview(claims, "user-2", item["id"].(string))
	forUser, _ := claims["https://purl.imsglobal.org/spec/lti/claim/for_user"].(map[string]any)
	ags, _ := claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"].(map[string]any)
	custom, _ := claims["https://purl.imsglobal.org/spec/lti/claim/custom"].(map[string]any)
	if claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] != lmssim.MessageSubmissionReview ||
		forUser["user_id"] != "user-2" || ags["lineitem"] != item["id"] || custom["action"] != "review" || custom["chapter"] != "1" {
		t.Fatalf("review claims: message %v, for_user %v, lineitem %v, custom %v",
			claims["https://purl.imsglobal.org/spec/lti/claim/message_type"], forUser, ags["lineitem"], custom)
	}
	if !strings.Contains(forUser["name"].(string), " ") {
		t.Fatalf("for_user has no name from the roster: %v", forUser)
	}
}
