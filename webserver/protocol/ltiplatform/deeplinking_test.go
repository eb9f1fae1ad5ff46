package ltiplatform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// toolTestDLRequest is the LtiDeepLinkingRequest the platform sent (accept_multiple,
// every standard type, data).
func toolTestDLRequest() DeepLinkingRequest {
	return DeepLinkingRequest{
		Issuer: toolTestIssuer, ClientID: toolTestClientID, DeploymentID: toolTestDeployment,
		Data: toolTestData, HasData: true,
		AcceptTypes:    []string{"link", "file", "html", "ltiResourceLink", "image"},
		AcceptMultiple: true,
	}
}

// toolTestCanvasItems are content items as a tool returns them to Canvas: an
// ltiResourceLink with custom parameters, a line item, an iframe and dates, plus
// link, html, file and image items.
func toolTestCanvasItems() []any {
	return []any{
		map[string]any{
			"type":  "ltiResourceLink",
			"title": "Quiz 42: Supply and demand",
			"text":  "Ten questions on elasticity",
			"url":   "https://quizzes.example.com/lti/launch?quiz=42",
			"icon":  map[string]any{"url": "https://quizzes.example.com/icon.png", "width": 64, "height": 64},
			"custom": map[string]any{
				"quiz_id": "42", "attempts": "3", "due": "$Canvas.assignment.dueAt.iso8601", "empty": "",
			},
			"lineItem": map[string]any{
				"scoreMaximum": 10, "label": "Quiz 42", "resourceId": "quiz-42", "tag": "quiz",
			},
			"iframe":     map[string]any{"width": 800, "height": 600},
			"window":     map[string]any{"targetName": "quizzes", "windowFeatures": "height=600,width=800"},
			"available":  map[string]any{"startDateTime": "2025-06-01T00:00:00Z", "endDateTime": "2025-12-31T23:59:59Z"},
			"submission": map[string]any{"endDateTime": "2025-12-24T23:59:59Z"},
			"https://quizzes.example.com/lti/quiz_settings": map[string]any{"shuffle": true},
		},
		map[string]any{
			"type": "link", "url": "https://www.youtube.com/watch?v=corV3-WsIro", "title": "Elasticity explained",
			"embed":  map[string]any{"html": "<iframe src=\"https://www.youtube.com/embed/corV3-WsIro\"></iframe>"},
			"window": map[string]any{"targetName": "youtube"},
		},
		map[string]any{"type": "html", "html": "<p>Read <em>chapter 4</em> first.</p>", "title": "Note"},
		map[string]any{
			"type": "file", "url": "https://quizzes.example.com/files/handout.pdf?sig=abc",
			"title": "Handout", "mediaType": "application/pdf", "expiresAt": "2025-06-16T15:06:40Z",
		},
		map[string]any{
			"type": "image", "url": "https://quizzes.example.com/graph.png", "width": 640, "height": 480,
			"thumbnail": map[string]any{"url": "https://quizzes.example.com/graph-small.png", "width": 64, "height": 48},
		},
	}
}

// toolTestDLClaims is a valid LtiDeepLinkingResponse at toolTestNow for toolTestDLRequest.
func toolTestDLClaims() map[string]any {
	return map[string]any{
		"iss":   toolTestClientID,
		"aud":   toolTestIssuer,
		"iat":   toolTestNow.Unix() - 5,
		"exp":   toolTestNow.Unix() + 600,
		"nonce": "b8f2c0de-62f4-4d0a-9d1f-d2d9e2f6c1aa",

		lti.ClaimDeploymentID: toolTestDeployment,
		lti.ClaimMessageType:  lti.MessageDeepLinkingResponse,
		lti.ClaimVersion:      "1.3.0",
		lti.ClaimContentItems: toolTestCanvasItems(),
		lti.ClaimDLData:       toolTestData,
		lti.ClaimDLMsg:        "5 items added",
		lti.ClaimDLLog:        "quiz 42 and 4 resources",
		"https://canvas.instructure.com/lti/module_name": "Week 4",
	}
}

func TestVerifyDeepLinkingResponse(t *testing.T) {
	tool, _ := toolTestKeys(t)
	claims := toolTestDLClaims()
	token := testjws.SignClaims(t, toolTestHeader(), claims, tool)
	r, e := VerifyDeepLinkingResponse(context.Background(), token, toolTestDLRequest(), toolTestKeyFunc(t), toolTestNow, toolTestSkew)
	if e != nil {
		t.Fatal(e)
	}
	payload, _ := json.Marshal(claims)
	switch {
	case !bytes.Equal(r.Raw, payload):
		t.Errorf("Raw = %s", r.Raw)
	case r.Nonce != "b8f2c0de-62f4-4d0a-9d1f-d2d9e2f6c1aa":
		t.Errorf("Nonce = %q", r.Nonce)
	case !r.Expires.Equal(toolTestNow.Add(600 * time.Second)):
		t.Errorf("Expires = %v", r.Expires)
	case r.Data != toolTestData:
		t.Errorf("Data = %q", r.Data)
	case r.Msg != "5 items added" || r.Log != "quiz 42 and 4 resources" || r.ErrorMsg != "" || r.ErrorLog != "":
		t.Errorf("msg %q log %q errormsg %q errorlog %q", r.Msg, r.Log, r.ErrorMsg, r.ErrorLog)
	case len(r.ContentItems) != 5:
		t.Fatalf("%d content items", len(r.ContentItems))
	}
	rl := r.ContentItems[0]
	if rl.Type != lti.ContentItemLTIResourceLink || rl.URL != "https://quizzes.example.com/lti/launch?quiz=42" ||
		rl.Custom["quiz_id"] != "42" || rl.Custom["empty"] != "" || len(rl.Custom) != 4 ||
		rl.LineItem == nil || rl.LineItem.ScoreMaximum != 10 || rl.LineItem.ResourceID != "quiz-42" ||
		rl.Iframe == nil || rl.Iframe.Width != 800 || rl.Available == nil || rl.Submission == nil ||
		string(rl.Extensions["https://quizzes.example.com/lti/quiz_settings"]) != `{"shuffle":true}` {
		t.Errorf("ltiResourceLink decoded as %+v", rl)
	}
	if it := r.ContentItems[1]; it.Type != "link" || it.Embed == nil || !strings.Contains(it.Embed.HTML, "<iframe") {
		t.Errorf("link decoded as %+v", it)
	}
	if it := r.ContentItems[3]; it.MediaType != "application/pdf" || it.ExpiresAt != "2025-06-16T15:06:40Z" {
		t.Errorf("file decoded as %+v", it)
	}
	if it := r.ContentItems[4]; it.Width != 640 || it.Thumbnail == nil || it.Thumbnail.Height != 48 {
		t.Errorf("image decoded as %+v", it)
	}
}

// TestVerifyDeepLinkingResponseAccepted: responses shaped like other tools' and
// platforms' that must pass.
func TestVerifyDeepLinkingResponseAccepted(t *testing.T) {
	tool, _ := toolTestKeys(t)
	moodleReq := DeepLinkingRequest{
		Issuer: toolTestIssuer, ClientID: toolTestClientID, DeploymentID: "1",
		AcceptTypes: []string{"ltiResourceLink"}, AcceptMultiple: true,
	}
	moodleClaims := func() map[string]any {
		c := toolTestDLClaims()
		c["aud"] = []any{toolTestIssuer} // pylti1.3 sends [iss]
		c[lti.ClaimDeploymentID] = "1"
		delete(c, lti.ClaimDLData)
		delete(c, lti.ClaimDLMsg)
		delete(c, lti.ClaimDLLog)
		c[lti.ClaimContentItems] = []any{
			map[string]any{
				"type": "ltiResourceLink", "title": "Chapter 1 quiz", "text": "<b>Ten</b> questions",
				"url":       "https://quizzes.example.com/lti/launch",
				"icon":      map[string]any{"url": "https://quizzes.example.com/icon.png", "width": 100, "height": 100},
				"thumbnail": map[string]any{"url": "https://quizzes.example.com/thumb.png", "width": 90, "height": 90},
				"lineItem":  map[string]any{"scoreMaximum": 100, "label": "Chapter 1 quiz", "tag": "originality"},
				"custom":    map[string]any{"chapter": "1"},
			},
			map[string]any{
				"type": "ltiResourceLink", "title": "Chapter 2 quiz", "url": "https://quizzes.example.com/lti/launch",
				"custom": map[string]any{"chapter": "2"},
			},
		}
		return c
	}
	noKid := toolTestHeader()
	delete(noKid, "kid")
	cases := []struct {
		name   string
		hdr    map[string]any
		claims func() map[string]any
		req    func() DeepLinkingRequest
		key    lti.KeyFunc
		check  func(*testing.T, *DeepLinkingResponse)
	}{
		{name: "Moodle-style two ltiResourceLinks, aud array, no data", claims: moodleClaims,
			req: func() DeepLinkingRequest { return moodleReq },
			check: func(t *testing.T, r *DeepLinkingResponse) {
				if len(r.ContentItems) != 2 || r.ContentItems[0].LineItem.ScoreMaximum != 100 || r.Data != "" {
					t.Errorf("%+v", r)
				}
			}},
		{name: "accept_types in another case (LtiResourceLink)", claims: moodleClaims,
			req: func() DeepLinkingRequest {
				r := moodleReq
				r.AcceptTypes = []string{"LtiResourceLink"}
				return r
			}},
		{name: "no kid, static key", hdr: noKid, key: toolTestStaticKeyFunc(t)},
		{name: "typ absent, aud array with azp", hdr: map[string]any{"alg": "RS256", "kid": toolTestKID},
			claims: func() map[string]any {
				c := toolTestDLClaims()
				c["aud"], c["azp"] = []any{toolTestIssuer}, toolTestIssuer
				return c
			}},
		{name: "nothing selected: content_items []", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimContentItems] = []any{}
			return c
		}, check: func(t *testing.T, r *DeepLinkingResponse) {
			if r.ContentItems != nil {
				t.Errorf("items %v", r.ContentItems)
			}
		}},
		{name: "nothing selected: no content_items, errormsg", claims: func() map[string]any {
			c := toolTestDLClaims()
			delete(c, lti.ClaimContentItems)
			delete(c, lti.ClaimDLMsg)
			c[lti.ClaimDLErrorMsg], c[lti.ClaimDLErrorLog] = "The quiz could not be created", "db timeout"
			return c
		}, check: func(t *testing.T, r *DeepLinkingResponse) {
			if r.ContentItems != nil || r.ErrorMsg != "The quiz could not be created" || r.ErrorLog != "db timeout" {
				t.Errorf("%+v", r)
			}
		}},
		{name: "content_items null", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimContentItems] = nil
			return c
		}},
		{name: "single item without accept_multiple", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimContentItems] = toolTestCanvasItems()[:1]
			return c
		}, req: func() DeepLinkingRequest {
			r := toolTestDLRequest()
			r.AcceptMultiple = false
			return r
		}},
		{name: "exp passed but within skew", claims: func() map[string]any {
			c := toolTestDLClaims()
			c["exp"] = toolTestNow.Unix() - 20
			c["iat"] = toolTestNow.Unix() - 600
			return c
		}},
		{name: "iat ahead but within skew, nbf now", claims: func() map[string]any {
			c := toolTestDLClaims()
			c["iat"], c["nbf"] = toolTestNow.Unix()+20, toolTestNow.Unix()
			return c
		}},
		{name: "fractional exp and iat", claims: func() map[string]any {
			c := toolTestDLClaims()
			c["iat"], c["exp"] = float64(toolTestNow.Unix())-0.5, float64(toolTestNow.Unix())+299.75
			return c
		}},
		{name: "data with characters JSON escapes", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimDLData] = `<a&b> "q" é`
			return c
		}, req: func() DeepLinkingRequest {
			r := toolTestDLRequest()
			r.Data = `<a&b> "q" é`
			return r
		}},
		{name: "empty data sent, claim dropped (ltijs)", claims: func() map[string]any {
			c := toolTestDLClaims()
			delete(c, lti.ClaimDLData)
			return c
		}, req: func() DeepLinkingRequest {
			r := toolTestDLRequest()
			r.Data = ""
			return r
		}},
		{name: "no data sent, data empty string", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimDLData] = ""
			return c
		}, req: func() DeepLinkingRequest {
			r := toolTestDLRequest()
			r.Data, r.HasData = "", false
			return r
		}},
		{name: "no data sent, data null", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimDLData] = nil
			return c
		}, req: func() DeepLinkingRequest {
			r := toolTestDLRequest()
			r.Data, r.HasData = "", false
			return r
		}},
		{name: "msg of a wrong type ignored", claims: func() map[string]any {
			c := toolTestDLClaims()
			c[lti.ClaimDLMsg] = 5
			return c
		}, check: func(t *testing.T, r *DeepLinkingResponse) {
			if r.Msg != "" {
				t.Errorf("msg %q", r.Msg)
			}
		}},
		{name: "zero now means the wall clock", claims: func() map[string]any {
			c := toolTestDLClaims()
			c["iat"], c["exp"] = time.Now().Unix(), time.Now().Unix()+300
			return c
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr, claims, req, key := toolTestHeader(), toolTestDLClaims(), toolTestDLRequest(), toolTestKeyFunc(t)
			if tc.hdr != nil {
				hdr = tc.hdr
			}
			if tc.claims != nil {
				claims = tc.claims()
			}
			if tc.req != nil {
				req = tc.req()
			}
			if tc.key != nil {
				key = tc.key
			}
			now := toolTestNow
			if tc.name == "zero now means the wall clock" {
				now = time.Time{}
			}
			r, e := VerifyDeepLinkingResponse(context.Background(), testjws.SignClaims(t, hdr, claims, tool), req, key, now, toolTestSkew)
			if e != nil {
				t.Fatal(e)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestVerifyDeepLinkingResponseRefused: one case per rule, each with the exact
// code, rule and status, and nothing returned.
func TestVerifyDeepLinkingResponseRefused(t *testing.T) {
	tool, other := toolTestKeys(t)
	with := func(k string, v any) func(map[string]any) {
		return func(c map[string]any) { c[k] = v }
	}
	without := func(k string) func(map[string]any) {
		return func(c map[string]any) { delete(c, k) }
	}
	items := func(list ...any) func(map[string]any) { return with(lti.ClaimContentItems, list) }
	canvas := toolTestCanvasItems()
	noKid := toolTestHeader()
	delete(noKid, "kid")

	cases := []struct {
		name   string
		hdr    map[string]any
		mod    func(map[string]any)
		req    func(*DeepLinkingRequest)
		key    lti.KeyFunc
		signer bool // sign with the other key
		raw    func() string
		code   string
		rule   string
		status int
	}{
		// P-DLR-01: signature (none forbidden), key lookup.
		{name: "P-DLR-01 alg none", hdr: map[string]any{"alg": "none", "kid": toolTestKID},
			code: CodeInvalidAlgorithm, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 alg NONE", hdr: map[string]any{"alg": "NONE", "kid": toolTestKID},
			code: CodeInvalidAlgorithm, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 signed by a key the tool does not publish", signer: true,
			code: CodeInvalidSignature, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 payload changed after signing", raw: func() string {
			token := testjws.SignClaims(t, toolTestHeader(), toolTestDLClaims(), tool)
			parts := strings.Split(token, ".")
			c := toolTestDLClaims()
			c[lti.ClaimDeploymentID] = "another-deployment"
			b, _ := json.Marshal(c)
			return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
		}, code: CodeInvalidSignature, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 empty signature", raw: func() string {
			token := testjws.SignClaims(t, toolTestHeader(), toolTestDLClaims(), tool)
			return token[:strings.LastIndexByte(token, '.')+1]
		}, code: CodeInvalidSignature, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 unknown kid", hdr: map[string]any{"alg": "RS256", "kid": "imstester_66067"},
			code: CodeUnknownKID, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 no kid and no static key", hdr: noKid,
			code: CodeMissingKID, rule: "P-DLR-01", status: 401},
		{name: "P-DLR-01 key set unavailable", key: toolTestDownKeyFunc,
			code: CodeKeySetUnavailable, rule: "P-DLR-01", status: 503},
		{name: "P-DLR-10 duplicate deployment_id claims: the last one counts", raw: func() string {
			b, _ := json.Marshal(toolTestDLClaims())
			b = append([]byte(`{"`+lti.ClaimDeploymentID+`":"`+toolTestDeployment+`",`), b[1:]...)
			b = append(b[:len(b)-1], []byte(`,"`+lti.ClaimDeploymentID+`":"other"}`)...)
			return testjws.Sign(t, toolTestHeader(), b, tool)
		}, code: CodeDeploymentMismatch, rule: "P-DLR-10", status: 400},
		{name: "P-DLR-01 signed payload not JSON", raw: func() string {
			return testjws.Sign(t, toolTestHeader(), []byte(`{"iss":`), tool)
		}, code: CodeInvalidToken, rule: "P-DLR-01", status: 400},
		// P-DLR-02.
		{name: "P-DLR-02 iss is the platform", mod: with("iss", toolTestIssuer),
			code: CodeIssuerMismatch, rule: "P-DLR-02", status: 401},
		{name: "P-DLR-02 iss is another tool", mod: with("iss", "another-tool"),
			code: CodeIssuerMismatch, rule: "P-DLR-02", status: 401},
		{name: "P-DLR-02 iss differs in case", mod: with("iss", strings.ToUpper(toolTestClientID)),
			code: CodeIssuerMismatch, rule: "P-DLR-02", status: 401},
		{name: "P-DLR-02 no iss", mod: without("iss"),
			code: CodeIssuerMismatch, rule: "P-DLR-02", status: 401},
		{name: "P-DLR-02 iss a number", mod: with("iss", 7),
			code: CodeIssuerMismatch, rule: "P-DLR-02", status: 401},
		// P-DLR-03.
		{name: "P-DLR-03 audience is another platform", mod: with("aud", "https://canvas.instructure.com"),
			code: CodeAudienceMismatch, rule: "P-DLR-03", status: 401},
		{name: "P-DLR-03 audience with a trailing slash", mod: with("aud", toolTestIssuer+"/"),
			code: CodeAudienceMismatch, rule: "P-DLR-03", status: 401},
		{name: "P-DLR-03 audience adds an untrusted party",
			mod: func(c map[string]any) {
				c["aud"], c["azp"] = []any{toolTestIssuer, "https://evil.example"}, toolTestIssuer
			},
			code: CodeAudienceMismatch, rule: "P-DLR-03", status: 401},
		{name: "P-DLR-03 no aud", mod: without("aud"),
			code: CodeAudienceMismatch, rule: "P-DLR-03", status: 401},
		{name: "P-DLR-03 empty aud array", mod: with("aud", []any{}),
			code: CodeAudienceMismatch, rule: "P-DLR-03", status: 401},
		{name: "P-DLR-03 aud array with a number", mod: with("aud", []any{toolTestIssuer, 1}),
			code: CodeAudienceMismatch, rule: "P-DLR-03", status: 401},
		// P-DLR-04.
		{name: "P-DLR-04 several audiences without azp", mod: with("aud", []any{toolTestIssuer, toolTestIssuer}),
			code: CodeAzpMismatch, rule: "P-DLR-04", status: 401},
		{name: "P-DLR-04 azp is another party", mod: with("azp", toolTestClientID),
			code: CodeAzpMismatch, rule: "P-DLR-04", status: 401},
		{name: "P-DLR-04 azp a number", mod: with("azp", 1),
			code: CodeAzpMismatch, rule: "P-DLR-04", status: 401},
		// P-DLR-05: alg should be RS256 — ltiop requires it.
		{name: "P-DLR-05 alg HS256 keyed with the public key (algorithm confusion)",
			hdr: map[string]any{"alg": "HS256", "kid": toolTestKID}, code: CodeInvalidAlgorithm, rule: "P-DLR-05", status: 401},
		{name: "P-DLR-05 alg HS256 keyed with the public key PEM",
			hdr: map[string]any{"alg": "HS256-PEM", "kid": toolTestKID}, code: CodeInvalidAlgorithm, rule: "P-DLR-05", status: 401},
		{name: "P-DLR-05 alg RS512 with a valid signature",
			hdr: map[string]any{"alg": "RS512", "kid": toolTestKID}, code: CodeInvalidAlgorithm, rule: "P-DLR-05", status: 401},
		{name: "P-DLR-05 alg rs256 lower case",
			hdr: map[string]any{"alg": "rs256", "kid": toolTestKID}, code: CodeInvalidAlgorithm, rule: "P-DLR-05", status: 401},
		{name: "P-DLR-05 alg not a string",
			hdr: map[string]any{"alg": 256, "kid": toolTestKID}, code: CodeInvalidAlgorithm, rule: "P-DLR-05", status: 401},
		// P-DLR-06.
		{name: "P-DLR-06 expired", mod: with("exp", toolTestNow.Unix()-31),
			code: CodeTokenExpired, rule: "P-DLR-06", status: 401},
		{name: "P-DLR-06 cert timestamps exp=22222 iat=11111",
			mod:  func(c map[string]any) { c["exp"], c["iat"] = 22222, 11111 },
			code: CodeTokenExpired, rule: "P-DLR-06", status: 401},
		{name: "P-DLR-06 no exp", mod: without("exp"),
			code: CodeTokenExpired, rule: "P-DLR-06", status: 401},
		{name: "P-DLR-06 exp a string", mod: with("exp", "1750000600"),
			code: CodeTokenExpired, rule: "P-DLR-06", status: 401},
		{name: "P-DLR-06 exp beyond 2^53", mod: with("exp", 1e300),
			code: CodeTokenExpired, rule: "P-DLR-06", status: 401},
		{name: "P-DLR-06 nbf in the future", mod: with("nbf", toolTestNow.Unix()+60),
			code: CodeTokenNotYetValid, rule: "P-DLR-06", status: 401},
		{name: "P-DLR-06 nbf a string", mod: with("nbf", "now"),
			code: CodeTokenNotYetValid, rule: "P-DLR-06", status: 401},
		// P-DLR-07.
		{name: "P-DLR-07 iat in the future", mod: with("iat", toolTestNow.Unix()+31),
			code: CodeInvalidIAT, rule: "P-DLR-07", status: 401},
		{name: "P-DLR-07 no iat", mod: without("iat"),
			code: CodeInvalidIAT, rule: "P-DLR-07", status: 401},
		{name: "P-DLR-07 iat a string", mod: with("iat", "1750000000"),
			code: CodeInvalidIAT, rule: "P-DLR-07", status: 401},
		// P-DLR-08.
		{name: "P-DLR-08 no nonce (Blackboard sample)", mod: without("nonce"),
			code: CodeMissingNonce, rule: "P-DLR-08", status: 401},
		{name: "P-DLR-08 empty nonce", mod: with("nonce", ""),
			code: CodeMissingNonce, rule: "P-DLR-08", status: 401},
		{name: "P-DLR-08 nonce a number", mod: with("nonce", 12345),
			code: CodeMissingNonce, rule: "P-DLR-08", status: 401},
		{name: "P-DLR-08 nonce too long", mod: with("nonce", strings.Repeat("n", MaxReplayIDLength+1)),
			code: CodeInvalidNonce, rule: "P-DLR-08", status: 401},
		// P-DLR-10.
		{name: "P-DLR-10 deployment of another request", mod: with(lti.ClaimDeploymentID, "deployment-other"),
			code: CodeDeploymentMismatch, rule: "P-DLR-10", status: 400},
		{name: "P-DLR-10 no deployment_id", mod: without(lti.ClaimDeploymentID),
			code: CodeDeploymentMismatch, rule: "P-DLR-10", status: 400},
		{name: "P-DLR-10 deployment_id a number", mod: with(lti.ClaimDeploymentID, 3),
			code: CodeDeploymentMismatch, rule: "P-DLR-10", status: 400},
		// P-DLR-11.
		{name: "P-DLR-11 message_type LtiResourceLinkRequest", mod: with(lti.ClaimMessageType, lti.MessageResourceLink),
			code: CodeInvalidMessageType, rule: "P-DLR-11", status: 400},
		{name: "P-DLR-11 message_type of the request", mod: with(lti.ClaimMessageType, lti.MessageDeepLinking),
			code: CodeInvalidMessageType, rule: "P-DLR-11", status: 400},
		{name: "P-DLR-11 no message_type", mod: without(lti.ClaimMessageType),
			code: CodeInvalidMessageType, rule: "P-DLR-11", status: 400},
		{name: "P-DLR-11 version 11.3", mod: with(lti.ClaimVersion, "11.3"),
			code: CodeInvalidLTIVersion, rule: "P-DLR-11", status: 400},
		{name: "P-DLR-11 no version", mod: without(lti.ClaimVersion),
			code: CodeInvalidLTIVersion, rule: "P-DLR-11", status: 400},
		{name: "P-DLR-11 version a number", mod: with(lti.ClaimVersion, 1.3),
			code: CodeInvalidLTIVersion, rule: "P-DLR-11", status: 400},
		// P-DLR-12.
		{name: "P-DLR-12 data of another request", mod: with(lti.ClaimDLData, "csrf:other"),
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		{name: "P-DLR-12 data with a trailing space", mod: with(lti.ClaimDLData, toolTestData+" "),
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		{name: "P-DLR-12 data not returned", mod: without(lti.ClaimDLData),
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		{name: "P-DLR-12 data null", mod: with(lti.ClaimDLData, nil),
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		{name: "P-DLR-12 data an object", mod: with(lti.ClaimDLData, map[string]any{"csrf": "x"}),
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		{name: "P-DLR-12 data returned when none was sent", req: func(r *DeepLinkingRequest) { r.Data, r.HasData = "", false },
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		{name: "P-DLR-12 empty data sent, other data returned", req: func(r *DeepLinkingRequest) { r.Data = "" },
			code: CodeDataMismatch, rule: "P-DLR-12", status: 400},
		// P-DLR-13.
		{name: "P-DLR-13 type not in accept_types", req: func(r *DeepLinkingRequest) { r.AcceptTypes = []string{"ltiResourceLink"} },
			mod: items(canvas[0], canvas[2]), code: CodeContentItemRejected, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 two items without accept_multiple", req: func(r *DeepLinkingRequest) { r.AcceptMultiple = false },
			mod: items(canvas[0], canvas[1]), code: CodeContentItemRejected, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 lineItem with accept_lineitem false", req: func(r *DeepLinkingRequest) {
			f := false
			r.AcceptLineItem = &f
		}, code: CodeContentItemRejected, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 request accepted no type", req: func(r *DeepLinkingRequest) { r.AcceptTypes = nil },
			code: CodeContentItemRejected, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 content_items an object", mod: with(lti.ClaimContentItems, canvas[0]),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 item a string", mod: items("ltiResourceLink"),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 item null", mod: items(nil),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 link without url", mod: items(map[string]any{"type": "link", "title": "x"}),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 item without type", mod: items(map[string]any{"url": "https://x.example"}),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 custom value a number", mod: items(map[string]any{
			"type": "ltiResourceLink", "custom": map[string]any{"quiz_id": 42}}),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 scoreMaximum zero", mod: items(map[string]any{
			"type": "ltiResourceLink", "lineItem": map[string]any{"scoreMaximum": 0}}),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 url javascript:", mod: items(map[string]any{"type": "link", "url": "javascript:alert(1)"}),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		{name: "P-DLR-13 width a string", mod: items(map[string]any{
			"type": "image", "url": "https://x.example/a.png", "width": "640"}),
			code: CodeInvalidContentItem, rule: "P-DLR-13", status: 400},
		// Caller configuration.
		{name: "misconfigured: no deployment", req: func(r *DeepLinkingRequest) { r.DeploymentID = "" },
			code: CodePlatformMisconfigured, rule: "", status: 500},
		{name: "misconfigured: no client_id", req: func(r *DeepLinkingRequest) { r.ClientID = "" },
			code: CodePlatformMisconfigured, rule: "", status: 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr, claims, req, key := toolTestHeader(), toolTestDLClaims(), toolTestDLRequest(), toolTestKeyFunc(t)
			if tc.hdr != nil {
				hdr = tc.hdr
			}
			if tc.mod != nil {
				tc.mod(claims)
			}
			if tc.req != nil {
				tc.req(&req)
			}
			if tc.key != nil {
				key = tc.key
			}
			signer := tool
			if tc.signer {
				signer = other
			}
			var token string
			if tc.raw != nil {
				token = tc.raw()
			} else {
				token = testjws.SignClaims(t, hdr, claims, signer)
			}
			r, e := VerifyDeepLinkingResponse(context.Background(), token, req, key, toolTestNow, toolTestSkew)
			toolTestCheckError(t, e, tc.code, tc.rule, tc.status)
			if r != nil {
				t.Fatalf("a response was returned: %+v", r)
			}
			wantOAuth := ""
			switch tc.status {
			case 503:
				wantOAuth = OAuthTemporarilyUnavailable
			case 500:
				wantOAuth = OAuthServerError
			}
			if e.OAuth != wantOAuth {
				t.Errorf("OAuth %q, want %q", e.OAuth, wantOAuth)
			}
		})
	}
}

// TestVerifyDeepLinkingResponseItemPaths: descriptions name the member as
// content_items[i].field.
func TestVerifyDeepLinkingResponseItemPaths(t *testing.T) {
	tool, _ := toolTestKeys(t)
	canvas := toolTestCanvasItems()
	for _, tc := range []struct {
		items []any
		req   func(*DeepLinkingRequest)
		want  string
	}{
		{[]any{canvas[0], canvas[1], map[string]any{"type": "video", "url": "https://x.example"}}, nil,
			`content_items[2].type: "video" is not link, ltiResourceLink, file, html, image, ltiAssetProcessor or a fully-qualified URL`},
		{[]any{canvas[0], canvas[1], canvas[2]}, func(r *DeepLinkingRequest) { r.AcceptTypes = []string{"link", "ltiResourceLink"} },
			`content_items[2].type: "html" is not in the platform's accept_types`},
		{[]any{canvas[0], canvas[1]}, func(r *DeepLinkingRequest) { r.AcceptMultiple = false },
			`content_items[1]: `},
		{[]any{canvas[1], map[string]any{"type": "ltiResourceLink", "custom": map[string]any{"b": "ok", "a": true}}}, nil,
			`content_items[1].custom.a: custom values must be strings`},
		{[]any{map[string]any{"type": "ltiResourceLink", "lineItem": map[string]any{"scoreMaximum": "ten"}}}, nil,
			`content_items[0].lineItem.scoreMaximum: must be a number`},
		{[]any{map[string]any{"type": "image", "url": "https://x.example/a.png", "thumbnail": map[string]any{"width": 2}}}, nil,
			`content_items[0].thumbnail.url: required`},
		{[]any{7}, nil, `content_items[0]: a content item must be a JSON object`},
	} {
		claims := toolTestDLClaims()
		claims[lti.ClaimContentItems] = tc.items
		req := toolTestDLRequest()
		if tc.req != nil {
			tc.req(&req)
		}
		_, e := VerifyDeepLinkingResponse(context.Background(), testjws.SignClaims(t, toolTestHeader(), claims, tool), req,
			toolTestKeyFunc(t), toolTestNow, toolTestSkew)
		if e == nil || !strings.HasPrefix(e.Description, tc.want) {
			t.Errorf("got %v; want a description starting %q", e, tc.want)
		}
	}
}
