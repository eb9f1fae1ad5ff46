package lmssim_test

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

func TestServicesAnswer404UntilEnabled(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	lms, err := lmssim.New(srv.URL, "client-1", "deployment-1")
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = lms.Handler() // built before EnableServices
	paths := []struct{ method, path string }{
		{"POST", lmssim.TokenPath}, {"GET", lmssim.MembershipsPath},
		{"GET", lmssim.LineItemsPath + "?type_id=4"}, {"GET", lmssim.LineItemsPath + "/1/lineitem?type_id=4"},
		{"POST", lmssim.DeepLinkReturnPath + "?" + lmssim.DeepLinkReturnQuery},
	}
	for _, p := range paths {
		if res := send(t, p.method, srv.URL+p.path, nil, ""); res.Status != 404 {
			t.Errorf("%s %s before EnableServices: HTTP %d, want 404", p.method, p.path, res.Status)
		}
	}
	if res := send(t, "GET", srv.URL+lmssim.JWKSPath, nil, ""); res.Status != 200 {
		t.Errorf("JWKS: HTTP %d", res.Status)
	}
	lms.EnableServices("http://127.0.0.1:1/jwks")
	for _, p := range paths {
		if res := send(t, p.method, srv.URL+p.path, nil, ""); res.Status == 404 {
			t.Errorf("%s %s after EnableServices: 404: %s", p.method, p.path, res.Body)
		}
	}
}

func TestClaimsCarryServiceURLs(t *testing.T) {
	r := newRig(t)
	c := r.lms.Claims("user-1", "n", "https://tool.example/launch")
	nrps := c["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"].(map[string]any)
	if got, want := nrps["context_memberships_url"], r.lms.Issuer+"/nrps/memberships"; got != want {
		t.Errorf("context_memberships_url %v, want %v", got, want)
	}
	ags := c["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"].(map[string]any)
	if got, want := ags["lineitems"], r.lms.Issuer+"/mod/lti/services.php/2/lineitems?type_id=4"; got != want {
		t.Errorf("lineitems %v, want %v", got, want)
	}
	if got, want := ags["lineitem"], r.lms.Issuer+"/mod/lti/services.php/2/lineitems/1/lineitem?type_id=4"; got != want {
		t.Errorf("lineitem %v, want %v", got, want)
	}
	if ids := r.lms.LineItemIDs(); len(ids) != 1 || ids[0] != ags["lineitem"] {
		t.Errorf("LineItemIDs %v: the claim's lineitem is the seeded one", ids)
	}
	r.lms.MakeDeepLinking(c)
	s := c["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"].(map[string]any)
	if got, want := s["deep_link_return_url"], r.lms.Issuer+"/deep_links?course=42&sesskey=abc"; got != want {
		t.Errorf("deep_link_return_url %v, want %v", got, want)
	}
}

func TestTokenIssued(t *testing.T) {
	r := newRig(t)
	res := r.postToken(t, r.tokenForm(t, nil, lmssim.ScopeNRPS, lmssim.ScopeScore, lmssim.ScopeNRPS))
	if res.Status != 200 {
		t.Fatalf("HTTP %d: %s", res.Status, res.Body)
	}
	body := res.json(t)
	if body["token_type"] != "Bearer" || body["expires_in"] != float64(3600) || body["access_token"] == "" {
		t.Errorf("unexpected answer %v", body)
	}
	if got, want := body["scope"], lmssim.ScopeNRPS+" "+lmssim.ScopeScore; got != want {
		t.Errorf("scope %q, want %q", got, want)
	}
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	if n := r.lms.TokenRequests(); n != 1 {
		t.Errorf("TokenRequests %d", n)
	}
	if c := r.lms.LastAssertionClaims(); c["iss"] != "client-1" || c["aud"] != r.lms.Issuer+"/token" {
		t.Errorf("LastAssertionClaims %v", c)
	}
	// aud as an array holding the token URL is fine.
	res = r.postToken(t, r.tokenForm(t, func(c, h map[string]any) { c["aud"] = []string{"other", c["aud"].(string)} }, lmssim.ScopeNRPS))
	if res.Status != 200 {
		t.Errorf("aud array: HTTP %d: %s", res.Status, res.Body)
	}
	// no deployment_id claim is fine (SHOULD, not MUST).
	res = r.postToken(t, r.tokenForm(t, func(c, h map[string]any) { delete(c, deploymentClaim) }, lmssim.ScopeNRPS))
	if res.Status != 200 {
		t.Errorf("no deployment_id: HTTP %d: %s", res.Status, res.Body)
	}
	if n := r.lms.TokenRequests(); n != 3 {
		t.Errorf("TokenRequests %d", n)
	}
	issued := r.lms.IssuedTokens()
	if len(issued) != 3 || len(issued[0].Scopes) != 2 || issued[0].Scopes[1] != lmssim.ScopeScore ||
		time.Until(issued[0].Expires) < 59*time.Minute {
		t.Errorf("IssuedTokens %v", issued)
	}
}

func TestTokenAudienceAndLifetime(t *testing.T) {
	r := newRig(t, func(l *lmssim.LMS) {
		l.TokenAudience = "https://api.brightspace.com/auth/token"
		l.TokenLifetime = 90 * time.Second
	})
	res := r.postToken(t, r.tokenForm(t, nil, lmssim.ScopeNRPS))
	if res.Status != 400 || res.json(t)["error"] != "invalid_client" {
		t.Errorf("token URL as aud where another audience is configured: HTTP %d: %s", res.Status, res.Body)
	}
	res = r.postToken(t, r.tokenForm(t, func(c, h map[string]any) { c["aud"] = "https://api.brightspace.com/auth/token" }, lmssim.ScopeNRPS))
	if res.Status != 200 || res.json(t)["expires_in"] != float64(90) {
		t.Errorf("HTTP %d: %s", res.Status, res.Body)
	}
}

func TestTokenRefusals(t *testing.T) {
	r := newRig(t, func(l *lmssim.LMS) { l.GrantableScopes = []string{lmssim.ScopeNRPS, lmssim.ScopeScore} })
	type mutation func(c, h map[string]any)
	form := func(m mutation, scopes ...string) url.Values {
		if scopes == nil {
			scopes = []string{lmssim.ScopeNRPS}
		}
		return r.tokenForm(t, m, scopes...)
	}
	now := time.Now()
	hs256 := func() url.Values {
		f := form(nil)
		f.Set("client_assertion", signWith(t, []byte("0123456789abcdef0123456789abcdef"), jwa.HS256(), r.assertionClaims(), r.tool.header()))
		return f
	}
	otherKey := func() url.Values {
		f := form(nil)
		f.Set("client_assertion", signWith(t, testKey(t, 1), jwa.RS256(), r.assertionClaims(), r.tool.header()))
		return f
	}
	with := func(k, v string) url.Values { f := form(nil); f.Set(k, v); return f }
	without := func(k string) url.Values { f := form(nil); f.Del(k); return f }

	cases := []struct {
		name string
		form url.Values
		code string
		desc string // part of error_description
	}{
		{"grant_type", with("grant_type", "authorization_code"), "unsupported_grant_type", ""},
		{"no grant_type", without("grant_type"), "unsupported_grant_type", ""},
		{"client_assertion_type", with("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer"), "invalid_request", "client_assertion_type"},
		{"no client_assertion", without("client_assertion"), "invalid_request", "client_assertion"},
		{"not a JWS", with("client_assertion", "not.a.jws"), "invalid_client", "JWS"},
		{"HS256", hs256(), "invalid_client", "RS256"},
		{"no kid", form(func(c, h map[string]any) { h["kid"] = nil }), "invalid_client", "kid"},
		{"unknown kid", form(func(c, h map[string]any) { h["kid"] = "nope" }), "invalid_client", "not in the tool's JWKS"},
		{"bad signature", otherKey(), "invalid_client", "signature"},
		{"iss", form(func(c, h map[string]any) { c["iss"] = "client-2" }), "invalid_client", "iss"},
		{"sub", form(func(c, h map[string]any) { c["sub"] = "user-1" }), "invalid_client", "sub"},
		{"aud is the issuer", form(func(c, h map[string]any) { c["aud"] = r.lms.Issuer }), "invalid_client", "aud"},
		{"aud array without the token URL", form(func(c, h map[string]any) { c["aud"] = []string{r.lms.Issuer} }), "invalid_client", "aud"},
		{"no aud", form(func(c, h map[string]any) { delete(c, "aud") }), "invalid_client", "aud"},
		{"expired", form(func(c, h map[string]any) {
			c["iat"], c["exp"] = now.Add(-10*time.Minute).Unix(), now.Add(-6*time.Minute).Unix()
		}), "invalid_client", "expired"},
		{"no exp", form(func(c, h map[string]any) { delete(c, "exp") }), "invalid_client", "exp"},
		{"exp as a string", form(func(c, h map[string]any) { c["exp"] = "1485907200" }), "invalid_client", "exp"},
		{"no iat", form(func(c, h map[string]any) { delete(c, "iat") }), "invalid_client", "iat"},
		{"iat in the future", form(func(c, h map[string]any) { c["iat"] = now.Add(2 * time.Minute).Unix() }), "invalid_client", "future"},
		{"lifetime over 300 s", form(func(c, h map[string]any) { c["iat"], c["exp"] = now.Unix(), now.Add(301*time.Second).Unix() }), "invalid_client", "exp-iat"},
		{"no jti", form(func(c, h map[string]any) { delete(c, "jti") }), "invalid_client", "jti"},
		{"deployment_id", form(func(c, h map[string]any) { c[deploymentClaim] = "deployment-2" }), "invalid_client", "deployment_id"},
		{"no scope", form(nil, ""), "invalid_scope", "no scope"},
		{"scope not grantable", form(nil, lmssim.ScopeNRPS, lmssim.ScopeLineItem), "invalid_scope", lmssim.ScopeLineItem},
		{"unknown scope", form(nil, "openid"), "invalid_scope", "openid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.postToken(t, c.form)
			if res.Status != 400 {
				t.Fatalf("HTTP %d, want 400: %s", res.Status, res.Body)
			}
			body := res.json(t)
			if body["error"] != c.code || !strings.Contains(body["error_description"].(string), c.desc) {
				t.Errorf("got %v, want error %s with %q", body, c.code, c.desc)
			}
		})
	}

	t.Run("not a form", func(t *testing.T) {
		res := send(t, "POST", r.lms.Issuer+lmssim.TokenPath, map[string]string{"Content-Type": "application/json"},
			`{"grant_type":"client_credentials"}`)
		if res.Status != 400 || res.json(t)["error"] != "invalid_request" {
			t.Errorf("HTTP %d: %s", res.Status, res.Body)
		}
	})
	t.Run("query instead of body", func(t *testing.T) {
		res := send(t, "POST", r.lms.Issuer+lmssim.TokenPath+"?"+form(nil).Encode(),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "")
		if res.Status != 400 {
			t.Errorf("HTTP %d: %s", res.Status, res.Body)
		}
	})
	t.Run("GET", func(t *testing.T) {
		if res := send(t, "GET", r.lms.Issuer+lmssim.TokenPath+"?"+form(nil).Encode(), nil, ""); res.Status != 405 {
			t.Errorf("HTTP %d", res.Status)
		}
	})
	t.Run("replayed jti", func(t *testing.T) {
		f := form(nil)
		if res := r.postToken(t, f); res.Status != 200 {
			t.Fatalf("first use: HTTP %d: %s", res.Status, res.Body)
		}
		res := r.postToken(t, f)
		if res.Status != 400 || res.json(t)["error"] != "invalid_grant" {
			t.Errorf("replay: HTTP %d: %s", res.Status, res.Body)
		}
		// The same jti in a new assertion is a replay too.
		jti := r.lms.LastAssertionClaims()["jti"]
		res = r.postToken(t, form(func(c, h map[string]any) { c["jti"] = jti }))
		if res.Status != 400 || res.json(t)["error"] != "invalid_grant" {
			t.Errorf("reused jti: HTTP %d: %s", res.Status, res.Body)
		}
	})
	if n := r.lms.TokenRequests(); n != len(cases)+5 {
		t.Errorf("TokenRequests %d, want every request that reached the endpoint counted (%d)", n, len(cases)+5)
	}
}

func TestToolJWKSCachedAndRefetchedOnUnknownKid(t *testing.T) {
	r := newRig(t)
	r.token(t)
	r.token(t)
	if n := r.tool.fetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times for one kid, want 1 (cached)", n)
	}
	r.tool.rotate("tool-2", testKey(t, 2))
	r.token(t)
	if n := r.tool.fetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times after a new kid, want 2", n)
	}
}

func TestServiceAuthorization(t *testing.T) {
	r := newRig(t)
	nrps := r.lms.Issuer + lmssim.MembershipsPath
	accept := map[string]string{"Accept": lmssim.MediaMembershipContainer}
	lineItems := r.lms.Issuer + lmssim.LineItemsPath + "?type_id=4"
	acceptLI := map[string]string{"Accept": lmssim.MediaLineItemContainer}

	if res := call(t, "GET", nrps, "", accept, ""); res.Status != 401 || res.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: HTTP %d %v", res.Status, res.Header)
	}
	if res := call(t, "GET", nrps, "made-up", accept, ""); res.Status != 401 {
		t.Errorf("unknown token: HTTP %d", res.Status)
	}
	if res := send(t, "GET", nrps, map[string]string{"Accept": lmssim.MediaMembershipContainer, "Authorization": "Basic " + r.token(t)}, ""); res.Status != 401 {
		t.Errorf("Basic scheme: HTTP %d", res.Status)
	}

	nrpsOnly := r.token(t, lmssim.ScopeNRPS)
	if res := call(t, "GET", nrps, nrpsOnly, accept, ""); res.Status != 200 {
		t.Errorf("NRPS with its scope: HTTP %d: %s", res.Status, res.Body)
	}
	if res := call(t, "GET", lineItems, nrpsOnly, acceptLI, ""); res.Status != 403 || !strings.Contains(res.Header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Errorf("AGS with the NRPS scope: HTTP %d %v", res.Status, res.Header)
	}
	readOnly := r.token(t, lmssim.ScopeLineItemReadOnly)
	if res := call(t, "GET", lineItems, readOnly, acceptLI, ""); res.Status != 200 {
		t.Errorf("GET line items with lineitem.readonly: HTTP %d", res.Status)
	}
	body := `{"label":"x","scoreMaximum":1}`
	if res := call(t, "POST", lineItems, readOnly, map[string]string{"Content-Type": lmssim.MediaLineItem}, body); res.Status != 403 {
		t.Errorf("POST line item with lineitem.readonly: HTTP %d", res.Status)
	}
	if res := call(t, "GET", nrps, readOnly, accept, ""); res.Status != 403 {
		t.Errorf("NRPS with an AGS scope: HTTP %d", res.Status)
	}

	r.lms.RevokeTokens()
	if res := call(t, "GET", nrps, nrpsOnly, accept, ""); res.Status != 401 {
		t.Errorf("revoked token: HTTP %d", res.Status)
	}
	if res := call(t, "GET", nrps, r.token(t, lmssim.ScopeNRPS), accept, ""); res.Status != 200 {
		t.Errorf("a new token after revocation: HTTP %d", res.Status)
	}
}

func TestTokenExpiry(t *testing.T) {
	r := newRig(t, func(l *lmssim.LMS) { l.TokenLifetime = 50 * time.Millisecond })
	tok := r.token(t, lmssim.ScopeNRPS)
	time.Sleep(100 * time.Millisecond)
	res := call(t, "GET", r.lms.Issuer+lmssim.MembershipsPath, tok, map[string]string{"Accept": lmssim.MediaMembershipContainer}, "")
	if res.Status != 401 {
		t.Errorf("expired token: HTTP %d", res.Status)
	}
}
