package lti

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var testPlatform = PlatformInfo{ID: "canvas-prod", URL: testIssuer, ClientID: testClientID, Name: "Example LMS"}

func claimsOf(t *testing.T, m map[string]any) *Claims {
	t.Helper()
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

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestSimplifiedIDTokenResourceLink(t *testing.T) {
	got, err := json.Marshal(SimplifiedIDToken(claimsOf(t, rlrClaims()), testPlatform))
	if err != nil {
		t.Fatal(err)
	}
	want := compactJSON(t, `{
	  "ltiVersion": "1.3.0",
	  "user": {
	    "id": "a6d5c443-1f51-4783-ba1a-7686ffe3b54a",
	    "roles": ["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student",
	              "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
	    "email": "jane@platform.example.edu", "name": "Ms Jane Marie Doe", "givenName": "Jane", "familyName": "Doe"
	  },
	  "platform": {
	    "id": "canvas-prod", "url": "https://platform.example.edu", "clientId": "10000000000042",
	    "deploymentId": "7:3f1c2a9be0d44e5c8a1b0f6e2d7c9a4b5e6f7a8b", "name": "Example LMS",
	    "guid": "ex/48bbb541-ce55-456e-8b7d-ebc59a38d435", "productFamilyCode": "ExamplePlatformVendor-Product",
	    "version": "1.0", "description": "An Example Tool Platform", "contactEmail": "support@platform.example.edu"
	  },
	  "launch": {
	    "type": "LtiResourceLinkRequest",
	    "target": "https://tool.example.com/lti/launch",
	    "context": {"id": "c1d887f0-a1a3-4bca-ae25-c375edcc131a", "label": "ECON 1010",
	                "title": "Economics as a Social Science",
	                "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"]},
	    "resourceLink": {"id": "200d101f-2c14-434a-a0f3-57c2a42369fd", "title": "Introduction Assignment",
	                     "description": "Assignment to introduce who you are"},
	    "presentation": {"locale": "en-US", "document_target": "iframe",
	                     "returnUrl": "https://platform.example.edu/terms/201601/courses/7/sections/1/resources/2",
	                     "width": 240, "height": 320},
	    "custom": {"request_url": "https://tool.com/link/123", "xstart": "2017-04-21T01:00:00Z"}
	  },
	  "services": {
	    "deepLinking": {"available": false},
	    "namesAndRoles": {"available": true},
	    "assignmentAndGrades": {"available": true,
	      "scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem", "https://purl.imsglobal.org/spec/lti-ags/scope/score"],
	      "lineItemId": "https://platform.example.edu/api/lti/courses/3/line_items/1"},
	    "groups": {"available": false, "groupSets": false},
	    "outcomes": {"available": false}
	  }
	}`)
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSimplifiedIDTokenDeepLinking(t *testing.T) {
	claims := dlClaims()
	delete(claims, ClaimNRPS)
	claims[ClaimAGS] = map[string]any{"scope": []any{"https://purl.imsglobal.org/spec/lti-ags/scope/score"},
		"lineitems": "http://platform.example.edu/api/lti/courses/6/line_items"}
	claims[ClaimRoles] = []any{""}
	claims[ClaimCustom] = map[string]any{}
	claims[ClaimLaunchPresentation] = map[string]any{"document_target": "embed"}
	claims[ClaimToolPlatform] = map[string]any{"guid": strings.Repeat("g", 256), "name": "ignored"}
	delete(claims, ClaimContext)
	got, err := json.Marshal(SimplifiedIDToken(claimsOf(t, claims), testPlatform))
	if err != nil {
		t.Fatal(err)
	}
	want := compactJSON(t, `{
	  "ltiVersion": "1.3.0",
	  "user": {"id": "a6d5c443-1f51-4783-ba1a-7686ffe3b54a", "roles": [],
	           "email": "jane@platform.example.edu", "name": "Ms Jane Marie Doe", "givenName": "Jane", "familyName": "Doe"},
	  "platform": {"id": "canvas-prod", "url": "https://platform.example.edu", "clientId": "10000000000042",
	               "deploymentId": "7:3f1c2a9be0d44e5c8a1b0f6e2d7c9a4b5e6f7a8b", "name": "Example LMS"},
	  "launch": {"type": "LtiDeepLinkingRequest", "target": "", "custom": {}},
	  "services": {
	    "deepLinking": {"available": true,
	      "acceptTypes": ["link", "file", "html", "ltiResourceLink", "image"],
	      "acceptPresentationDocumentTargets": ["iframe", "window", "embed"],
	      "acceptMediaTypes": ["image/*", "text/html"],
	      "acceptMultiple": true,
	      "title": "This is the default title", "text": "This is the default text"},
	    "namesAndRoles": {"available": false},
	    "assignmentAndGrades": {"available": true, "scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"]},
	    "groups": {"available": false, "groupSets": false},
	    "outcomes": {"available": false}
	  }
	}`)
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSimplifiedIDTokenMinimal(t *testing.T) {
	c := &Claims{MessageType: MessageDeepLinking, DeepLinking: &DeepLinkingSettings{AcceptTypes: []string{}}}
	tok := SimplifiedIDToken(c, PlatformInfo{})
	b, err := json.Marshal(tok)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("null")) {
		t.Errorf("null in %s", b)
	}
	for _, want := range []string{`"roles":[]`, `"custom":{}`, `"acceptTypes":[]`, `"acceptPresentationDocumentTargets":[]`,
		`"acceptMultiple":false`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s missing from %s", want, b)
		}
	}
	if bytes.Contains(b, []byte("serviceKey")) || bytes.Contains(b, []byte("resourceLink")) {
		t.Errorf("unexpected field in %s", b)
	}
	// The token does not alias the claims.
	c.Custom = map[string]string{"a": "b"}
	tok = SimplifiedIDToken(c, PlatformInfo{})
	tok.Launch.Custom["a"] = "changed"
	if c.Custom["a"] != "b" {
		t.Error("custom map aliased")
	}
}
