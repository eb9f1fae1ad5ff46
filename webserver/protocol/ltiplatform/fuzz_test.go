package ltiplatform

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// toolTestCheckOutcome is what every verification must give: a result or an
// error, never both or neither, and an error with a code, a status it documents
// and a rule of its kind.
func toolTestCheckOutcome(t *testing.T, ok bool, e *apierr.Error, rulePrefix string) {
	t.Helper()
	if ok == (e != nil) {
		t.Fatalf("result %v and error %v", ok, e)
	}
	if e == nil {
		return
	}
	switch e.Status {
	case 400, 401, 503:
	default:
		t.Fatalf("status %d: %v", e.Status, e)
	}
	if e.Code == "" || e.Description == "" || !strings.HasPrefix(e.Rule, rulePrefix) {
		t.Fatalf("incomplete error %#v", e)
	}
}

// FuzzVerifyDeepLinkingResponse: no token panics, whether it arrives as is or as a
// payload signed with the tool's key (so that the claim checks run); what passes
// satisfies the request.
func FuzzVerifyDeepLinkingResponse(f *testing.F) {
	tool, _ := toolTestKeys(f)
	valid, err := json.Marshal(toolTestDLClaims())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(testjws.Sign(f, toolTestHeader(), valid, tool), valid)
	empty := toolTestDLClaims()
	delete(empty, lti.ClaimContentItems)
	emptyJSON, _ := json.Marshal(empty)
	f.Add(testjws.SignClaims(f, map[string]any{"alg": "none"}, empty, tool), emptyJSON)
	f.Add(testjws.SignClaims(f, map[string]any{"alg": "HS256", "kid": toolTestKID}, empty, tool), []byte(`{}`))
	for _, s := range []string{
		`{"https://purl.imsglobal.org/spec/lti-dl/claim/content_items":[{"type":"link","url":"https://a.example","custom":{"a":1}}]}`,
		`{"https://purl.imsglobal.org/spec/lti-dl/claim/content_items":[null,[],{"type":null},{"lineItem":{"scoreMaximum":1e400}}]}`,
		`{"aud":["a",1],"exp":1e400,"iat":-0.5,"nonce":"\ud800"}`, ` [ ] `, "{\"\xff\":\"\xfe\"}", `{"a":{"b":[[[{}]]]}}`,
	} {
		f.Add("a.b.c", []byte(s))
	}
	req := toolTestDLRequest()
	keyFunc := toolTestKeyFunc(f)
	f.Fuzz(func(t *testing.T, token string, payload []byte) {
		check := func(token string) {
			r, e := VerifyDeepLinkingResponse(context.Background(), token, req, keyFunc, toolTestNow, toolTestSkew)
			toolTestCheckOutcome(t, r != nil, e, "P-DLR-")
			if r == nil {
				return
			}
			if r.Nonce == "" || r.Data != req.Data || !r.Expires.After(toolTestNow.Add(-toolTestSkew)) {
				t.Fatalf("accepted %+v", r)
			}
			if ce := lti.ValidateContentItems(r.ContentItems, &lti.DeepLinkingSettings{
				AcceptTypes: req.AcceptTypes, AcceptMultiple: &req.AcceptMultiple, AcceptLineItem: req.AcceptLineItem,
			}); ce != nil {
				t.Fatalf("accepted an invalid item: %v", ce)
			}
		}
		check(token)
		if len(payload) <= 4096 {
			signed := testjws.Sign(t, toolTestHeader(), payload, tool)
			check(signed)
			r, e := VerifyDeepLinkingResponse(context.Background(), signed, req, keyFunc, toolTestNow, toolTestSkew)
			if e == nil && !bytes.Equal(r.Raw, payload) {
				t.Fatalf("Raw %q, payload %q", r.Raw, payload)
			}
		}
	})
}

// FuzzPeekAssertionClient: no assertion panics; Peek and VerifyClientAssertion
// agree on what is malformed, and on the client when both succeed.
func FuzzPeekAssertionClient(f *testing.F) {
	tool, _ := toolTestKeys(f)
	f.Add(testjws.SignClaims(f, toolTestHeader(), toolTestAssertionClaims(), tool))
	f.Add(testjws.SignClaims(f, map[string]any{"alg": "none"}, toolTestAssertionClaims(), tool))
	c := toolTestAssertionClaims()
	c["aud"], c["sub"] = []any{toolTestIssuer, 7}, nil
	f.Add(testjws.SignClaims(f, toolTestHeader(), c, tool))
	for _, s := range []string{"", ".", "..", "a.b.c", "e30.e30.", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "e30.W10.", "\n.\n.\n"} {
		f.Add(s)
	}
	keyFunc := toolTestKeyFunc(f)
	f.Fuzz(func(t *testing.T, assertion string) {
		id, pe := PeekAssertionClient(assertion)
		toolTestCheckOutcome(t, id != "", pe, "P-TOK-0")
		client := id
		if client == "" {
			client = toolTestClientID
		}
		a, ve := VerifyClientAssertion(context.Background(), assertion, client, toolTestAudiences(), keyFunc, toolTestNow, toolTestSkew)
		toolTestCheckOutcome(t, a != nil, ve, "P-TOK-0")
		if (pe != nil && pe.Code == CodeInvalidToken) != (ve != nil && ve.Code == CodeInvalidToken) {
			t.Fatalf("Peek %v, Verify %v", pe, ve)
		}
		if a != nil && (pe != nil || a.ClientID != id || a.JTI == "") {
			t.Fatalf("verified %+v, peeked %q %v", a, id, pe)
		}
	})
}
