package lti

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ltiop/ltiop/test/utils/testjws"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

var (
	testKey  = testkeys.MustRSAKey(0) // the platform's signing key; its public half is behind testKID
	otherKey = testkeys.MustRSAKey(1) // a key the platform does not publish
)

const (
	testKID        = "2025-06-01T00:00:00Z"
	testIssuer     = "https://platform.example.edu"
	testClientID   = "10000000000042"
	testDeployment = "7:3f1c2a9be0d44e5c8a1b0f6e2d7c9a4b5e6f7a8b"
	testNonce      = "n-0S6_WzA2Mj"
	testTarget     = "https://tool.example.com/lti/launch"
	testReturnURL  = "https://platform.example.edu/deep_links?data=abc"
)

// testNow is the clock of every Validate call in the tests.
var testNow = time.Unix(1_750_000_000, 0)

// testKeys is the platform's key set: one key, testKID.
func testKeys(_ context.Context, kid string) (*rsa.PublicKey, error) {
	if kid == testKID {
		return &testKey.PublicKey, nil
	}
	return nil, fmt.Errorf("key set of %s: %w", testIssuer, ErrUnknownKey)
}

func testPolicy() Policy {
	return Policy{
		Issuer:                testIssuer,
		ClientID:              testClientID,
		ExpectedNonce:         testNonce,
		ExpectedTargetLinkURI: testTarget,
		Now:                   testNow,
	}
}

func testHeader() map[string]any {
	return map[string]any{"alg": "RS256", "kid": testKID, "typ": "JWT"}
}

// rlrClaims is a valid LtiResourceLinkRequest at testNow.
func rlrClaims() map[string]any {
	return map[string]any{
		"iss":         testIssuer,
		"sub":         "a6d5c443-1f51-4783-ba1a-7686ffe3b54a",
		"aud":         testClientID,
		"azp":         testClientID,
		"exp":         testNow.Unix() + 3600,
		"iat":         testNow.Unix(),
		"nonce":       testNonce,
		"name":        "Ms Jane Marie Doe",
		"given_name":  "Jane",
		"family_name": "Doe",
		"email":       "jane@platform.example.edu",
		"locale":      "en-US",

		ClaimMessageType:   MessageResourceLink,
		ClaimVersion:       "1.3.0",
		ClaimDeploymentID:  testDeployment,
		ClaimTargetLinkURI: testTarget,
		ClaimResourceLink: map[string]any{
			"id": "200d101f-2c14-434a-a0f3-57c2a42369fd", "title": "Introduction Assignment",
			"description": "Assignment to introduce who you are",
		},
		ClaimRoles: []any{
			"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student",
			"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
		},
		ClaimContext: map[string]any{
			"id": "c1d887f0-a1a3-4bca-ae25-c375edcc131a", "label": "ECON 1010", "title": "Economics as a Social Science",
			"type": []any{"http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"},
		},
		ClaimToolPlatform: map[string]any{
			"guid": "ex/48bbb541-ce55-456e-8b7d-ebc59a38d435", "contact_email": "support@platform.example.edu",
			"description": "An Example Tool Platform", "name": "Example Tool Platform",
			"url": "https://platform.example.edu", "product_family_code": "ExamplePlatformVendor-Product", "version": "1.0",
		},
		ClaimLaunchPresentation: map[string]any{
			"document_target": "iframe", "height": 320, "width": 240, "locale": "en-US",
			"return_url": "https://platform.example.edu/terms/201601/courses/7/sections/1/resources/2",
		},
		ClaimCustom: map[string]any{"xstart": "2017-04-21T01:00:00Z", "request_url": "https://tool.com/link/123"},
		ClaimNRPS: map[string]any{
			"context_memberships_url": "https://platform.example.edu/api/lti/courses/3/names_and_roles",
			"service_versions":        []any{"2.0"},
		},
		ClaimAGS: map[string]any{
			"scope": []any{
				"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
				"https://purl.imsglobal.org/spec/lti-ags/scope/score",
			},
			"lineitems": "https://platform.example.edu/api/lti/courses/3/line_items",
			"lineitem":  "https://platform.example.edu/api/lti/courses/3/line_items/1",
		},
	}
}

// dlClaims is a valid LtiDeepLinkingRequest at testNow, without target_link_uri
// like the certification suite's (§12.3).
func dlClaims() map[string]any {
	c := rlrClaims()
	delete(c, ClaimResourceLink)
	delete(c, ClaimTargetLinkURI)
	c[ClaimMessageType] = MessageDeepLinking
	c[ClaimDeepLinkingSettings] = map[string]any{
		"deep_link_return_url":                 testReturnURL,
		"accept_types":                         []any{"link", "file", "html", "ltiResourceLink", "image"},
		"accept_media_types":                   "image/*,text/html",
		"accept_presentation_document_targets": []any{"iframe", "window", "embed"},
		"accept_multiple":                      true,
		"auto_create":                          true,
		"title":                                "This is the default title",
		"text":                                 "This is the default text",
		"data":                                 "csrftoken:c7fbba78-7b75-46e3-9201-11e6d5f36f53",
	}
	return c
}

// canvasLikeClaims is a ~3 KB launch shaped like Canvas's, extra claims included.
func canvasLikeClaims() map[string]any {
	c := rlrClaims()
	c["picture"] = "https://platform.example.edu/images/thumbnails/3/fnQIzMRWPAny4JOWMUvz8FiHsvP5Tyk4CRBKmMhm"
	c[ClaimLIS] = map[string]any{"person_sourcedid": "835203884", "course_offering_sourcedid": "$CourseSection.sourcedId"}
	c[ClaimRoles] = []any{
		"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student",
		"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
		"http://purl.imsglobal.org/vocab/lis/v2/system/person#User",
	}
	c[ClaimAGS].(map[string]any)["scope"] = []any{
		"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
		"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
		"https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
		"https://purl.imsglobal.org/spec/lti-ags/scope/score",
		"https://canvas.instructure.com/lti-ags/progress/scope/show",
	}
	c[ClaimAGS].(map[string]any)["errors"] = map[string]any{"errors": map[string]any{}}
	c[ClaimNRPS].(map[string]any)["validation_context"] = nil
	c["https://purl.imsglobal.org/spec/lti/claim/platformnotificationservice"] = map[string]any{
		"service_versions":                  []any{"1.0"},
		"platform_notification_service_url": "https://platform.example.edu/api/lti/notice-handlers/7",
		"scope":                             []any{"https://purl.imsglobal.org/spec/lti/scope/noticehandlers"},
		"notice_types_supported":            []any{"LtiHelloWorldNotice", "LtiAssetProcessorSubmissionNotice", "LtiContextCopyNotice"},
	}
	c["https://purl.imsglobal.org/spec/lti/claim/lti11_legacy_user_id"] = "86157096483e6b3a50bfedc6bac902c0b20a824f"
	c["https://purl.imsglobal.org/spec/lti/claim/lti1p1"] = map[string]any{
		"resource_link_id": "6a8aaca162bfc4393804afd4cd53cd94413c48bb",
		"user_id":          "86157096483e6b3a50bfedc6bac902c0b20a824f",
	}
	c["https://purl.imsglobal.org/spec/lti/claim/eulaservice"] = map[string]any{
		"url":   "https://platform.example.edu/api/lti/asset_processor_eulas/7",
		"scope": []any{"https://purl.imsglobal.org/spec/lti/scope/eula/user", "https://purl.imsglobal.org/spec/lti/scope/eula/deployment"},
	}
	c["https://www.instructure.com/placement"] = nil
	return c
}

var jsonMarshal = json.Marshal

// sign makes a compact JWS of claims under hdr, signed with testKey (see testjws.Sign: a
// header that is not RS256 is assembled by hand, as a broken or hostile platform would).
func sign(tb testing.TB, hdr, claims map[string]any) string {
	tb.Helper()
	return testjws.SignClaims(tb, hdr, claims, testKey)
}
