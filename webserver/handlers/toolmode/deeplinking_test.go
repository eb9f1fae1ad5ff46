package toolmode_test

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

const claimDLSettings = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"

var (
	dlAction = regexp.MustCompile(`action="([^"]*)"`)
	dlJWT    = regexp.MustCompile(`name="JWT" value="([^"]*)"`)
)

// jwtHeader decodes the protected header of a compact JWS.
func jwtHeader(t *testing.T, jwt string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(jwt, ".")[0])
	var h map[string]any
	if err != nil || json.Unmarshal(b, &h) != nil {
		t.Fatalf("not a JWS: %q", jwt)
	}
	return h
}

// POST /api/deeplinking/form: a self-submitting form whose JWT the platform accepts
// (T-DL-01, T-DL-02, T-DL-11 the return URL verbatim, T-JWKS-04 the key's kid).
func TestDeepLinkingForm(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.deepLinkingLaunch(t, nil)
	res := rg.call(t, nil, "POST", "/api/deeplinking/form", ltikAuth(ltik), map[string]any{
		"contentItems": []any{map[string]any{
			"type": "ltiResourceLink", "title": "Quiz 3", "url": rg.ltiop.URL + "/lti/launch?quiz=3",
			"custom": map[string]any{"quiz": "3"},
		}},
		"options": map[string]any{"message": "Added Quiz 3"},
	})
	if res.Status != http.StatusOK {
		t.Fatalf("form: %d %s", res.Status, res.Body)
	}
	form, _ := res.JSON(t)["form"].(string)
	action, jwt := dlAction.FindStringSubmatch(form), dlJWT.FindStringSubmatch(form)
	if action == nil || jwt == nil {
		t.Fatalf("form %s", form)
	}
	want := rg.lms.Issuer + lmssim.DeepLinkReturnPath + "?" + lmssim.DeepLinkReturnQuery
	if got := html.UnescapeString(action[1]); got != want {
		t.Fatalf("form posts to %q, want %q", got, want)
	}
	if kid := jwtHeader(t, jwt[1])["kid"]; kid != rg.reg.Get("bench").Key.KID {
		t.Fatalf("kid %v is not the registration's key", kid)
	}
	postRes, err := http.PostForm(html.UnescapeString(action[1]), url.Values{"JWT": {html.UnescapeString(jwt[1])}})
	posted := testhttp.Read(t, postRes, err)
	if posted.Status != http.StatusOK {
		t.Fatalf("the platform refused the response: %d %s", posted.Status, posted.Body)
	}
	got := rg.lms.DeepLinkResponses()
	if len(got) != 1 || got[0]["https://purl.imsglobal.org/spec/lti-dl/claim/msg"] != "Added Quiz 3" {
		t.Fatalf("the platform received %v", got)
	}
}

// POST /api/deeplinking (and /message): the signed message and its target, for
// integrators that build the form; an empty selection is a valid answer (T-DL-07).
func TestDeepLinkingMessage(t *testing.T) {
	rg := newRig(t)
	ltik := rg.deepLinkingLaunch(t, nil)
	for _, path := range []string{"/api/deeplinking", "/api/deeplinking/message"} {
		res := rg.call(t, nil, "POST", path, ltikAuth(ltik), map[string]any{"contentItems": []any{}})
		if res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.Status, res.Body)
		}
		m := res.JSON(t)
		if m["target"] != rg.lms.Issuer+lmssim.DeepLinkReturnPath+"?"+lmssim.DeepLinkReturnQuery {
			t.Fatalf("%s: target %v", path, m["target"])
		}
		if msg, _ := m["message"].(string); jwtHeader(t, msg)["alg"] != "RS256" {
			t.Fatalf("%s: message %v", path, m["message"])
		}
	}
}

// Refusals of a deep-linking response; the platform receives nothing.
func TestDeepLinkingRefusals(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	dl := rg.deepLinkingLaunch(t, nil)
	single := rg.deepLinkingLaunch(t, func(c map[string]any) { c[claimDLSettings].(map[string]any)["accept_multiple"] = false })
	resourceLink := rg.launchWith(t, nil)
	link := func(u string) map[string]any { return map[string]any{"type": "link", "url": u} }
	for _, tc := range []struct {
		name, ltik string
		body       any
		status     int
		code, says string
	}{
		{"a resource-link launch", resourceLink, map[string]any{"contentItems": []any{}}, 403, toolmode.CodeServiceNotAvailable, "LtiDeepLinkingRequest"},
		{"an item without its url", dl, map[string]any{"contentItems": []any{map[string]any{"type": "link"}}}, 400, "INVALID_PARAMETERS", "contentItems[0].url"},
		{"T-DL-04 a type the platform does not accept", dl, map[string]any{"contentItems": []any{map[string]any{"type": "file", "url": "https://x.example/f"}}}, 400, "INVALID_PARAMETERS", "file"},
		{"T-DL-05 two items when one is accepted", single, map[string]any{"contentItems": []any{link("https://a.example"), link("https://b.example")}}, 400, "INVALID_PARAMETERS", ""},
		{"not JSON", dl, "{", 400, "INVALID_REQUEST_BODY", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/api/deeplinking/form", "/api/deeplinking"} {
				header := ltikAuth(tc.ltik)
				if _, ok := tc.body.(string); ok {
					header["Content-Type"] = "application/json"
				}
				res := rg.call(t, nil, "POST", path, header, tc.body)
				testhttp.WantRefusal(t, res, tc.status, tc.code)
				if !strings.Contains(testhttp.Description(t, res), tc.says) {
					t.Fatalf("the description %q does not say %q", testhttp.Description(t, res), tc.says)
				}
			}
		})
	}
	t.Run("a body that is not JSON", func(t *testing.T) {
		res := rg.call(t, nil, "POST", "/api/deeplinking/form", map[string]string{
			"Authorization": ltikAuth(dl)["Authorization"], "Content-Type": "text/plain"}, "items")
		testhttp.WantRefusal(t, res, 415, "UNSUPPORTED_MEDIA_TYPE")
	})
	t.Run("a service key", func(t *testing.T) {
		key := rg.serviceKeyOf(t, dl)
		res := rg.call(t, nil, "POST", "/api/deeplinking/form", serviceAuth(key), map[string]any{"contentItems": []any{}})
		testhttp.WantRefusal(t, res, 401, toolmode.CodeInvalidLtikAuth)
	})
	if got := rg.lms.DeepLinkResponses(); len(got) != 0 {
		t.Fatalf("the platform received %v", got)
	}
}
