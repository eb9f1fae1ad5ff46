package lti

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

func TestParseClaimsRejectsNonObjects(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `"iss"`, `42`, `{`, `{"iss":}`, `{"a":1}{"b":2}`, "\xff"} {
		c, err := ParseClaims([]byte(in))
		var e *apierr.Error
		if c != nil || !errors.As(err, &e) || e.Code != CodeInvalidToken || e.Status != 400 {
			t.Errorf("ParseClaims(%q) = %v, %v", in, c, err)
		}
	}
}

func TestParseClaimsRequiredTypes(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c map[string]any)
		code   string // "" = no error
		claim  string
	}{
		{"well-typed", func(map[string]any) {}, "", ""},
		{"optional claims of the wrong type", func(c map[string]any) {
			c["email"] = false
			c[ClaimContext] = "course"
			c[ClaimCustom] = []any{1}
			c[ClaimAGS] = "x"
			c[ClaimLIS] = 7
			c["azp"] = 5 // optional here; Validate rejects it (T-TOK-13)
		}, "", ""},
		{"absent required claims are for Validate", func(c map[string]any) {
			delete(c, "iss")
			delete(c, ClaimRoles)
			delete(c, "sub")
		}, "", ""},
		{"null counts as absent", func(c map[string]any) { c["sub"] = nil; c[ClaimRoles] = nil }, "", ""},
		{"iss a number", func(c map[string]any) { c["iss"] = 1 }, CodeIssuerMismatch, ""},
		{"aud an object", func(c map[string]any) { c["aud"] = map[string]any{} }, CodeAudienceMismatch, ""},
		{"aud array with a number", func(c map[string]any) { c["aud"] = []any{testClientID, 1} }, CodeAudienceMismatch, ""},
		{"exp a string", func(c map[string]any) { c["exp"] = "soon" }, CodeTokenExpired, ""},
		{"iat a bool", func(c map[string]any) { c["iat"] = true }, CodeInvalidIAT, ""},
		{"nonce a number", func(c map[string]any) { c["nonce"] = 9 }, CodeMissingNonce, ""},
		{"version a number", func(c map[string]any) { c[ClaimVersion] = 1.3 }, CodeInvalidLTIVersion, ""},
		{"message_type an array", func(c map[string]any) { c[ClaimMessageType] = []any{"x"} }, CodeInvalidMessageType, ""},
		{"deployment_id a number", func(c map[string]any) { c[ClaimDeploymentID] = 1 }, CodeMissingDeploymentID, ""},
		{"sub a number", func(c map[string]any) { c["sub"] = 2 }, CodeInvalidClaim, "sub"},
		{"roles a string", func(c map[string]any) { c[ClaimRoles] = "Learner" }, CodeInvalidClaim, "roles"},
		{"resource_link a string", func(c map[string]any) { c[ClaimResourceLink] = "x" }, CodeInvalidClaim, "resource_link"},
		{"resource_link.id a number", func(c map[string]any) { c[ClaimResourceLink] = map[string]any{"id": 5} },
			CodeInvalidClaim, "resource_link.id"},
		{"target_link_uri an object", func(c map[string]any) { c[ClaimTargetLinkURI] = map[string]any{} },
			CodeInvalidClaim, "target_link_uri"},
		{"context.id a number", func(c map[string]any) { c[ClaimContext] = map[string]any{"id": 5} }, CodeInvalidClaim, "context.id"},
		{"deep linking claims do not matter in a resource link launch", func(c map[string]any) {
			c[ClaimDeepLinkingSettings] = "x"
		}, "", ""},
		{"deep_linking_settings not an object in a deep linking request", func(c map[string]any) {
			c[ClaimMessageType] = MessageDeepLinking
			c[ClaimDeepLinkingSettings] = "x"
		}, CodeInvalidClaim, "deep_linking_settings"},
		{"accept_types a number in a deep linking request", func(c map[string]any) {
			c[ClaimMessageType] = MessageDeepLinking
			c[ClaimDeepLinkingSettings] = map[string]any{"accept_types": 1}
		}, CodeInvalidClaim, "accept_types"},
		{"roles a string in a deep linking request is tolerated", func(c map[string]any) {
			c[ClaimMessageType] = MessageDeepLinking
			c[ClaimRoles] = "Learner"
		}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claims := rlrClaims()
			tc.mutate(claims)
			b, _ := json.Marshal(claims)
			c, err := ParseClaims(b)
			if tc.code == "" {
				if err != nil || c == nil {
					t.Fatalf("ParseClaims: %v", err)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Rule == "" {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if !strings.Contains(e.Description, tc.claim) {
				t.Errorf("description %q does not name %q", e.Description, tc.claim)
			}
			if c == nil {
				t.Error("partly decoded claims not returned")
			}
		})
	}
}

func TestParseClaimsFields(t *testing.T) {
	payload := `{
	  "iss":"https:\/\/moodle.example\/moodle","aud":["a","b"],"azp":"a","sub":"2","nonce":"n",
	  "exp":1718612297,"iat":1.7186122375e9,
	  "given_name":"Ad\u00e9le","family_name":"User","name":"Ad\u00e9le User","middle_name":"M",
	  "email":"a@b.c","picture":"https://p","locale":"fr",
	  "https:\/\/purl.imsglobal.org\/spec\/lti\/claim\/message_type":"LtiDeepLinkingRequest",
	  "https://purl.imsglobal.org/spec/lti/claim/version":"1.3.0",
	  "https://purl.imsglobal.org/spec/lti/claim/deployment_id":"1",
	  "https://purl.imsglobal.org/spec/lti/claim/roles":["","Instructor",7,null],
	  "https://purl.imsglobal.org/spec/lti/claim/context":{"id":"2","label":"c1","title":"Course","type":"CourseSection","x":{}},
	  "https://purl.imsglobal.org/spec/lti/claim/resource_link":{"id":"r1","title":"T","description":null},
	  "https://purl.imsglobal.org/spec/lti/claim/tool_platform":{"guid":"g","name":"N","contact_email":"e","description":"d",
	     "url":"u","product_family_code":"moodle","version":"2021"},
	  "https://purl.imsglobal.org/spec/lti/claim/launch_presentation":{"document_target":"iframe","return_url":"r",
	     "locale":"en","width":800.7,"height":"400"},
	  "https://purl.imsglobal.org/spec/lti/claim/custom":{"a":"1","b":2,"c":null,"d":[1, 2],"e":{"k" : "v"},"f":false},
	  "https://purl.imsglobal.org/spec/lti/claim/lis":{"person_sourcedid":"p","course_offering_sourcedid":"o",
	     "course_section_sourcedid":"s"},
	  "https://purl.imsglobal.org/spec/lti/claim/role_scope_mentor":["u1","u2"],
	  "https://purl.imsglobal.org/spec/lti/claim/for_user":{"user_id":"u9","roles":["Learner"]},
	  "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice":{"context_memberships_url":"m",
	     "service_versions":["1.0","2.0"],"errors":{"errors":{}},"validation_context":null},
	  "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint":{"scope":"s1 s2","lineitems":"ls","lineitem":"l"},
	  "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings":{"deep_link_return_url":"ret",
	     "accept_types":"link, file","accept_presentation_document_targets":["iframe"],
	     "accept_media_types":["image/*","text/html"],"accept_multiple":"TRUE","accept_lineitem":false,
	     "auto_create":"no","title":"t","text":"x","data":""},
	  "unknown":{"deep":[[[{"a":"]"}]]]}
	}`
	c, err := ParseClaims([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	f, tr := false, true
	want := &Claims{
		Issuer: "https://moodle.example/moodle", Subject: "2", AuthorizedParty: "a", Nonce: "n",
		Audience: Audience{"a", "b"}, ExpiresAt: 1718612297, IssuedAt: 1718612237, HasExp: true, HasIat: true,
		Name: "Adéle User", GivenName: "Adéle", FamilyName: "User", MiddleName: "M", Email: "a@b.c",
		Picture: "https://p", Locale: "fr",
		MessageType: MessageDeepLinking, Version: "1.3.0", DeploymentID: "1",
		ResourceLink: &ResourceLink{ID: "r1", Title: "T"},
		Roles:        []string{"", "Instructor"}, RolesPresent: true,
		Context: &Context{ID: "2", Label: "c1", Title: "Course", Type: []string{"CourseSection"}},
		ToolPlatform: &ToolPlatform{GUID: "g", Name: "N", ContactEmail: "e", Description: "d", URL: "u",
			ProductFamilyCode: "moodle", Version: "2021"},
		LaunchPresentation: &LaunchPresentation{DocumentTarget: "iframe", ReturnURL: "r", Locale: "en", Width: 800, Height: 400},
		Custom:             map[string]string{"a": "1", "b": "2", "d": "[1,2]", "e": `{"k":"v"}`, "f": "false"},
		LIS:                &LIS{PersonSourcedID: "p", CourseOfferingSourcedID: "o", CourseSectionSourcedID: "s"},
		RoleScopeMentor:    []string{"u1", "u2"},
		ForUser:            &ForUser{UserID: "u9", Roles: []string{"Learner"}},
		NRPS:               &NRPSClaim{ContextMembershipsURL: "m", ServiceVersions: []string{"1.0", "2.0"}},
		AGS:                &AGSClaim{Scope: []string{"s1", "s2"}, LineItems: "ls", LineItem: "l"},
		DeepLinking: &DeepLinkingSettings{DeepLinkReturnURL: "ret", AcceptTypes: []string{"link", "file"},
			AcceptPresentationDocumentTargets: []string{"iframe"}, AcceptMediaTypes: []string{"image/*", "text/html"},
			AcceptMultiple: &tr, AcceptLineItem: &f, Title: "t", Text: "x", Data: "", DataPresent: true},
		Raw: json.RawMessage(payload),
	}
	want.mem = c.mem // the storage behind the pointers above, compared through them
	if !reflect.DeepEqual(c, want) {
		gb, _ := json.MarshalIndent(c, "", " ")
		wb, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("got\n%s\nwant\n%s", gb, wb)
	}
}

func TestParseClaimsDuplicateKeysLastWins(t *testing.T) {
	c, err := ParseClaims([]byte(`{"iss":"a","iss":"b","sub":1,"sub":"s","https://purl.imsglobal.org/spec/lti/claim/roles":"x",
		"https://purl.imsglobal.org/spec/lti/claim/roles":["Learner"],"email":"e","email":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer != "b" || c.Subject != "s" || !c.RolesPresent || c.Email != "" || c.bad != 0 {
		t.Fatalf("%+v", c)
	}
}

func TestParseClaimsCopiesRaw(t *testing.T) {
	in := []byte(`{"iss":"x"}`)
	c, err := ParseClaims(in)
	if err != nil {
		t.Fatal(err)
	}
	in[8] = 'y'
	if string(c.Raw) != `{"iss":"x"}` || c.Issuer != "x" {
		t.Fatalf("Raw %s Issuer %s", c.Raw, c.Issuer)
	}
}

func TestAudienceUnmarshalJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    Audience
		wantErr bool
	}{
		{`"a"`, Audience{"a"}, false},
		{`["a","b"]`, Audience{"a", "b"}, false},
		{`[]`, Audience{}, false},
		{`null`, nil, false},
		{` "a\/b" `, Audience{"a/b"}, false},
		{`1`, nil, true},
		{`["a",1]`, nil, true},
		{`{}`, nil, true},
	}
	for _, tc := range tests {
		var a Audience
		err := json.Unmarshal([]byte(tc.in), &a)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(a, tc.want)) {
			t.Errorf("%s: got %#v, %v", tc.in, a, err)
		}
	}
	var s struct{ Aud Audience }
	if err := json.Unmarshal([]byte(`{"Aud":"x"}`), &s); err != nil || !s.Aud.Contains("x") || s.Aud.Contains("y") {
		t.Errorf("in a struct: %v %v", s, err)
	}
}

func TestDecodeStringMatchesEncodingJSON(t *testing.T) {
	for _, lit := range []string{
		`""`, `"plain"`, `"https:\/\/purl.imsglobal.org"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u4e2d"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, "\"\xff\xfe\"",
		"\"caf\xc3\xa9\"", "\"\xed\xa0\x80\"", `"\u0000"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		if got := decodeString(lit); got != want {
			t.Errorf("decodeString(%q) = %q, want %q", lit, got, want)
		}
	}
}

func TestNumericDates(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1718612297": 1718612297, "1.5": 1, "-1.5": -2, "1e3": 1000, "9007199254740992": 1 << 53} {
		if got, ok := asNumericDate(in); !ok || got != want {
			t.Errorf("%s: %d %v", in, got, ok)
		}
	}
	for _, in := range []string{"9007199254740993", "1e300", "-1e300", `"1"`, "true"} {
		if _, ok := asNumericDate(in); ok {
			t.Errorf("%s accepted", in)
		}
	}
}

// TestClaimNullUndoesDecode: for every claim of the table, a value of any JSON type
// followed by null ("last one wins", null is absent) leaves Claims as if the claim had
// never been sent, its type-error bits included.
func TestClaimNullUndoesDecode(t *testing.T) {
	empty, err := ParseClaims([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	empty.Raw = nil
	values := []string{`"x"`, `""`, `0`, `1700000000`, `true`, `"true"`, `[]`, `["a",1]`, `[""]`,
		`{}`, `{"id":"r1","type":"Group","deep_link_return_url":"https://p.example/r","accept_types":["link"],` +
			`"accept_presentation_document_targets":["iframe"],"data":"d","k":"v","width":3}`, `{"id":7,"deep_link_return_url":1,"accept_types":2}`}
	for name := range claimFields {
		for _, v := range values {
			key, _ := json.Marshal(name)
			c, _ := ParseClaims([]byte(`{` + string(key) + `:` + v + `,` + string(key) + `:null}`))
			if c == nil {
				t.Fatalf("%s = %s, then null: not decoded", name, v)
			}
			c.Raw = nil
			if !reflect.DeepEqual(c, empty) {
				t.Errorf("%s = %s, then null: %+v, want %+v", name, v, c, empty)
			}
		}
	}
}
