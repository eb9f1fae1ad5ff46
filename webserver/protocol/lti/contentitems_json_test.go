package lti

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDeepLinkingT_DL_08_CustomValuesAreStrings(t *testing.T) {
	for _, bad := range []string{`null`, `1`, `1.5`, `true`, `{"a":"b"}`, `["a"]`} {
		body := `{"contentItems":[{"type":"ltiResourceLink"},{"type":"ltiResourceLink","custom":{"ok":"x","quiz":` + bad + `}}]}`
		_, _, err := DecodeDeepLinkingBody([]byte(body))
		var ce *ContentItemError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: error %v, want a *ContentItemError", bad, err)
		}
		if ce.Index != 1 || ce.Field != "custom.quiz" || ce.Rule != "T-DL-08" {
			t.Errorf("%s: %q (index %d field %q rule %q)", bad, ce, ce.Index, ce.Field, ce.Rule)
		}
		var it ContentItem
		if err := json.Unmarshal([]byte(`{"type":"ltiResourceLink","custom":{"quiz":`+bad+`}}`), &it); err == nil {
			t.Errorf("%s: json.Unmarshal accepted it", bad)
		}
	}
	for _, bad := range []string{`"x"`, `[]`, `3`} {
		_, _, err := DecodeDeepLinkingBody([]byte(`{"contentItems":[{"type":"ltiResourceLink","custom":` + bad + `}]}`))
		var ce *ContentItemError
		if !errors.As(err, &ce) || ce.Field != "custom" {
			t.Errorf("custom %s: %v", bad, err)
		}
	}
	items, _, err := DecodeDeepLinkingBody([]byte(`{"contentItems":[{"type":"ltiResourceLink","custom":{"empty":"","sub":"$User.id"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"empty": "", "sub": "$User.id"}; !reflect.DeepEqual(items[0].Custom, want) {
		t.Errorf("custom = %v, want %v", items[0].Custom, want)
	}
	// And on the wire.
	d, _ := dlRespond(t, dlParams(dlRequest(t, nil), items...))
	got := d.claims[ClaimContentItems].([]any)[0].(map[string]any)["custom"]
	if !reflect.DeepEqual(got, map[string]any{"empty": "", "sub": "$User.id"}) {
		t.Errorf("wire custom = %v", got)
	}
}

func TestDecodeDeepLinkingBody(t *testing.T) {
	items, opts, err := DecodeDeepLinkingBody([]byte(`{
		"contentItems": [
			{"type": "ltiResourceLink", "title": "Quiz", "url": "https://tool.example.com/launch?q=1",
			 "lineItem": {"scoreMaximum": 87.5, "label": "Quiz", "resourceId": "q1", "tag": "grade", "gradesReleased": true},
			 "available": {"startDateTime": "2018-02-06T20:05:02Z"},
			 "https://example.com/meta": {"license": "CC BY 4.0", "n": [1, 2]},
			 "ignored": 1},
			{"type": "https://example.com/t", "data": "somedata", "https://example.com/k": null}
		],
		"options": {"message": "Added", "log": "ok"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if opts != (DeepLinkingOptions{Message: "Added", Log: "ok"}) {
		t.Errorf("options %+v", opts)
	}
	want := ContentItem{Type: "ltiResourceLink", Title: "Quiz", URL: "https://tool.example.com/launch?q=1",
		LineItem:   &ContentLineItem{ScoreMaximum: 87.5, Label: "Quiz", ResourceID: "q1", Tag: "grade", GradesReleased: ptr(true)},
		Available:  &TimeWindow{StartDateTime: "2018-02-06T20:05:02Z"},
		Extensions: map[string]json.RawMessage{"https://example.com/meta": json.RawMessage(`{"license": "CC BY 4.0", "n": [1, 2]}`)}}
	if !reflect.DeepEqual(items[0], want) {
		t.Errorf("item 0:\n got %+v\nwant %+v", items[0], want)
	}
	if ext := items[1].Extensions; len(ext) != 2 || string(ext["data"]) != `"somedata"` || string(ext["https://example.com/k"]) != "null" {
		t.Errorf("extension type members: %v", ext)
	}

	for body, want := range map[string]string{
		`[]`:                                   "the body must be a JSON object",
		`{`:                                    "the body must be a JSON object",
		`{}`:                                   "contentItems: required (an array, possibly empty)",
		`{"contentItems":null}`:                "contentItems: required (an array, possibly empty)",
		`{"contentItems":{}}`:                  "contentItems: must be an array",
		`{"contentItems":[{"type":"link"},2]}`: "contentItems[1]: a content item must be a JSON object",
		`{"contentItems":[{"type":"link"},null]}`:                              "contentItems[1]: a content item must be a JSON object",
		`{"contentItems":[{"type":3}]}`:                                        "contentItems[0].type: must be a string, not number",
		`{"contentItems":[{"type":"image","width":1.5}]}`:                      "contentItems[0].width: must be an integer, not number 1.5",
		`{"contentItems":[{"type":"link","icon":{"width":"1"}}]}`:              "contentItems[0].icon.width: must be an integer, not string",
		`{"contentItems":[{"type":"link","lineItem":{"scoreMaximum":"9"}}]}`:   "contentItems[0].lineItem.scoreMaximum: must be a number, not string",
		`{"contentItems":[{"type":"link","lineItem":{"gradesReleased":"y"}}]}`: "contentItems[0].lineItem.gradesReleased: must be a boolean, not string",
		`{"contentItems":[{"type":"link","window":[]}]}`:                       "contentItems[0].window: must be an object, not array",
		`{"contentItems":[],"options":"x"}`:                                    "options: must be an object",
		`{"contentItems":[],"options":{"errMessage":1}}`:                       "options.errMessage: must be a string, not number",
	} {
		_, _, err := DecodeDeepLinkingBody([]byte(body))
		var ce *ContentItemError
		if !errors.As(err, &ce) || err.Error() != want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	// An empty selection is a valid body (T-DL-07).
	if items, _, err := DecodeDeepLinkingBody([]byte(`{"contentItems":[]}`)); err != nil || items == nil || len(items) != 0 {
		t.Errorf("empty selection: %v %v", items, err)
	}
}

// The wire form reproduces the spec's response example (DL Appendix B) member for
// member: decode its content items as an API body, emit them, compare.
func TestContentItemsWireFormMatchesSpecExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixturesDir, "spec_dl_response.json"))
	if err != nil {
		t.Fatal(err)
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	items, _, err := DecodeDeepLinkingBody([]byte(`{"contentItems":` + string(resp[ClaimContentItems]) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	req, err := os.ReadFile(filepath.Join(fixturesDir, "spec_dl_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseClaims(req)
	if err != nil {
		t.Fatal(err)
	}
	c.DeepLinking.AcceptTypes = append(c.DeepLinking.AcceptTypes, "https://www.example.com/custom_type")
	d, _ := dlRespond(t, dlParams(c, items...))

	var want, got any
	if err := json.Unmarshal(resp[ClaimContentItems], &want); err != nil {
		t.Fatal(err)
	}
	got = d.claims[ClaimContentItems]
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("content_items differ from the spec example:\n got %s\nwant %s", g, w)
	}
	if !bytes.Contains(d.payload, []byte(`"html":"<h1>A Custom Title</h1>"`)) {
		t.Errorf("HTML escaped in the payload: %s", d.payload)
	}
	for _, k := range []string{"aud", ClaimDeploymentID, ClaimDLData, ClaimMessageType, ClaimVersion} {
		var w any
		_ = json.Unmarshal(resp[k], &w)
		if !reflect.DeepEqual(d.claims[k], w) {
			t.Errorf("%s = %v, spec example has %v", k, d.claims[k], w)
		}
	}
}

// FuzzDecodeDeepLinkingBody: any body decodes or fails with a *ContentItemError,
// and items that pass validation always encode.
func FuzzDecodeDeepLinkingBody(f *testing.F) {
	f.Add([]byte(`{"contentItems":[{"type":"link","url":"https://a.example","icon":{"url":"https://a.example/i.png","width":1}}],"options":{"message":"m"}}`))
	f.Add([]byte(`{"contentItems":[{"type":"ltiResourceLink","custom":{"a":"","b":null},"lineItem":{"scoreMaximum":1}}]}`))
	f.Add([]byte(`{"contentItems":[{"type":"https://x.example/t","data":{"k":[1,"<>&"]},"https://x.example/m":null}]}`))
	f.Add([]byte(`{"contentItems":[{"type":"html","html":"<b>\u2028</b>","available":{"startDateTime":"2018-02-06T20:05:02Z"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, opts, err := DecodeDeepLinkingBody(body)
		if err != nil {
			var ce *ContentItemError
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		if ValidateContentItems(items, nil) != nil || ValidateOptions(opts) != nil {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(items); err != nil {
			t.Fatalf("valid items do not encode: %v", err)
		}
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("invalid JSON: %s", buf.Bytes())
		}
	})
}
