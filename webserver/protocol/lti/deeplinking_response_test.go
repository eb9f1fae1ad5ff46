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

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
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

func TestDeepLinkingResponseFixtures(t *testing.T) {
	read := func(name string) *Claims {
		b, err := os.ReadFile(filepath.Join(fixturesDir, name))
		if err != nil {
			t.Fatal(err)
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
