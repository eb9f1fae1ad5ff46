package lti

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const (
	testReviewTarget = "https://tool.example.com/lti/review"
	testReviewedUser = "0ae836b9-7fc9-4060-006f-27b2066ac545"
)

// srClaims is a valid LtiSubmissionReviewRequest at testNow: an instructor reviews the
// submission of testReviewedUser for the line item of the AGS claim.
func srClaims() map[string]any {
	c := rlrClaims()
	c[ClaimMessageType] = MessageSubmissionReview
	c[ClaimTargetLinkURI] = testReviewTarget
	c[ClaimRoles] = []any{"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"}
	c[ClaimForUser] = map[string]any{
		"user_id": testReviewedUser, "person_sourcedid": "example.edu:71ee7e42-f6d2-414a-80db-b69ac2defd4",
		"given_name": "Marie", "family_name": "Curie", "name": "Marie Curie", "email": "marie@example.edu",
		"roles": []any{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner", "urn:lti:role:ims/lis/Learner", "Unknown#Role"},
	}
	return c
}

func srPolicy(p *Policy) { p.ExpectedTargetLinkURI = testReviewTarget }

func TestValidateSubmissionReviewAccepts(t *testing.T) {
	cases := []validateCase{
		{name: "T-SR-01 complete review"},
		{name: "T-SR-05 without resource_link", claims: func(c map[string]any) { delete(c, ClaimResourceLink) }},
		{name: "T-SR-05 without roles", claims: func(c map[string]any) { delete(c, ClaimRoles) }},
		{name: "T-SR-04 for_user with user_id only", claims: func(c map[string]any) {
			c[ClaimForUser] = map[string]any{"user_id": testReviewedUser}
		}},
		{name: "T-SR-03 scope as a string, no lineitems container", claims: func(c map[string]any) {
			c[ClaimAGS] = map[string]any{"scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
				"lineitem": "https://platform.example.edu/api/lti/courses/3/line_items/1"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.base, tc.policy = srClaims, srPolicy
			c, e := tc.run(t)
			if e != nil {
				t.Fatalf("rejected: %v", e)
			}
			if c.MessageType != MessageSubmissionReview || c.ForUser == nil || c.ForUser.UserID != testReviewedUser ||
				c.AGS == nil || c.AGS.LineItem == "" {
				t.Fatalf("claims not decoded: %+v", c)
			}
		})
	}
}

func TestValidateSubmissionReviewRejects(t *testing.T) {
	tests := []struct {
		validateCase
		code, descHas string
	}{
		{validateCase{name: "T-SR-02 no target_link_uri", claims: func(c map[string]any) { delete(c, ClaimTargetLinkURI) }},
			CodeMissingClaim, "target_link_uri"},
		{validateCase{name: "T-SR-02 target_link_uri a number", claims: func(c map[string]any) { c[ClaimTargetLinkURI] = 7 }},
			CodeInvalidClaim, "target_link_uri"},
		{validateCase{name: "T-SR-02 target_link_uri not the login's (T-TOK-22)",
			claims: func(c map[string]any) { c[ClaimTargetLinkURI] = "https://tool.example.com/elsewhere" }},
			CodeTargetLinkURIMismatch, "target_link_uri"},
		{validateCase{name: "T-SR-03 no AGS claim", claims: func(c map[string]any) { delete(c, ClaimAGS) }},
			CodeMissingClaim, "lti-ags/claim/endpoint"},
		{validateCase{name: "T-SR-03 AGS claim a string", claims: func(c map[string]any) { c[ClaimAGS] = "x" }},
			CodeInvalidClaim, "lti-ags/claim/endpoint"},
		{validateCase{name: "T-SR-03 no lineitem", claims: func(c map[string]any) {
			delete(c[ClaimAGS].(map[string]any), "lineitem")
		}}, CodeMissingClaim, "endpoint.lineitem"},
		{validateCase{name: "T-SR-03 lineitem an array", claims: func(c map[string]any) {
			c[ClaimAGS].(map[string]any)["lineitem"] = []any{"https://platform.example.edu/li/1"}
		}}, CodeInvalidClaim, "endpoint.lineitem"},
		{validateCase{name: "T-SR-04 no for_user", claims: func(c map[string]any) { delete(c, ClaimForUser) }},
			CodeMissingClaim, "for_user"},
		{validateCase{name: "T-SR-04 for_user null", claims: func(c map[string]any) { c[ClaimForUser] = nil }},
			CodeMissingClaim, "for_user"},
		{validateCase{name: "T-SR-04 for_user a string", claims: func(c map[string]any) { c[ClaimForUser] = testReviewedUser }},
			CodeInvalidClaim, "for_user"},
		{validateCase{name: "T-SR-04 for_user without user_id", claims: func(c map[string]any) {
			c[ClaimForUser] = map[string]any{"name": "Marie Curie"}
		}}, CodeMissingClaim, "for_user.user_id"},
		{validateCase{name: "T-SR-04 user_id a number", claims: func(c map[string]any) {
			c[ClaimForUser] = map[string]any{"user_id": 42}
		}}, CodeInvalidClaim, "for_user.user_id"},
		{validateCase{name: "T-SR-04 user_id too long", claims: func(c map[string]any) {
			c[ClaimForUser] = map[string]any{"user_id": strings.Repeat("u", MaxIdentifierLength+1)}
		}}, CodeIdentifierTooLong, "for_user.user_id"},
		{validateCase{name: "T-SR-05 resource_link a string", claims: func(c map[string]any) { c[ClaimResourceLink] = "rl" }},
			CodeInvalidClaim, "resource_link"},
		{validateCase{name: "T-SR-05 roles an object", claims: func(c map[string]any) { c[ClaimRoles] = map[string]any{} }},
			CodeInvalidClaim, "roles"},
		{validateCase{name: "T-SR-01 no sub", claims: func(c map[string]any) { delete(c, "sub") }},
			CodeMissingClaim, "sub"},
		{validateCase{name: "T-TOK-19 no deployment_id", claims: func(c map[string]any) { delete(c, ClaimDeploymentID) }},
			CodeMissingDeploymentID, "deployment_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.base, tc.policy = srClaims, srPolicy
			_, e := tc.run(t)
			if e == nil {
				t.Fatal("accepted")
			}
			if e.Status != 400 || e.Code != tc.code || !strings.Contains(e.Description, tc.descHas) {
				t.Fatalf("got %d %s %q, want 400 %s naming %q", e.Status, e.Code, e.Description, tc.code, tc.descHas)
			}
			// ParseClaims reports the same JSON-type failures as Validate.
			if tc.code == CodeInvalidClaim && tc.descHas != "target_link_uri" {
				claims := srClaims()
				tc.claims(claims)
				payload, _ := json.Marshal(claims)
				if _, err := ParseClaims(payload); err == nil || !strings.Contains(err.Error(), tc.descHas) {
					t.Fatalf("ParseClaims: %v, want the %s type error", err, tc.descHas)
				}
			}
		})
	}
}

// The claims a submission review requires stay optional, in any shape, elsewhere
// (T-QUIRK-04): a resource link launch with a broken for_user or AGS claim passes.
func TestValidateResourceLinkToleratesSubmissionReviewClaims(t *testing.T) {
	for name, mutate := range map[string]func(c map[string]any){
		"for_user a string":   func(c map[string]any) { c[ClaimForUser] = "x" },
		"user_id a number":    func(c map[string]any) { c[ClaimForUser] = map[string]any{"user_id": 1} },
		"AGS an array":        func(c map[string]any) { c[ClaimAGS] = []any{} },
		"lineitem an integer": func(c map[string]any) { c[ClaimAGS].(map[string]any)["lineitem"] = 3 },
	} {
		t.Run(name, func(t *testing.T) {
			if _, e := (validateCase{claims: mutate}).run(t); e != nil {
				t.Fatalf("rejected: %v", e)
			}
		})
	}
}

func TestSimplifiedIDTokenSubmissionReview(t *testing.T) {
	c, e := validateCase{base: srClaims, policy: srPolicy}.run(t)
	if e != nil {
		t.Fatal(e)
	}
	tok := SimplifiedIDToken(c, PlatformInfo{ID: "p1", URL: testIssuer, ClientID: testClientID, Name: "Platform"})
	l := tok.Launch
	if l == nil || l.Type != MessageSubmissionReview || l.Target != testReviewTarget {
		t.Fatalf("launch = %+v", l)
	}
	f := l.ForUser
	if f == nil {
		t.Fatal("T-SR-07: no launch.forUser")
	}
	if f.ID != testReviewedUser || f.Name != "Marie Curie" || f.GivenName != "Marie" || f.FamilyName != "Curie" ||
		f.Email != "marie@example.edu" || f.PersonSourcedID == "" {
		t.Fatalf("forUser = %+v", f)
	}
	// The same normalisation as user.roles: the deprecated form folds into the full URI, unknowns drop.
	if want := []string{RoleLearner}; !slices.Equal(f.Roles, want) {
		t.Fatalf("forUser.roles = %q, want %q", f.Roles, want)
	}
	if !IsInstructor(tok.User.Roles) {
		t.Fatalf("user.roles = %q: the reviewer is the instructor", tok.User.Roles)
	}
	b, _ := json.Marshal(tok)
	if !strings.Contains(string(b), `"forUser":{"id":"`+testReviewedUser+`"`) {
		t.Fatalf("JSON lacks launch.forUser: %s", b)
	}
	// A resource link launch has no forUser member at all.
	c, _ = validateCase{}.run(t)
	b, _ = json.Marshal(SimplifiedIDToken(c, PlatformInfo{}))
	if strings.Contains(string(b), "forUser") {
		t.Fatalf("resource link launch shows forUser: %s", b)
	}
}
