package platformmode_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

const (
	scopeNRPS     = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
	scopeLineItem = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	scopeScore    = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	scopeResult   = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
)

// deepLinkingLaunch runs a deep-linking launch to the tool and returns the verified launch.
func (h *harness) deepLinkingLaunch(data string, multiple bool) toolsim.Launch {
	h.t.Helper()
	payload := h.launchToPayload(platformmode.CreateLaunchRequest{User: "teacher-1", MessageType: ltiplatform.MessageDeepLinking,
		Data: json.RawMessage(`{"module":"m-9"}`)})
	d := launchData(payload)
	d.User.Roles = []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"}
	d.DeepLinking = &ltiplatform.DeepLinking{AcceptTypes: []string{"ltiResourceLink", "link"},
		AcceptPresentationDocumentTargets: []string{"iframe", "window"}, AcceptMultiple: &multiple, Data: data}
	_, l := h.answerAndPost(d)
	if !l.OK || l.MessageType != "LtiDeepLinkingRequest" {
		h.t.Fatalf("the tool refused the deep-linking launch: %s", l.Err)
	}
	return l
}

func resourceLinkItem(title string) map[string]any {
	return map[string]any{"type": "ltiResourceLink", "title": title, "url": "https://tool.example/activity/7",
		"custom": map[string]any{"level": "2"}, "lineItem": map[string]any{"scoreMaximum": 10, "label": title}}
}

func TestDeepLinkingRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	l := h.deepLinkingLaunch("opaque-123", false)
	settings, _ := l.Claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"].(map[string]any)
	if settings["data"] != "opaque-123" || !strings.HasPrefix(settings["deep_link_return_url"].(string), h.ltiop.URL+"/lti/platform/deeplinking?ctx=") {
		t.Fatalf("deep_linking_settings %v", settings)
	}
	jwt, ret, err := h.tool.DeepLinkingResponse(l, []map[string]any{resourceLinkItem("Quiz 7")},
		toolsim.WithClaim("https://purl.imsglobal.org/spec/lti-dl/claim/msg", "Added Quiz 7"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.tool.PostDeepLinkingResponse(context.Background(), h.client, ret, jwt)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || loc.Scheme+"://"+loc.Host+loc.Path != h.integrator.URL+"/content-items" {
		t.Fatalf("deep-linking return: %d %s", res.StatusCode, loc)
	}
	var got platformmode.ContentItemsResult
	if status := h.api("/api/launches/content-items", map[string]string{"payload": loc.Query().Get("payload")}, &got); status != 200 {
		t.Fatalf("content items: %d", status)
	}
	if got.ToolID != "sample-tool" || got.User != "teacher-1" || got.DeploymentID != testDeployment || string(got.Data) != `{"module":"m-9"}` ||
		got.Msg != "Added Quiz 7" || len(got.ContentItems) != 1 || got.ContentItems[0].Title != "Quiz 7" || got.ContentItems[0].Type != "ltiResourceLink" {
		t.Fatalf("content items result: %+v", got)
	}
	// P-DLR-09: the same response again is refused.
	res, err = h.tool.PostDeepLinkingResponse(context.Background(), h.client, ret, jwt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(b), "DUPLICATE_NONCE") {
		t.Fatalf("replayed response: %d %s", res.StatusCode, b)
	}
	// Nothing selected still returns (DL §2.3).
	l2 := h.deepLinkingLaunch("", true)
	jwt, ret, _ = h.tool.DeepLinkingResponse(l2, nil)
	res, _ = h.tool.PostDeepLinkingResponse(context.Background(), h.client, ret, jwt)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("empty selection: %d", res.StatusCode)
	}
}

func TestDeepLinkingResponseRefusals(t *testing.T) {
	h := newHarness(t, nil)
	other, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	const dlClaim = "https://purl.imsglobal.org/spec/lti-dl/claim/"
	for _, tc := range []struct {
		name, code string
		items      []map[string]any
		opts       []toolsim.AssertionOption
	}{
		{"P-DLR-01 alg none", "INVALID_ALGORITHM", nil, []toolsim.AssertionOption{toolsim.WithAlg("none")}},
		{"P-DLR-01 HS256 keyed with the tool's public key", "INVALID_ALGORITHM", nil, []toolsim.AssertionOption{toolsim.WithAlg("HS256")}},
		{"P-DLR-01 signed by another key", "INVALID_SIGNATURE", nil, []toolsim.AssertionOption{toolsim.WithSigningKey(other)}},
		{"P-DLR-01 unknown kid", "UNKNOWN_KID", nil, []toolsim.AssertionOption{toolsim.WithHeader("kid", "not-a-kid")}},
		{"P-DLR-02 iss is another client", "ISSUER_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithClaim("iss", "other-client")}},
		{"P-DLR-03 aud is another platform", "AUDIENCE_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithClaim("aud", "https://other.example")}},
		{"P-DLR-03 aud adds an untrusted audience", "AUDIENCE_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithClaim("aud", []string{h.ltiop.URL, "https://other.example"})}},
		{"P-DLR-04 azp is not the platform", "AZP_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithClaim("azp", "https://other.example")}},
		{"P-DLR-05 RS512", "INVALID_ALGORITHM", nil, []toolsim.AssertionOption{toolsim.WithAlg("RS512")}},
		{"P-DLR-06 expired", "TOKEN_EXPIRED", nil, []toolsim.AssertionOption{toolsim.WithClaim("exp", time.Now().Add(-time.Hour).Unix())}},
		{"P-DLR-09 exp too far ahead to remember the nonce", "TOKEN_LIFETIME_TOO_LONG", nil, []toolsim.AssertionOption{toolsim.WithClaim("exp", time.Now().Add(30*24*time.Hour).Unix())}},
		{"P-DLR-07 iat in the future", "INVALID_IAT", nil, []toolsim.AssertionOption{toolsim.WithClaim("iat", time.Now().Add(time.Hour).Unix())}},
		{"P-DLR-08 no nonce", "MISSING_NONCE", nil, []toolsim.AssertionOption{toolsim.WithoutClaim("nonce")}},
		{"P-DLR-10 other deployment", "DEPLOYMENT_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithClaim(claim+"deployment_id", "other")}},
		{"P-DLR-11 message type", "INVALID_MESSAGE_TYPE", nil, []toolsim.AssertionOption{toolsim.WithClaim(claim+"message_type", "LtiResourceLinkRequest")}},
		{"P-DLR-11 version", "INVALID_LTI_VERSION", nil, []toolsim.AssertionOption{toolsim.WithClaim(claim+"version", "1.1")}},
		{"P-DLR-12 data changed", "DATA_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithClaim(dlClaim+"data", "forged")}},
		{"P-DLR-12 data dropped", "DATA_MISMATCH", nil, []toolsim.AssertionOption{toolsim.WithoutClaim(dlClaim + "data")}},
		{"P-DLR-13 type not accepted", "CONTENT_ITEM_REJECTED", []map[string]any{{"type": "html", "html": "<p>hi</p>"}}, nil},
		{"P-DLR-13 several items, accept_multiple false", "CONTENT_ITEM_REJECTED", []map[string]any{resourceLinkItem("a"), resourceLinkItem("b")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h.on(t)
			l := h.deepLinkingLaunch("opaque-123", false)
			items := tc.items
			if items == nil {
				items = []map[string]any{resourceLinkItem("Quiz")}
			}
			jwt, ret, err := h.tool.DeepLinkingResponse(l, items, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.tool.PostDeepLinkingResponse(context.Background(), h.client, ret, jwt)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode < 400 || res.Header.Get("Location") != "" || !strings.Contains(string(b), tc.code) {
				t.Fatalf("want a refusal with %s, got %d %s", tc.code, res.StatusCode, b)
			}
		})
	}
	t.Run("forged return context", func(t *testing.T) {
		h := h.on(t)
		l := h.deepLinkingLaunch("", false)
		jwt, _, _ := h.tool.DeepLinkingResponse(l, nil)
		res, err := h.tool.PostDeepLinkingResponse(context.Background(), h.client, h.ltiop.URL+"/lti/platform/deeplinking?ctx=forged", jwt)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Fatalf("forged ctx: %d", res.StatusCode)
		}
	})
}

func TestTokenEndpointAndIntrospection(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	tr, status, err := h.tool.RequestToken(ctx, []string{scopeNRPS, scopeResult, scopeScore})
	if err != nil || status != 200 {
		t.Fatalf("token: %d %v %+v", status, err, tr)
	}
	// requested ∩ allowed, in request order; result.readonly is not allowed.
	if tr.Scope != scopeNRPS+" "+scopeScore || !strings.EqualFold(tr.TokenType, "bearer") || tr.ExpiresIn != 3600 {
		t.Fatalf("token response %+v", tr)
	}
	var in platformmode.Introspection
	if status := h.api("/api/tokens/introspect", map[string]string{"token": tr.AccessToken}, &in); status != 200 ||
		!in.Active || in.ClientID != testClientID || in.Scope != tr.Scope || in.ToolID != "sample-tool" || in.DeploymentID != testDeployment {
		t.Fatalf("introspection: %d %+v", status, in)
	}
	// Deactivating the tool makes its tokens inactive.
	reg := h.reg.DeepCopy()
	reg.Spec.Active = new(bool)
	h.tools.Apply(reg)
	if h.api("/api/tokens/introspect", map[string]string{"token": tr.AccessToken}, &in); in.Active {
		t.Fatal("a deactivated tool's token is still active")
	}
	h.tools.Apply(h.reg)
	h.clock.Advance(time.Hour + time.Second)
	if h.api("/api/tokens/introspect", map[string]string{"token": tr.AccessToken}, &in); in.Active {
		t.Fatal("an expired token is active")
	}
	if h.api("/api/tokens/introspect", map[string]string{"token": "garbage"}, &in); in.Active {
		t.Fatal("garbage is active")
	}
}

// A token signed with the platform key is ours only with the header the platform writes:
// one whose protected header carries "crit" (an extension ltiop does not understand,
// RFC 7515 §4.1.11) or "b64" (RFC 7797) is refused, though the signature is good.
// jws.Verify let an unknown crit through.
func TestIntrospectionRefusesExtensionHeaders(t *testing.T) {
	h := newHarness(t, nil)
	tr, status, err := h.tool.RequestToken(context.Background(), []string{scopeNRPS})
	if err != nil || status != 200 {
		t.Fatalf("token: %d %v %+v", status, err, tr)
	}
	parts := strings.Split(tr.AccessToken, ".")
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	// resign signs the access token's claims again with the platform key, under the
	// platform's header plus extra.
	resign := func(extra map[string]any) string {
		hdr := jws.NewHeaders()
		for k, v := range map[string]any{jws.KeyIDKey: h.signer.CurrentKID(), jws.TypeKey: "at+jwt"} {
			if err := hdr.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		for k, v := range extra {
			if err := hdr.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		tok, err := jws.Sign(claims, jws.WithKey(jwa.RS256(), h.signingKey.Private, jws.WithProtectedHeaders(hdr)))
		if err != nil {
			t.Fatal(err)
		}
		return string(tok)
	}
	for _, tc := range []struct {
		name   string
		extra  map[string]any
		active bool
	}{
		{"the platform's header", nil, true},
		{"crit names an unknown extension", map[string]any{"crit": []string{"https://example.com/ext"}, "https://example.com/ext": true}, false},
		{"b64 true", map[string]any{"b64": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in platformmode.Introspection
			if status := h.api("/api/tokens/introspect", map[string]string{"token": resign(tc.extra)}, &in); status != 200 || in.Active != tc.active {
				t.Fatalf("introspection: %d, active %v, want %v", status, in.Active, tc.active)
			}
		})
	}
}

func TestTokenEndpointRefusals(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	other, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tokenURL := h.ltiop.URL + "/lti/platform/token"
	for _, tc := range []struct {
		name, oauth string
		status      int
		scopes      []string
		opts        []toolsim.AssertionOption
	}{
		{"P-TOK-03 alg none", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithAlg("none")}},
		{"P-TOK-04 unknown client", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithClaim("iss", "nobody"), toolsim.WithClaim("sub", "nobody")}},
		{"P-TOK-04 sub differs from iss", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithClaim("sub", "someone")}},
		{"P-TOK-05 aud is another server", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithClaim("aud", "https://other.example/token")}},
		{"P-TOK-06 expired", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithClaim("exp", time.Now().Add(-time.Hour).Unix())}},
		{"P-TOK-07 no jti", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithoutClaim("jti")}},
		{"P-TOK-08 signed by another key", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithSigningKey(other)}},
		{"P-TOK-08 HS256 keyed with the tool's public key", "invalid_client", 401, nil, []toolsim.AssertionOption{toolsim.WithAlg("HS256")}},
		{"P-TOK-09 only scopes not allowed", "invalid_scope", 400, []string{scopeResult}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scopes := tc.scopes
			if scopes == nil {
				scopes = []string{scopeNRPS}
			}
			tr, status, err := h.tool.RequestTokenWith(ctx, scopes, tc.opts...)
			if err != nil || status != tc.status || tr.Error != tc.oauth || tr.AccessToken != "" {
				t.Fatalf("got %d %+v %v, want %d %s", status, tr, err, tc.status, tc.oauth)
			}
		})
	}
	assertion := func() string {
		a, err := h.tool.ClientAssertion(tokenURL)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tc := range []struct {
		name, oauth string
		status      int
		form        url.Values
	}{
		{"P-TOK-01 grant_type authorization_code", "unsupported_grant_type", 400, url.Values{"grant_type": {"authorization_code"},
			"client_assertion_type": {toolsim.ClientAssertionType}, "client_assertion": {assertion()}, "scope": {scopeNRPS}}},
		{"P-TOK-02 client_assertion_type saml", "invalid_client", 401, url.Values{"grant_type": {"client_credentials"},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:saml2-bearer"}, "client_assertion": {assertion()}, "scope": {scopeNRPS}}},
		{"P-TOK-03 assertion is not a JWT", "invalid_client", 401, url.Values{"grant_type": {"client_credentials"},
			"client_assertion_type": {toolsim.ClientAssertionType}, "client_assertion": {"not-a-jwt"}, "scope": {scopeNRPS}}},
		{"P-TOK-04 client_id names another client", "invalid_client", 401, url.Values{"grant_type": {"client_credentials"}, "client_id": {"other"},
			"client_assertion_type": {toolsim.ClientAssertionType}, "client_assertion": {assertion()}, "scope": {scopeNRPS}}},
		{"P-TOK-09 no scope", "invalid_scope", 400, url.Values{"grant_type": {"client_credentials"},
			"client_assertion_type": {toolsim.ClientAssertionType}, "client_assertion": {assertion()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, status, err := h.tool.PostToken(ctx, tc.form)
			if err != nil || status != tc.status || tr.Error != tc.oauth {
				t.Fatalf("got %d %+v %v, want %d %s", status, tr, err, tc.status, tc.oauth)
			}
		})
	}
	t.Run("P-TOK-07 assertion replayed", func(t *testing.T) {
		form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {toolsim.ClientAssertionType},
			"client_assertion": {assertion()}, "scope": {scopeNRPS}}
		if _, status, _ := h.tool.PostToken(ctx, form); status != 200 {
			t.Fatalf("first use: %d", status)
		}
		if tr, status, _ := h.tool.PostToken(ctx, form); status != 401 || tr.Error != "invalid_client" {
			t.Fatalf("replay: %d %+v", status, tr)
		}
	})
	t.Run("inactive tool", func(t *testing.T) {
		reg := h.reg.DeepCopy()
		reg.Spec.Active = new(bool)
		h.tools.Apply(reg)
		defer h.tools.Apply(h.reg)
		if tr, status, _ := h.tool.RequestToken(ctx, []string{scopeNRPS}); status != 401 || tr.Error != "invalid_client" {
			t.Fatalf("inactive: %d %+v", status, tr)
		}
	})
}
