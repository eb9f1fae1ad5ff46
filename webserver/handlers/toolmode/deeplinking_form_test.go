package toolmode

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// dlFormToken is a real LtiDeepLinkingResponse (one ltiResourceLink item) and its return
// URL, made once: the form tests need its size and alphabet, not its claims.
var dlFormToken = sync.OnceValues(func() ([2]string, error) {
	key, err := keys.Generate()
	if err != nil {
		return [2]string{}, err
	}
	c, err := lti.ParseClaims([]byte(`{"iss":"https://platform.example.edu","aud":"962fa4d8-bcbf-49a0-94b2-2de05ad274af",` +
		`"sub":"a6d5c443-1f51-4783-ba1a-7686ffe3b54a","nonce":"n-0S6_WzA2Mj",` +
		`"https://purl.imsglobal.org/spec/lti/claim/message_type":"LtiDeepLinkingRequest",` +
		`"https://purl.imsglobal.org/spec/lti/claim/version":"1.3.0",` +
		`"https://purl.imsglobal.org/spec/lti/claim/deployment_id":"07940580-b309-415e-a37c-914d387c1150",` +
		`"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings":{` +
		`"deep_link_return_url":"https://platform.example/deep_links?course=42&sesskey=abc",` +
		`"accept_types":["ltiResourceLink"],"accept_presentation_document_targets":["iframe"],` +
		`"data":"csrftoken:c7fbba78-7b75-46e3-9201-11e6d5f36f53"}}`))
	if err != nil {
		return [2]string{}, err
	}
	item := lti.ContentItem{Type: lti.ContentItemLTIResourceLink, Title: "Quiz 12", URL: "https://tool.example.com/lti/launch?quiz=12",
		Custom: map[string]string{"quiz_id": "az-123", "due": "$ResourceLink.submission.endDateTime", "empty": ""}}
	jwt, ret, err := lti.DeepLinkingResponse(lti.DeepLinkingResponseParams{Request: c,
		ClientID: "962fa4d8-bcbf-49a0-94b2-2de05ad274af", KID: "tool-2025-06-01", Key: key,
		Items: []lti.ContentItem{item}, Now: time.Unix(1700000000, 0)})
	return [2]string{jwt, ret}, err
})

func dlTestToken(tb testing.TB) (jwt, returnURL string) {
	tb.Helper()
	v, err := dlFormToken()
	if err != nil {
		tb.Fatal(err)
	}
	return v[0], v[1]
}

func TestDeepLinkingFormT_DL_01_OneFieldNamedJWT(t *testing.T) {
	tok, returnURL := dlTestToken(t)
	form, err := deepLinkingForm(returnURL, tok)
	if err != nil {
		t.Fatal(err)
	}
	// Two forms, each with the single field JWT: ltiop's, which the script submits, and a
	// hidden copy under LTIAAS's id (issue #16 §5) for scripts that submit ltiaas_dl.
	forms := regexp.MustCompile(`(?s)<form id="([^"]+)" action="([^"]+)" method="post"( hidden)?>(.*?)</form>`).FindAllStringSubmatch(form, -1)
	if len(forms) != 2 || forms[0][1] != "ltiop-deep-linking-response" || forms[1][1] != "ltiaas_dl" ||
		forms[0][3] != "" || forms[1][3] != " hidden" || forms[0][2] != forms[1][2] || strings.Count(form, "<form") != 2 {
		t.Fatalf("want the form and its hidden ltiaas_dl copy, got %s", form)
	}
	for _, f := range forms {
		inputs := regexp.MustCompile(`<input\b[^>]*>`).FindAllString(f[4], -1)
		if len(inputs) != 1 {
			t.Fatalf("form %s: want exactly one input, got %d in %s", f[1], len(inputs), f[4])
		}
		if !strings.Contains(inputs[0], `name="JWT"`) || !strings.Contains(inputs[0], `value="`+tok+`"`) ||
			!strings.Contains(inputs[0], `type="hidden"`) {
			t.Errorf("input %s: want a hidden field JWT holding the token", inputs[0])
		}
	}
	for _, want := range []string{
		`<form id="ltiop-deep-linking-response" `, `method="post"`,
		`<noscript><button type="submit">`,
		`<script>document.getElementById('ltiop-deep-linking-response').submit()</script>`,
	} {
		if !strings.Contains(form, want) {
			t.Errorf("form lacks %s:\n%s", want, form)
		}
	}
	if strings.Count(form, "<script") != 1 || strings.Count(form, "<noscript>") != 1 {
		t.Errorf("only ltiop's form is submitted by the script and offers a button: %s", form)
	}
}

func TestDeepLinkingFormT_DL_10_Escapes(t *testing.T) {
	hostileJWT := `a.b.c"><script>alert(1)</script>`
	form, err := deepLinkingForm("https://lms.example/deep_links?x=1", hostileJWT)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(form, "<script>alert") || strings.Contains(form, `c">`) {
		t.Errorf("the JWT is not escaped: %s", form)
	}
	if !strings.Contains(form, `value="a.b.c&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`) {
		t.Errorf("unexpected escaping: %s", form)
	}
	quoteURL := `https://lms.example/deep_links?q="><script>x</script>`
	if form, err := deepLinkingForm(quoteURL, "a.b.c"); err == nil && strings.Contains(form, `"><script>x`) {
		t.Errorf("the action is not escaped: %s", form)
	}
	// lti.DeepLinkingResponse refuses these return URLs first (T-DL-11); the form does too.
	for _, bad := range []string{"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
		"//lms.example/deep_links", "/deep_links", "", "https://", "ftp://lms.example/x"} {
		if form, err := deepLinkingForm(bad, "a.b.c"); err == nil {
			t.Errorf("%q accepted: %s", bad, form)
		}
	}
}

func TestDeepLinkingFormT_DL_11_ActionIsTheReturnURL(t *testing.T) {
	canvas := "https://canvas.example.edu/courses/6/deep_linking_response?data=eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJub25jZSI6IjJjNzEifQ.oLJ-mERLRbnPrXKlIFckI6PwdVP3AK7yuZ7YAXwfA5c"
	moodle := "http://moodle.example.edu/mod/lti/contentitem_return.php?course=42&id=7&sesskey=abc"
	for _, ret := range []string{canvas, moodle, "https://lms.example/deep_links?course=42&sesskey=abc"} {
		form, err := deepLinkingForm(ret, "a.b.c")
		if err != nil {
			t.Fatal(err)
		}
		if action := `action="` + strings.ReplaceAll(ret, "&", "&amp;") + `"`; !strings.Contains(form, action) {
			t.Errorf("form %s: want %s", form, action)
		}
	}
}

func BenchmarkDeepLinkingForm(b *testing.B) {
	tok, ret := dlTestToken(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := deepLinkingForm(ret, tok); err != nil {
			b.Fatal(err)
		}
	}
}
