package lmssim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

const (
	dlSettings = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	dlData     = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
	dlItems    = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
)

// dlRequest issues a deep-linking request as the platform would (signed) and returns its settings.
func (r *rig) dlRequest(t *testing.T) map[string]any {
	t.Helper()
	c := r.lms.Claims("user-1", "nonce-1", "https://tool.example/launch")
	r.lms.MakeDeepLinking(c)
	if _, err := r.lms.Sign(c, nil); err != nil {
		t.Fatal(err)
	}
	return c[dlSettings].(map[string]any)
}

var nonceCount int

// dlResponse is a valid LtiDeepLinkingResponse to a request with these settings.
func (r *rig) dlResponse(settings map[string]any, items ...map[string]any) map[string]any {
	now := time.Now()
	nonceCount++
	list := []map[string]any{}
	list = append(list, items...)
	c := map[string]any{
		"iss": r.lms.ClientID, "aud": r.lms.Issuer, "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"nonce":         fmt.Sprintf("dl-nonce-%d", nonceCount),
		deploymentClaim: r.lms.DeploymentID,
		"https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiDeepLinkingResponse",
		"https://purl.imsglobal.org/spec/lti/claim/version":      "1.3.0",
		dlItems: list,
	}
	if d, ok := settings["data"]; ok {
		c[dlData] = d
	}
	return c
}

func (r *rig) postDL(t *testing.T, to, jwt string) reply {
	t.Helper()
	return send(t, "POST", to, map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
		url.Values{"JWT": {jwt}}.Encode())
}

var (
	linkItem = map[string]any{"type": "link", "url": "https://tool.example/page", "title": "A page"}
	ltiItem  = map[string]any{"type": "ltiResourceLink", "url": "https://tool.example/launch?r=1", "title": "Quiz",
		"custom": map[string]any{"quiz": "1"}, "lineItem": map[string]any{"scoreMaximum": 10, "label": "Quiz"}}
)

func TestDeepLinkingResponseAccepted(t *testing.T) {
	r := newRig(t)
	settings := r.dlRequest(t)
	returnURL := settings["deep_link_return_url"].(string)
	claims := r.dlResponse(settings, ltiItem, linkItem)
	res := r.postDL(t, returnURL, r.tool.sign(t, claims, r.tool.header()))
	if res.Status != 200 || !strings.Contains(res.Body, "Received 2 items") {
		t.Fatalf("HTTP %d: %s", res.Status, res.Body)
	}
	got := r.lms.DeepLinkResponses()
	if len(got) != 1 || got[0][dlData] != settings["data"] || len(got[0][dlItems].([]any)) != 2 {
		t.Errorf("DeepLinkResponses %v", got)
	}

	// aud as an array holding the issuer, and an empty selection, are fine too.
	claims = r.dlResponse(settings)
	claims["aud"] = []string{r.lms.Issuer}
	delete(claims, dlItems)
	if res := r.postDL(t, returnURL, r.tool.sign(t, claims, r.tool.header())); res.Status != 200 || !strings.Contains(res.Body, "Received 0 items") {
		t.Errorf("empty selection: HTTP %d: %s", res.Status, res.Body)
	}
	if n := len(r.lms.DeepLinkResponses()); n != 2 {
		t.Errorf("%d responses", n)
	}
}

func TestDeepLinkingResponseRefused(t *testing.T) {
	r := newRig(t)
	settings := r.dlRequest(t)
	returnURL := settings["deep_link_return_url"].(string)
	type mutation func(c, h map[string]any)
	now := time.Now()
	cases := map[string]struct {
		m    mutation
		want string
	}{
		"wrong data":        {func(c, h map[string]any) { c[dlData] = "opaque-0000" }, "data"},
		"data re-encoded":   {func(c, h map[string]any) { c[dlData] = " " + c[dlData].(string) }, "data"},
		"missing data":      {func(c, h map[string]any) { delete(c, dlData) }, "data"},
		"missing nonce":     {func(c, h map[string]any) { delete(c, "nonce") }, "nonce"},
		"empty nonce":       {func(c, h map[string]any) { c["nonce"] = "" }, "nonce"},
		"wrong aud":         {func(c, h map[string]any) { c["aud"] = r.lms.Issuer + "/" }, "aud"},
		"aud is the client": {func(c, h map[string]any) { c["aud"] = r.lms.ClientID }, "aud"},
		"aud array without": {func(c, h map[string]any) { c["aud"] = []string{"someone"} }, "aud"},
		"wrong iss":         {func(c, h map[string]any) { c["iss"] = r.lms.Issuer }, "iss"},
		"message_type": {func(c, h map[string]any) {
			c["https://purl.imsglobal.org/spec/lti/claim/message_type"] = "LtiDeepLinkingRequest"
		}, "message_type"},
		"version":       {func(c, h map[string]any) { c["https://purl.imsglobal.org/spec/lti/claim/version"] = "1.1" }, "version"},
		"deployment":    {func(c, h map[string]any) { c[deploymentClaim] = "deployment-2" }, "deployment_id"},
		"no deployment": {func(c, h map[string]any) { delete(c, deploymentClaim) }, "deployment_id"},
		"expired": {func(c, h map[string]any) {
			c["iat"], c["exp"] = now.Add(-time.Hour).Unix(), now.Add(-time.Minute).Unix()
		}, "expired"},
		"lives over 10 min":   {func(c, h map[string]any) { c["iat"], c["exp"] = now.Unix(), now.Add(601*time.Second).Unix() }, "exp-iat"},
		"no iat":              {func(c, h map[string]any) { delete(c, "iat") }, "iat"},
		"unaccepted type":     {func(c, h map[string]any) { c[dlItems] = []any{map[string]any{"type": "html", "html": "<p>"}} }, "accept_types"},
		"item without type":   {func(c, h map[string]any) { c[dlItems] = []any{map[string]any{"url": "https://x"}} }, "type"},
		"items not an array":  {func(c, h map[string]any) { c[dlItems] = map[string]any{"type": "link"} }, "array"},
		"no kid":              {func(c, h map[string]any) { h["kid"] = nil }, "kid"},
		"unknown kid":         {func(c, h map[string]any) { h["kid"] = "other" }, "kid"},
		"content items typed": {func(c, h map[string]any) { c[dlItems] = []any{"link"} }, "object"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			claims, h := r.dlResponse(settings, linkItem), r.tool.header()
			c.m(claims, h)
			res := r.postDL(t, returnURL, r.tool.sign(t, claims, h))
			if res.Status != 400 || !strings.Contains(res.Body, c.want) {
				t.Errorf("HTTP %d, want 400 mentioning %q: %s", res.Status, c.want, res.Body)
			}
		})
	}
	good := func() string { return r.tool.sign(t, r.dlResponse(settings, linkItem), r.tool.header()) }
	t.Run("signed by another key", func(t *testing.T) {
		jwt := signWith(t, testKey(t, 1), jwa.RS256(), r.dlResponse(settings, linkItem), r.tool.header())
		if res := r.postDL(t, returnURL, jwt); res.Status != 400 || !strings.Contains(res.Body, "signature") {
			t.Errorf("HTTP %d: %s", res.Status, res.Body)
		}
	})
	t.Run("return URL without its query (T-DL-11)", func(t *testing.T) {
		u, _ := url.Parse(returnURL)
		u.RawQuery = ""
		if res := r.postDL(t, u.String(), good()); res.Status != 400 || !strings.Contains(res.Body, "verbatim") {
			t.Errorf("HTTP %d: %s", res.Status, res.Body)
		}
		u.RawQuery = "course=42"
		if res := r.postDL(t, u.String(), good()); res.Status != 400 {
			t.Errorf("no sesskey: HTTP %d: %s", res.Status, res.Body)
		}
	})
	t.Run("field name", func(t *testing.T) {
		res := send(t, "POST", returnURL, map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			url.Values{"jwt": {good()}}.Encode())
		if res.Status != 400 || !strings.Contains(res.Body, "JWT") {
			t.Errorf("HTTP %d: %s", res.Status, res.Body)
		}
	})
	t.Run("GET", func(t *testing.T) {
		if res := send(t, "GET", returnURL+"&JWT="+good(), nil, ""); res.Status != 405 {
			t.Errorf("HTTP %d", res.Status)
		}
	})
	t.Run("replayed nonce", func(t *testing.T) {
		jwt := good()
		if res := r.postDL(t, returnURL, jwt); res.Status != 200 {
			t.Fatalf("HTTP %d: %s", res.Status, res.Body)
		}
		if res := r.postDL(t, returnURL, jwt); res.Status != 400 || !strings.Contains(res.Body, "nonce") {
			t.Errorf("replay: HTTP %d: %s", res.Status, res.Body)
		}
	})
	if n := len(r.lms.DeepLinkResponses()); n != 1 {
		t.Errorf("%d responses stored, want only the good one", n)
	}
}

func TestDeepLinkingMultipleAndCustomizedRequests(t *testing.T) {
	r := newRig(t)
	// A request through Customize: one type only, no multiple, no data.
	r.lms.Customize = func(c, h map[string]any) {
		if s, ok := c[dlSettings].(map[string]any); ok {
			s["accept_types"] = []any{"link"}
			s["accept_multiple"] = false
			delete(s, "data")
		}
	}
	c := r.lms.Claims("user-1", "n", "https://tool.example/launch")
	r.lms.MakeDeepLinking(c)
	if _, err := r.lms.Sign(c, nil); err != nil {
		t.Fatal(err)
	}
	settings := c[dlSettings].(map[string]any)
	returnURL := settings["deep_link_return_url"].(string)
	two := r.dlResponse(settings, linkItem, linkItem)
	if res := r.postDL(t, returnURL, r.tool.sign(t, two, r.tool.header())); res.Status != 400 || !strings.Contains(res.Body, "multiple") {
		t.Errorf("two items: HTTP %d: %s", res.Status, res.Body)
	}
	one := r.dlResponse(settings, linkItem)
	if _, ok := one[dlData]; ok {
		t.Fatal("the request had no data")
	}
	if res := r.postDL(t, returnURL, r.tool.sign(t, one, r.tool.header())); res.Status != 200 {
		t.Errorf("one item, no data: HTTP %d: %s", res.Status, res.Body)
	}
	one = r.dlResponse(settings, linkItem)
	one[dlData] = "invented"
	if res := r.postDL(t, returnURL, r.tool.sign(t, one, r.tool.header())); res.Status != 400 {
		t.Errorf("data the request did not carry: HTTP %d: %s", res.Status, res.Body)
	}
	if lmssim.DeepLinkReturnQuery != "course=42&sesskey=abc" {
		t.Error("DeepLinkReturnQuery")
	}
}
