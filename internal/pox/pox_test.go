package pox

import "testing"

func TestPOXRoundTrip(t *testing.T) {
	req, err := Request(OpReplace, "m-1", "src<1>", Outcome{Score: 0.85, Text: "well done & more"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := ParseRequest(req)
	if err != nil || info.Op != OpReplace || info.SourcedID != "src<1>" || info.Score != "0.85" || info.Text != "well done & more" || info.MessageID != "m-1" {
		t.Fatalf("%+v %v\n%s", info, err, req)
	}
	if _, err := Request(OpReplace, "m", "s", Outcome{Score: 1.5}); err == nil {
		t.Fatal("a score above 1 was built")
	}
	res, err := ParseResponse(ResponseBody(OpRead, "r-1", "m-1", "success", "ok", "0.5"))
	if err != nil || !res.Success() || !res.HasScore || res.Score != 0.5 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = ParseResponse(ResponseBody(OpReplace, "r-2", "m-2", "failure", "sourcedid unknown", ""))
	if err != nil || res.Success() || res.Description != "sourcedid unknown" {
		t.Fatalf("%+v %v", res, err)
	}
	for _, bad := range []string{"", "<html>oops</html>", "<imsx_POXEnvelopeResponse/>"} {
		if _, err := ParseResponse([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
