package lti

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/webserver/apierr"
)

// The tool's key at the platform: otherKey (the platform signs with testKey).
const (
	dlToolKID      = "tool-2025-06-01"
	dlToolClientID = "962fa4d8-bcbf-49a0-94b2-2de05ad274af"
)

// dlRequest is a validated LtiDeepLinkingRequest (helpers_test.go dlClaims),
// changed by edit on the deep_linking_settings before decoding.
func dlRequest(t testing.TB, edit func(settings map[string]any)) *Claims {
	t.Helper()
	m := dlClaims()
	if edit != nil {
		edit(m[ClaimDeepLinkingSettings].(map[string]any))
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseClaims(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dlParams(c *Claims, items ...ContentItem) DeepLinkingResponseParams {
	return DeepLinkingResponseParams{Request: c, ClientID: dlToolClientID, KID: dlToolKID, Key: otherKey,
		Items: items, Now: testNow}
}

// dlToken is a verified response: its header, payload bytes and claims.
type dlToken struct {
	header  map[string]any
	payload []byte
	claims  map[string]any
}

// dlRespond builds a response and verifies its signature with the tool's public key.
func dlRespond(t testing.TB, p DeepLinkingResponseParams) (dlToken, string) {
	t.Helper()
	tok, returnURL, err := DeepLinkingResponse(p)
	if err != nil {
		t.Fatalf("DeepLinkingResponse: %v", err)
	}
	payload, err := jws.Verify([]byte(tok), jws.WithKey(jwa.RS256(), &otherKey.PublicKey))
	if err != nil {
		t.Fatalf("the response does not verify with the tool key: %v", err)
	}
	hdrJSON, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var d dlToken
	d.payload = payload
	if err := json.Unmarshal(hdrJSON, &d.header); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(payload, &d.claims); err != nil {
		t.Fatal(err)
	}
	return d, returnURL
}

func wantItemError(t *testing.T, e *ContentItemError, index int, field string) {
	t.Helper()
	if e == nil {
		t.Fatalf("no error, want contentItems[%d] %q", index, field)
	}
	if e.Index != index || e.Field != field {
		t.Fatalf("error %q (index %d, field %q), want index %d, field %q", e, e.Index, e.Field, index, field)
	}
}

func dlLink(url string) ContentItem { return ContentItem{Type: ContentItemLink, URL: url} }

func dlResourceLink() ContentItem {
	return ContentItem{Type: ContentItemLTIResourceLink, Title: "Quiz 12", URL: "https://tool.example.com/lti/launch?quiz=12",
		Custom: map[string]string{"quiz_id": "az-123", "due": "$ResourceLink.submission.endDateTime", "empty": ""}}
}

func ptr[T any](v T) *T { return &v }

func TestDeepLinkingT_DL_02_Claims(t *testing.T) {
	c := dlRequest(t, nil)
	d, _ := dlRespond(t, dlParams(c, dlLink("https://tool.example.com/a")))
	if d.header["alg"] != "RS256" || d.header["kid"] != dlToolKID || d.header["typ"] != "JWT" {
		t.Errorf("header %v: want alg RS256, kid %s, typ JWT", d.header, dlToolKID)
	}
	want := map[string]any{
		"iss":             dlToolClientID,
		"aud":             testIssuer, // a string, the request's iss
		ClaimDeploymentID: testDeployment,
		ClaimMessageType:  "LtiDeepLinkingResponse",
		ClaimVersion:      "1.3.0",
		ClaimDLData:       "csrftoken:c7fbba78-7b75-46e3-9201-11e6d5f36f53",
		"iat":             float64(testNow.Unix()),
		"exp":             float64(testNow.Add(5 * time.Minute).Unix()),
	}
	for k, v := range want {
		if !reflect.DeepEqual(d.claims[k], v) {
			t.Errorf("%s = %#v, want %#v", k, d.claims[k], v)
		}
	}
	for _, absent := range []string{"azp", "sub", ClaimDLMsg, ClaimDLLog, ClaimDLErrorMsg, ClaimDLErrorLog} {
		if _, ok := d.claims[absent]; ok {
			t.Errorf("%s present: %v", absent, d.claims[absent])
		}
	}
	items, ok := d.claims[ClaimContentItems].([]any)
	if !ok || len(items) != 1 || !reflect.DeepEqual(items[0], map[string]any{"type": "link", "url": "https://tool.example.com/a"}) {
		t.Errorf("content_items = %#v", d.claims[ClaimContentItems])
	}
	if len(d.claims) != 10 {
		t.Errorf("unexpected claims: %v", d.claims)
	}
}

func TestDeepLinkingT_DL_02_Options(t *testing.T) {
	c := dlRequest(t, nil)
	p := dlParams(c)
	p.Options = DeepLinkingOptions{Message: "1 item added <b>", Log: "ok & done"}
	d, _ := dlRespond(t, p)
	if d.claims[ClaimDLMsg] != "1 item added <b>" || d.claims[ClaimDLLog] != "ok & done" {
		t.Errorf("msg/log = %v / %v", d.claims[ClaimDLMsg], d.claims[ClaimDLLog])
	}
	p.Options = DeepLinkingOptions{ErrMessage: "nothing", ErrLog: "quota"}
	d, _ = dlRespond(t, p)
	if d.claims[ClaimDLErrorMsg] != "nothing" || d.claims[ClaimDLErrorLog] != "quota" {
		t.Errorf("errormsg/errorlog = %v / %v", d.claims[ClaimDLErrorMsg], d.claims[ClaimDLErrorLog])
	}
	if _, ok := d.claims[ClaimDLMsg]; ok {
		t.Error("empty msg emitted")
	}
}

func TestDeepLinkingT_DL_03_DataEcho(t *testing.T) {
	const dataKey = `"` + ClaimDLData + `":`
	t.Run("as decoded", func(t *testing.T) {
		hostile := `<script>alert("x")</script> & co`
		c := dlRequest(t, func(s map[string]any) { s["data"] = hostile })
		d, _ := dlRespond(t, dlParams(c))
		if d.claims[ClaimDLData] != hostile {
			t.Errorf("data = %q, want %q", d.claims[ClaimDLData], hostile)
		}
	})
	t.Run("raw text of the request, byte for byte", func(t *testing.T) {
		// The platform's own escaping (PHP \/, \u003c, a literal <>&) comes back unchanged.
		raw := `"a\u003cb>&amp;\"\/x\u00e9<>&"`
		m := dlClaims()
		m[ClaimDeepLinkingSettings].(map[string]any)["data"] = "PLACEHOLDER"
		b, _ := json.Marshal(m)
		b = bytes.Replace(b, []byte(`"PLACEHOLDER"`), []byte(raw), 1)
		c, err := ParseClaims(b)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := dlRespond(t, dlParams(c))
		if !bytes.Contains(d.payload, []byte(dataKey+raw)) {
			t.Errorf("payload %s does not carry %s verbatim", d.payload, raw)
		}
		if d.claims[ClaimDLData] != c.DeepLinking.Data {
			t.Errorf("data = %q, want %q", d.claims[ClaimDLData], c.DeepLinking.Data)
		}
	})
	t.Run("without Raw, no HTML escaping", func(t *testing.T) {
		c := dlRequest(t, nil)
		c.Raw = nil
		c.DeepLinking.Data = `<>&"`
		d, _ := dlRespond(t, dlParams(c))
		if !bytes.Contains(d.payload, []byte(dataKey+`"<>&\""`)) {
			t.Errorf("payload %s: want the data as <>&\\\" unescaped", d.payload)
		}
	})
	t.Run("stale Raw is not used", func(t *testing.T) {
		c := dlRequest(t, nil)
		c.DeepLinking.Data = "changed"
		d, _ := dlRespond(t, dlParams(c))
		if d.claims[ClaimDLData] != "changed" {
			t.Errorf("data = %v", d.claims[ClaimDLData])
		}
	})
	t.Run("empty string is echoed", func(t *testing.T) {
		c := dlRequest(t, func(s map[string]any) { s["data"] = "" })
		d, _ := dlRespond(t, dlParams(c))
		if v, ok := d.claims[ClaimDLData]; !ok || v != "" {
			t.Errorf("data = %#v, present %v; want \"\"", v, ok)
		}
	})
	t.Run("absent when absent", func(t *testing.T) {
		for name, edit := range map[string]func(map[string]any){
			"missing": func(s map[string]any) { delete(s, "data") },
			"null":    func(s map[string]any) { s["data"] = nil },
		} {
			c := dlRequest(t, edit)
			d, _ := dlRespond(t, dlParams(c))
			if _, ok := d.claims[ClaimDLData]; ok || bytes.Contains(d.payload, []byte(ClaimDLData)) {
				t.Errorf("%s: data claim present: %s", name, d.payload)
			}
		}
	})
}

func TestDeepLinkingT_DL_04_AcceptTypes(t *testing.T) {
	const ext = "https://www.example.com/custom_type"
	cases := []struct {
		name   string
		accept []any
		item   ContentItem
		ok     bool
	}{
		{"exact", []any{"ltiResourceLink"}, dlResourceLink(), true},
		{"LtiResourceLink", []any{"LtiResourceLink"}, dlResourceLink(), true},
		{"ltiresourcelink", []any{"link", "ltiresourcelink"}, dlResourceLink(), true},
		{"LTIRESOURCELINK with spaces", []any{" LTIRESOURCELINK "}, dlResourceLink(), true},
		{"not accepted", []any{"link", "file"}, dlResourceLink(), false},
		{"link refused by a resource-link-only platform", []any{"ltiResourceLink"}, dlLink("https://tool.example.com/a"), false},
		{"empty accept_types", []any{}, dlLink("https://tool.example.com/a"), false},
		{"extension type accepted", []any{ext}, ContentItem{Type: ext}, true},
		{"extension type matched exactly", []any{strings.ToUpper(ext)}, ContentItem{Type: ext}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dlRequest(t, func(s map[string]any) { s["accept_types"] = tc.accept })
			e := ValidateContentItems([]ContentItem{tc.item}, c.DeepLinking)
			_, _, err := DeepLinkingResponse(dlParams(c, tc.item))
			if tc.ok {
				if e != nil || err != nil {
					t.Fatalf("refused: %v / %v", e, err)
				}
				return
			}
			wantItemError(t, e, 0, "type")
			if e.Rule != "T-DL-04" {
				t.Errorf("rule %q", e.Rule)
			}
			var ce *ContentItemError
			if !errors.As(err, &ce) || ce.Rule != "T-DL-04" {
				t.Errorf("DeepLinkingResponse error %v, want the T-DL-04 *ContentItemError", err)
			}
		})
	}
	t.Run("comma-separated string", func(t *testing.T) {
		c := dlRequest(t, func(s map[string]any) { s["accept_types"] = "link, LtiResourceLink" })
		if e := ValidateContentItems([]ContentItem{dlResourceLink()}, c.DeepLinking); e != nil {
			t.Fatal(e)
		}
	})
}

func TestDeepLinkingT_DL_05_AcceptMultiple(t *testing.T) {
	two := []ContentItem{dlLink("https://tool.example.com/a"), dlLink("https://tool.example.com/b")}
	for _, tc := range []struct {
		name     string
		multiple any // nil: absent
		items    []ContentItem
		ok       bool
	}{
		{"false, two items", false, two, false},
		{"\"false\", two items", "false", two, false},
		{"absent, two items", nil, two, false},
		{"true, two items", true, two, true},
		{"false, one item", false, two[:1], true},
		{"false, no item", false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dlRequest(t, func(s map[string]any) {
				delete(s, "accept_multiple")
				if tc.multiple != nil {
					s["accept_multiple"] = tc.multiple
				}
			})
			e := ValidateContentItems(tc.items, c.DeepLinking)
			if tc.ok {
				if e != nil {
					t.Fatal(e)
				}
				return
			}
			wantItemError(t, e, 1, "")
			if e.Rule != "T-DL-05" || !strings.HasPrefix(e.Error(), "contentItems[1]: ") {
				t.Errorf("error %q rule %q", e, e.Rule)
			}
			if _, _, err := DeepLinkingResponse(dlParams(c, tc.items...)); err == nil {
				t.Error("DeepLinkingResponse signed two items for a single-item platform")
			}
		})
	}
}

func TestDeepLinkingT_DL_06_AcceptLineItem(t *testing.T) {
	graded := dlResourceLink()
	graded.LineItem = &ContentLineItem{ScoreMaximum: 100, Label: "Quiz 12"}
	for _, tc := range []struct {
		name   string
		accept any
		item   ContentItem
		ok     bool
	}{
		{"false with lineItem", false, graded, false},
		{"\"false\" with lineItem", "false", graded, false},
		{"absent with lineItem", nil, graded, true},
		{"true with lineItem", true, graded, true},
		{"false without lineItem", false, dlResourceLink(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dlRequest(t, func(s map[string]any) {
				if tc.accept != nil {
					s["accept_lineitem"] = tc.accept
				}
			})
			e := ValidateContentItems([]ContentItem{tc.item}, c.DeepLinking)
			if tc.ok {
				if e != nil {
					t.Fatal(e)
				}
				return
			}
			wantItemError(t, e, 0, "lineItem")
			if e.Rule != "T-DL-06" {
				t.Errorf("rule %q", e.Rule)
			}
		})
	}
}

func TestDeepLinkingT_DL_07_EmptySelection(t *testing.T) {
	c := dlRequest(t, func(s map[string]any) { s["accept_multiple"] = false })
	for name, items := range map[string][]ContentItem{"nil": nil, "empty": {}} {
		p := dlParams(c, items...)
		p.Items = items
		d, returnURL := dlRespond(t, p)
		if !bytes.Contains(d.payload, []byte(`"`+ClaimContentItems+`":[]`)) {
			t.Errorf("%s: payload %s: want content_items []", name, d.payload)
		}
		if d.claims[ClaimMessageType] != MessageDeepLinkingResponse || returnURL != testReturnURL {
			t.Errorf("%s: not a complete response: %v %s", name, d.claims, returnURL)
		}
	}
}

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

func TestDeepLinkingT_DL_09_ShortExpiryFreshNonce(t *testing.T) {
	c := dlRequest(t, nil)
	a, _ := dlRespond(t, dlParams(c))
	b, _ := dlRespond(t, dlParams(c))
	for _, d := range []dlToken{a, b} {
		iat, exp := d.claims["iat"].(float64), d.claims["exp"].(float64)
		if exp-iat > 600 || exp <= iat || iat != float64(testNow.Unix()) {
			t.Errorf("iat %v exp %v: want iat = now and exp - iat ≤ 600", iat, exp)
		}
		n, _ := d.claims["nonce"].(string)
		if len(n) < 26 || strings.Trim(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Errorf("nonce %q: want ≥ 128 random bits (26 base32 characters)", n)
		}
	}
	if a.claims["nonce"] == b.claims["nonce"] {
		t.Errorf("the same nonce twice: %v", a.claims["nonce"])
	}
	// Zero Now is the wall clock.
	p := dlParams(c)
	p.Now = time.Time{}
	d, _ := dlRespond(t, p)
	if iat := int64(d.claims["iat"].(float64)); time.Since(time.Unix(iat, 0)).Abs() > time.Minute {
		t.Errorf("iat %d is not now", iat)
	}
}

func TestDeepLinkingT_DL_11_ReturnURLVerbatim(t *testing.T) {
	canvas := "https://canvas.example.edu/courses/6/deep_linking_response?data=eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJub25jZSI6IjJjNzEifQ.oLJ-mERLRbnPrXKlIFckI6PwdVP3AK7yuZ7YAXwfA5c"
	moodle := "http://moodle.example.edu/mod/lti/contentitem_return.php?course=42&id=7&sesskey=abc"
	for _, ret := range []string{canvas, moodle, "https://lms.example/deep_links?course=42&sesskey=abc"} {
		c := dlRequest(t, func(s map[string]any) { s["deep_link_return_url"] = ret })
		_, got, err := DeepLinkingResponse(dlParams(c))
		if err != nil {
			t.Fatal(err)
		}
		if got != ret {
			t.Errorf("returnURL %q, want %q", got, ret)
		}
	}
	// Only an absolute http(s) URL can be a form's action (the form is toolmode's).
	for _, bad := range []string{"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
		"//lms.example/deep_links", "/deep_links", "", "https://", "https://lms.example/a b", "ftp://lms.example/x"} {
		c := dlRequest(t, func(s map[string]any) { s["deep_link_return_url"] = bad })
		_, _, err := DeepLinkingResponse(dlParams(c))
		var le *apierr.Error
		if !errors.As(err, &le) || le.Code != CodeInvalidReturnURL || le.Status != 400 {
			t.Errorf("return URL %q: %v", bad, err)
		}
	}
}

func TestValidateContentItemsRules(t *testing.T) {
	ok := dlLink("https://tool.example.com/a")
	cases := []struct {
		name  string
		item  ContentItem
		field string // "" with ok: valid
		ok    bool
	}{
		{"link", ok, "", true},
		{"no type", ContentItem{URL: "https://a.example"}, "type", false},
		{"unknown type", ContentItem{Type: "video", URL: "https://a.example"}, "type", false},
		{"case variant type", ContentItem{Type: "LtiResourceLink"}, "type", false},
		{"link without url", ContentItem{Type: "link"}, "url", false},
		{"file without url", ContentItem{Type: "file"}, "url", false},
		{"image without url", ContentItem{Type: "image"}, "url", false},
		{"html without html", ContentItem{Type: "html", Title: "x"}, "html", false},
		{"html", ContentItem{Type: "html", HTML: "<h1>x</h1>"}, "", true},
		{"ltiResourceLink without url", ContentItem{Type: "ltiResourceLink"}, "", true},
		{"extension type", ContentItem{Type: "https://www.example.com/custom_type"}, "", true},
		{"relative url", dlLink("/a"), "url", false},
		{"javascript url", dlLink("javascript:alert(1)"), "url", false},
		{"ftp url", dlLink("ftp://a.example/x"), "url", false},
		{"url with space", dlLink("https://a.example/a b"), "url", false},
		{"url without host", dlLink("https:///x"), "url", false},
		{"http url", dlLink("http://a.example/x"), "", true},
		{"resource link bad url", ContentItem{Type: "ltiResourceLink", URL: "tool/launch"}, "url", false},
		{"icon without url", ContentItem{Type: "link", URL: "https://a.example", Icon: &Image{Width: 1}}, "icon.url", false},
		{"icon bad url", ContentItem{Type: "link", URL: "https://a.example", Icon: &Image{URL: "x.png"}}, "icon.url", false},
		{"icon negative width", ContentItem{Type: "link", URL: "https://a.example", Icon: &Image{URL: "https://a.example/i.png", Width: -1}}, "icon.width", false},
		{"thumbnail negative height", ContentItem{Type: "link", URL: "https://a.example", Thumbnail: &Image{URL: "https://a.example/t.png", Height: -5}}, "thumbnail.height", false},
		{"thumbnail bad url", ContentItem{Type: "link", URL: "https://a.example", Thumbnail: &Image{URL: "data:image/png;base64,AAAA"}}, "thumbnail.url", false},
		{"embed without html", ContentItem{Type: "link", URL: "https://a.example", Embed: &Embed{}}, "embed.html", false},
		{"window negative width", ContentItem{Type: "link", URL: "https://a.example", Window: &Window{Width: -1}}, "window.width", false},
		{"window", ContentItem{Type: "link", URL: "https://a.example", Window: &Window{TargetName: "x", WindowFeatures: "menubar=no"}}, "", true},
		{"link iframe without src", ContentItem{Type: "link", URL: "https://a.example", Iframe: &Iframe{Width: 560}}, "iframe.src", false},
		{"iframe bad src", ContentItem{Type: "link", URL: "https://a.example", Iframe: &Iframe{Src: "javascript:x"}}, "iframe.src", false},
		{"iframe negative height", ContentItem{Type: "link", URL: "https://a.example", Iframe: &Iframe{Src: "https://a.example/e", Height: -1}}, "iframe.height", false},
		{"resource link iframe dimensions only", ContentItem{Type: "ltiResourceLink", Iframe: &Iframe{Height: 890}}, "", true},
		{"image negative width", ContentItem{Type: "image", URL: "https://a.example/i.png", Width: -1}, "width", false},
		{"image negative height", ContentItem{Type: "image", URL: "https://a.example/i.png", Height: -1}, "height", false},
		{"image dimensions", ContentItem{Type: "image", URL: "https://a.example/i.png", Width: 0, Height: 10}, "", true},
		{"lineItem without scoreMaximum", ContentItem{Type: "ltiResourceLink", LineItem: &ContentLineItem{Label: "x"}}, "lineItem.scoreMaximum", false},
		{"lineItem negative scoreMaximum", ContentItem{Type: "ltiResourceLink", LineItem: &ContentLineItem{ScoreMaximum: -1}}, "lineItem.scoreMaximum", false},
		{"lineItem decimal scoreMaximum", ContentItem{Type: "ltiResourceLink", LineItem: &ContentLineItem{ScoreMaximum: 0.5, GradesReleased: ptr(false)}}, "", true},
		{"available start not RFC 3339", ContentItem{Type: "ltiResourceLink", Available: &TimeWindow{StartDateTime: "2018-02-06"}}, "available.startDateTime", false},
		{"available end not a date", ContentItem{Type: "ltiResourceLink", Available: &TimeWindow{EndDateTime: "tomorrow"}}, "available.endDateTime", false},
		{"available end before start", ContentItem{Type: "ltiResourceLink", Available: &TimeWindow{StartDateTime: "2018-03-07T20:05:02Z", EndDateTime: "2018-02-06T20:05:02Z"}}, "available.endDateTime", false},
		{"submission end not RFC 3339", ContentItem{Type: "ltiResourceLink", Submission: &TimeWindow{EndDateTime: "2018-03-06 20:05:02"}}, "submission.endDateTime", false},
		{"submission with offset and fraction", ContentItem{Type: "ltiResourceLink", Submission: &TimeWindow{StartDateTime: "2024-09-25T13:00:00.000Z", EndDateTime: "2024-10-25T15:00:00+02:00"}}, "", true},
		{"expiresAt not RFC 3339", ContentItem{Type: "file", URL: "https://a.example/f.pdf", ExpiresAt: "03/06/2018"}, "expiresAt", false},
		{"expiresAt", ContentItem{Type: "file", URL: "https://a.example/f.pdf", ExpiresAt: "2018-03-06T20:05:02Z", MediaType: "application/pdf"}, "", true},
		{"extension URL key", ContentItem{Type: "image", URL: "https://a.example/i.png", Extensions: map[string]json.RawMessage{"https://www.example.com/resourceMetadata": json.RawMessage(`{"license":"CCBY4.0"}`)}}, "", true},
		{"extension plain key on a standard type", ContentItem{Type: "image", URL: "https://a.example/i.png", Extensions: map[string]json.RawMessage{"license": json.RawMessage(`"x"`)}}, "license", false},
		{"extension invalid JSON", ContentItem{Type: "image", URL: "https://a.example/i.png", Extensions: map[string]json.RawMessage{"https://x.example/m": json.RawMessage(`{`)}}, "https://x.example/m", false},
		{"extension named like a member", ContentItem{Type: "https://x.example/t", Extensions: map[string]json.RawMessage{"URL": json.RawMessage(`"x"`)}}, "URL", false},
		{"extension type with plain members", ContentItem{Type: "https://x.example/t", Extensions: map[string]json.RawMessage{"data": json.RawMessage(`"x"`)}}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Intrinsic rules hold with and without settings; the item is second so
			// that the index is checked.
			for _, settings := range []*DeepLinkingSettings{nil, {AcceptTypes: []string{"link", "ltiResourceLink", "file", "html", "image", tc.item.Type}, AcceptMultiple: ptr(true)}} {
				e := ValidateContentItems([]ContentItem{ok, tc.item}, settings)
				if tc.ok {
					if e != nil {
						t.Fatalf("refused: %v", e)
					}
					continue
				}
				wantItemError(t, e, 1, tc.field)
				if want := "contentItems[1]." + tc.field + ": "; !strings.HasPrefix(e.Error(), want) {
					t.Errorf("message %q, want prefix %q", e, want)
				}
			}
		})
	}
	if e := ValidateContentItems(nil, nil); e != nil {
		t.Errorf("no items: %v", e)
	}
	if got := (&ContentItemError{Index: 2, Field: "url", Message: "required for type link"}).Error(); got != "contentItems[2].url: required for type link" {
		t.Errorf("Error() = %q", got)
	}
}

func TestValidateOptions(t *testing.T) {
	for _, o := range []DeepLinkingOptions{
		{}, {Message: "m"}, {Log: "l"}, {Message: "m", Log: "l"}, {ErrMessage: "e"}, {ErrLog: "e"}, {ErrMessage: "e", ErrLog: "l"},
	} {
		if err := ValidateOptions(o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, o := range []DeepLinkingOptions{
		{Message: "m", ErrMessage: "e"}, {Log: "l", ErrLog: "e"}, {Message: "m", ErrLog: "e"}, {Log: "l", ErrMessage: "e"},
	} {
		err := ValidateOptions(o)
		var ce *ContentItemError
		if !errors.As(err, &ce) || ce.Index != -1 || ce.Field != "options" {
			t.Errorf("%+v: %v, want an options error", o, err)
			continue
		}
		p := dlParams(dlRequest(t, nil))
		p.Options = o
		if _, _, err := DeepLinkingResponse(p); err == nil {
			t.Errorf("%+v: DeepLinkingResponse accepted it", o)
		}
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
		t.Skipf("fixture not found: %v", err)
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

func TestDeepLinkingResponseFixtures(t *testing.T) {
	read := func(name string) *Claims {
		b, err := os.ReadFile(filepath.Join(fixturesDir, name))
		if err != nil {
			t.Skipf("fixture not found: %v", err)
		}
		c, err := ParseClaims(b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("canvas", func(t *testing.T) {
		c := read("canvas_dl_request.json")
		item := ContentItem{Type: ContentItemLTIResourceLink, Title: "Week 1 quiz",
			URL: "https://ltidemo.home.russfeld.me/lti/provider/launch?quiz=1", Custom: map[string]string{"quiz": "1"}}
		d, returnURL := dlRespond(t, dlParams(c, item))
		if returnURL != c.DeepLinking.DeepLinkReturnURL || !strings.Contains(returnURL, "?data=eyJ0eXAi") {
			t.Errorf("returnURL %q", returnURL)
		}
		for k, v := range map[string]any{
			"iss": dlToolClientID, "aud": "https://canvas.home.russfeld.me",
			ClaimDeploymentID: "25:8865aa05b4b79b64a91a86042e43af5ea8ae79eb",
			ClaimMessageType:  "LtiDeepLinkingResponse", ClaimVersion: "1.3.0",
		} {
			if d.claims[k] != v {
				t.Errorf("%s = %v, want %v", k, d.claims[k], v)
			}
		}
		if _, ok := d.claims[ClaimDLData]; ok {
			t.Error("data claim without data in the request")
		}
		wantItems := []any{map[string]any{"type": "ltiResourceLink", "title": "Week 1 quiz",
			"url": "https://ltidemo.home.russfeld.me/lti/provider/launch?quiz=1", "custom": map[string]any{"quiz": "1"}}}
		if !reflect.DeepEqual(d.claims[ClaimContentItems], wantItems) {
			t.Errorf("content_items = %v", d.claims[ClaimContentItems])
		}
		// Canvas: accept_types ["ltiResourceLink"], accept_multiple false.
		if _, _, err := DeepLinkingResponse(dlParams(c, dlLink("https://a.example"))); err == nil {
			t.Error("a link item accepted by an ltiResourceLink-only request")
		}
		if _, _, err := DeepLinkingResponse(dlParams(c, item, item)); err == nil {
			t.Error("two items accepted with accept_multiple false")
		}
	})
	t.Run("blackboard data echo", func(t *testing.T) {
		c := read("blackboard_dl_request.json")
		if !c.DeepLinking.DataPresent {
			t.Skip("the Blackboard fixture has no data")
		}
		d, _ := dlRespond(t, dlParams(c, dlResourceLink()))
		if d.claims[ClaimDLData] != c.DeepLinking.Data {
			t.Errorf("data %v, want %q", d.claims[ClaimDLData], c.DeepLinking.Data)
		}
	})
}

func TestDeepLinkingResponseRefuses(t *testing.T) {
	rlr := claimsOf(t, rlrClaims())
	var le *apierr.Error
	if _, _, err := DeepLinkingResponse(dlParams(rlr)); !errors.As(err, &le) || le.Code != CodeNotDeepLinkingLaunch || le.Status != 400 {
		t.Errorf("resource link launch: %v", err)
	}
	if _, _, err := DeepLinkingResponse(dlParams(nil)); !errors.As(err, &le) || le.Code != CodeNotDeepLinkingLaunch {
		t.Errorf("nil request: %v", err)
	}
	for name, edit := range map[string]func(*DeepLinkingResponseParams){
		"no client_id": func(p *DeepLinkingResponseParams) { p.ClientID = "" },
		"no kid":       func(p *DeepLinkingResponseParams) { p.KID = "" },
		"no key":       func(p *DeepLinkingResponseParams) { p.Key = nil },
		"no iss":       func(p *DeepLinkingResponseParams) { p.Request.Issuer = "" },
		"no deployment": func(p *DeepLinkingResponseParams) {
			p.Request.DeploymentID = ""
		},
	} {
		p := dlParams(dlRequest(t, nil))
		edit(&p)
		tok, _, err := DeepLinkingResponse(p)
		if err == nil || tok != "" {
			t.Errorf("%s: signed %q", name, tok)
		}
		var ce *ContentItemError
		if errors.As(err, &le) || errors.As(err, &ce) {
			t.Errorf("%s: %v is blamed on the caller's input", name, err)
		}
	}
}

// BenchmarkDeepLinkingResponse builds and signs a two-item response; one RS256
// signature dominates.
func BenchmarkDeepLinkingResponse(b *testing.B) {
	c := dlRequest(b, nil)
	graded := dlResourceLink()
	graded.LineItem = &ContentLineItem{ScoreMaximum: 100, Label: "Quiz 12"}
	p := dlParams(c, graded, ContentItem{Type: ContentItemHTML, HTML: "<h1>A Custom Title</h1>"})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DeepLinkingResponse(p); err != nil {
			b.Fatal(err)
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
