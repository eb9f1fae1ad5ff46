package dynreg

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

var testTool = ToolConfig{
	PublicURL:          "https://ltiop.example.edu/",
	Name:               "Quiz Engine",
	Description:        "Quizzes for every course",
	LogoURL:            "https://ltiop.example.edu/logo.svg",
	DeepLinking:        true,
	CustomParameters:   map[string]string{"user": "$User.id"},
	CanvasPrivacyLevel: PrivacyNameOnly,
}

// roundTrip is v as a platform reads it: JSON-decoded.
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuildRegistrationT_DR_04Golden(t *testing.T) {
	pc := &PlatformConfig{ProductFamilyCode: "moodle", MessagesSupported: []MessageSupport{
		{Type: MessageResourceLink}, {Type: MessageDeepLinking, Placements: []string{"ContentArea"}},
	}}
	got := roundTrip(t, BuildRegistration(testTool, pc, nil, "moodle-example-edu-4k9x2b7q1m"))
	want := fromJSON(t, `{
		"application_type": "web",
		"grant_types": ["client_credentials", "implicit"],
		"response_types": ["id_token"],
		"redirect_uris": ["https://ltiop.example.edu/lti/launch"],
		"initiate_login_uri": "https://ltiop.example.edu/lti/login",
		"client_name": "Quiz Engine",
		"jwks_uri": "https://ltiop.example.edu/lti/keys/moodle-example-edu-4k9x2b7q1m",
		"logo_uri": "https://ltiop.example.edu/logo.svg",
		"token_endpoint_auth_method": "private_key_jwt",
		"scope": "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly https://purl.imsglobal.org/spec/lti-ags/scope/score https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly https://purl.imsglobal.org/spec/lti-gs/scope/contextgroup.readonly",
		"https://purl.imsglobal.org/spec/lti-tool-configuration": {
			"domain": "ltiop.example.edu",
			"target_link_uri": "https://ltiop.example.edu/lti/launch",
			"custom_parameters": {"user": "$User.id"},
			"description": "Quizzes for every course",
			"claims": ["iss", "sub", "name", "given_name", "family_name", "email", "picture", "locale"],
			"messages": [
				{"type": "LtiResourceLinkRequest", "target_link_uri": "https://ltiop.example.edu/lti/launch",
				 "label": "Quiz Engine", "icon_uri": "https://ltiop.example.edu/logo.svg"},
				{"type": "LtiDeepLinkingRequest", "target_link_uri": "https://ltiop.example.edu/lti/launch",
				 "label": "Quiz Engine", "icon_uri": "https://ltiop.example.edu/logo.svg", "placements": ["ContentArea"]}
			]
		}
	}`)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("registration:\n%s", g)
	}
}

func TestBuildRegistrationT_DR_04Minimal(t *testing.T) {
	got := roundTrip(t, BuildRegistration(ToolConfig{PublicURL: "http://localhost:8080"}, nil, nil, ""))
	tc := got[KeyToolConfiguration].(map[string]any)
	if got["client_name"] != "ltiop" || got["logo_uri"] != nil || tc["description"] != nil || tc[KeyCanvasPrivacyLevel] != nil {
		t.Errorf("defaults: %v", got)
	}
	if got["jwks_uri"] != "http://localhost:8080/lti/keys" {
		t.Errorf("without a key-set id, jwks_uri = %v, want the set of all keys", got["jwks_uri"])
	}
	if tc["domain"] != "localhost:8080" || got["redirect_uris"].([]any)[0] != "http://localhost:8080/lti/launch" {
		t.Errorf("domain %v, redirect_uris %v", tc["domain"], got["redirect_uris"])
	}
	if cp, ok := tc["custom_parameters"].(map[string]any); !ok || len(cp) != 0 {
		t.Errorf("custom_parameters = %v, want {}", tc["custom_parameters"])
	}
	msgs := tc["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["type"] != MessageResourceLink || msgs[0].(map[string]any)["icon_uri"] != nil {
		t.Errorf("messages without deep linking = %v", msgs)
	}
}

func TestBuildRegistrationT_DR_04CanvasPrivacyLevel(t *testing.T) {
	canvas := &PlatformConfig{ProductFamilyCode: "canvas"}
	for level, want := range map[string]string{
		"":               PrivacyPublic,
		PrivacyAnonymous: PrivacyAnonymous,
		PrivacyNameOnly:  PrivacyNameOnly,
		PrivacyEmailOnly: PrivacyEmailOnly,
		PrivacyPublic:    PrivacyPublic,
		"everything":     PrivacyAnonymous, // unknown: the least data
	} {
		tool := testTool
		tool.CanvasPrivacyLevel = level
		tc := BuildRegistration(tool, canvas, nil, "")[KeyToolConfiguration].(map[string]any)
		if tc[KeyCanvasPrivacyLevel] != want {
			t.Errorf("level %q: privacy_level = %v, want %s", level, tc[KeyCanvasPrivacyLevel], want)
		}
	}
	for _, pc := range []*PlatformConfig{nil, {ProductFamilyCode: "moodle"}, {ProductFamilyCode: "desire2learn"}, {}} {
		reg := BuildRegistration(testTool, pc, nil, "")
		tc := reg[KeyToolConfiguration].(map[string]any)
		if _, ok := tc[KeyCanvasPrivacyLevel]; ok {
			t.Errorf("%+v: Canvas privacy level sent to a non-Canvas platform", pc)
		}
		if _, ok := reg[KeyCanvasPrivacyLevel]; ok {
			t.Errorf("privacy level at the top level")
		}
	}
}

func TestBuildRegistrationT_DR_04Scopes(t *testing.T) {
	scope := func(pc *PlatformConfig) string { return BuildRegistration(testTool, pc, nil, "")["scope"].(string) }
	all := strings.Join(Scopes, " ")
	if got := scope(nil); got != all {
		t.Errorf("no configuration: %q", got)
	}
	if got := scope(&PlatformConfig{}); got != all {
		t.Errorf("no scopes_supported: %q", got)
	}
	got := scope(&PlatformConfig{ScopesSupported: []string{"openid", ltiwire.ScopeMembershipReadOnly, "https://canvas.instructure.com/lti/public_jwk/scope/update", ltiwire.ScopeScore}})
	if got != ltiwire.ScopeScore+" "+ltiwire.ScopeMembershipReadOnly {
		t.Errorf("intersection: %q, want score and NRPS in Scopes order", got)
	}
	if got := scope(&PlatformConfig{ScopesSupported: []string{"openid"}}); got != "" {
		t.Errorf("no common scope: %q", got)
	}
	// A platform offering the Course Groups Service (Blackboard, Sakai) is asked for it.
	if got := scope(&PlatformConfig{ScopesSupported: []string{ltiwire.ScopeGroupReadOnly, ltiwire.ScopeMembershipReadOnly}}); got != ltiwire.ScopeMembershipReadOnly+" "+ltiwire.ScopeGroupReadOnly {
		t.Errorf("groups: %q", got)
	}
}

func TestBuildRegistrationT_DR_04Messages(t *testing.T) {
	types := func(tool ToolConfig, override []string) []string {
		var out []string
		for _, m := range BuildRegistration(tool, nil, override, "")[KeyToolConfiguration].(map[string]any)["messages"].([]any) {
			out = append(out, m.(map[string]any)["type"].(string))
		}
		return out
	}
	noDL := testTool
	noDL.DeepLinking = false
	for _, tc := range []struct {
		name     string
		tool     ToolConfig
		override []string
		want     []string
	}{
		{"defaults with deep linking", testTool, nil, []string{MessageResourceLink, MessageDeepLinking}},
		{"defaults without deep linking", noDL, nil, []string{MessageResourceLink}},
		{"override: deep linking only", testTool, []string{MessageDeepLinking}, []string{MessageDeepLinking}},
		{"override: deep linking not configured", noDL, []string{MessageDeepLinking, MessageResourceLink}, []string{MessageResourceLink}},
		{"override: unknown types dropped", testTool, []string{"LtiSubmissionReviewRequest", MessageResourceLink, MessageResourceLink}, []string{MessageResourceLink}},
		{"override: none", testTool, []string{}, nil},
	} {
		if got := types(tc.tool, tc.override); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// SetPlacements replaces what BuildRegistration asked for, per message type, and nothing else.
func TestSetPlacements(t *testing.T) {
	pc := &PlatformConfig{MessagesSupported: []MessageSupport{{Type: MessageDeepLinking, Placements: []string{"ContentArea", "RichTextEditor"}}}}
	placements := func(reg map[string]any) map[string]any {
		out := map[string]any{}
		for _, m := range reg[KeyToolConfiguration].(map[string]any)["messages"].([]any) {
			msg := m.(map[string]any)
			out[msg["type"].(string)] = msg["placements"]
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		given map[string][]string
		want  map[string]any
	}{
		{"nothing given", nil, map[string]any{MessageResourceLink: nil, MessageDeepLinking: []string{"ContentArea", "RichTextEditor"}}},
		{"replaced", map[string][]string{MessageDeepLinking: {"RichTextEditor"}}, map[string]any{MessageResourceLink: nil, MessageDeepLinking: []string{"RichTextEditor"}}},
		{"added", map[string][]string{MessageResourceLink: {"course_navigation"}}, map[string]any{MessageResourceLink: []string{"course_navigation"}, MessageDeepLinking: []string{"ContentArea", "RichTextEditor"}}},
		{"removed", map[string][]string{MessageDeepLinking: {}}, map[string]any{MessageResourceLink: nil, MessageDeepLinking: nil}},
	} {
		reg := BuildRegistration(testTool, pc, nil, "")
		SetPlacements(reg, tc.given)
		if got := placements(reg); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBuildRegistrationT_DR_04CanvasFixturePlacements(t *testing.T) {
	p := newPlatform(t, true)
	p.set(func(p *platform) { p.config = canvasConfig(t) })
	pc, err := FetchConfiguration(context.Background(), p.srv.Client(), p.srv.URL+"/config", "t")
	if err != nil {
		t.Fatal(err)
	}
	reg := BuildRegistration(testTool, pc, nil, "")
	tc := reg[KeyToolConfiguration].(map[string]any)
	msgs := tc["messages"].([]any)
	if _, ok := msgs[0].(map[string]any)["placements"]; ok {
		t.Errorf("resource link message with placements: %v", msgs[0])
	}
	want := []string{
		"https://canvas.instructure.com/lti/link_selection",
		"https://canvas.instructure.com/lti/assignment_selection",
		"https://canvas.instructure.com/lti/editor_button",
	}
	if got := msgs[1].(map[string]any)["placements"]; !reflect.DeepEqual(got, want) {
		t.Errorf("deep linking placements = %v, want %v", got, want)
	}
	if tc[KeyCanvasPrivacyLevel] != PrivacyNameOnly {
		t.Errorf("privacy level = %v", tc[KeyCanvasPrivacyLevel])
	}
	if reg["scope"] != strings.Join(canvasScopes(testTool), " ") {
		t.Errorf("scope = %v: Canvas lists all of ltiop's scopes but the groups scope", reg["scope"])
	}
	// Canvas advertising bare placement names, and a platform advertising none.
	bare := &PlatformConfig{ProductFamilyCode: "canvas", MessagesSupported: []MessageSupport{
		{Type: MessageDeepLinking, Placements: []string{"editor_button", "ContentArea", "link_selection"}},
	}}
	if got := deepLinkingPlacements(bare); !slices.Equal(got, []string{"link_selection", "editor_button"}) {
		t.Errorf("bare Canvas placements = %v", got)
	}
	d2l := &PlatformConfig{ProductFamilyCode: "desire2learn", MessagesSupported: []MessageSupport{{Type: MessageDeepLinking}}}
	dl := BuildRegistration(testTool, d2l, nil, "")[KeyToolConfiguration].(map[string]any)["messages"].([]any)[1].(map[string]any)
	if _, ok := dl["placements"]; ok {
		t.Errorf("placements sent to a platform that advertises none: %v", dl)
	}
}

func TestToolConfigValidate(t *testing.T) {
	if err := testTool.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	for name, tc := range map[string]ToolConfig{
		"empty public URL":       {},
		"relative public URL":    {PublicURL: "/ltiop"},
		"public URL with query":  {PublicURL: "https://ltiop.example.edu/?a=1"},
		"ftp public URL":         {PublicURL: "ftp://ltiop.example.edu"},
		"relative logo":          {PublicURL: "https://ltiop.example.edu", LogoURL: "/logo.svg"},
		"unknown privacy level":  {PublicURL: "https://ltiop.example.edu", CanvasPrivacyLevel: "private"},
		"user info in publicURL": {PublicURL: "https://a:b@ltiop.example.edu"},
	} {
		if err := tc.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCanvasDeveloperKey(t *testing.T) {
	got := roundTrip(t, CanvasDeveloperKey(testTool))
	want := fromJSON(t, `{
		"title": "Quiz Engine",
		"description": "Quizzes for every course",
		"oidc_initiation_url": "https://ltiop.example.edu/lti/login",
		"target_link_uri": "https://ltiop.example.edu/lti/launch",
		"public_jwk_url": "https://ltiop.example.edu/lti/keys",
		"scopes": [
			"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
			"https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
			"https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
			"https://purl.imsglobal.org/spec/lti-ags/scope/score",
			"https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
		],
		"extensions": [{
			"platform": "canvas.instructure.com",
			"domain": "ltiop.example.edu",
			"privacy_level": "name_only",
			"settings": {
				"text": "Quiz Engine",
				"icon_url": "https://ltiop.example.edu/logo.svg",
				"placements": [
					{"placement": "link_selection", "message_type": "LtiResourceLinkRequest",
					 "target_link_uri": "https://ltiop.example.edu/lti/launch", "text": "Quiz Engine", "icon_url": "https://ltiop.example.edu/logo.svg"},
					{"placement": "assignment_selection", "message_type": "LtiResourceLinkRequest",
					 "target_link_uri": "https://ltiop.example.edu/lti/launch", "text": "Quiz Engine", "icon_url": "https://ltiop.example.edu/logo.svg"},
					{"placement": "editor_button", "message_type": "LtiDeepLinkingRequest",
					 "target_link_uri": "https://ltiop.example.edu/lti/launch", "text": "Quiz Engine", "icon_url": "https://ltiop.example.edu/logo.svg"}
				]
			}
		}],
		"custom_fields": {"user": "$User.id"}
	}`)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("developer key:\n%s", g)
	}

	minimal := roundTrip(t, CanvasDeveloperKey(ToolConfig{PublicURL: "https://ltiop.example.edu"}))
	ext := minimal["extensions"].([]any)[0].(map[string]any)
	placements := ext["settings"].(map[string]any)["placements"].([]any)
	if minimal["title"] != "ltiop" || minimal["description"] != "ltiop" || ext["privacy_level"] != PrivacyPublic || len(placements) != 2 {
		t.Errorf("defaults: %v", minimal)
	}
	for _, p := range placements {
		if p.(map[string]any)["message_type"] != MessageResourceLink {
			t.Errorf("placement %v without deep linking", p)
		}
	}
}

// TestDynamicRegistrationAgainstLMSSimulator runs the whole exchange against the LMS
// simulator in its three deployment modes (T-DR-02..05).
func TestDynamicRegistrationAgainstLMSSimulator(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       lmssim.DeploymentMode
		deployment string
		canvas     bool
	}{
		{"T-DR-05 Canvas-style top-level deployment_id", lmssim.DeploymentTopLevel, "deployment-9", true},
		{"T-DR-05 Moodle-style deployment_id in the tool configuration", lmssim.DeploymentInToolConfig, "deployment-9", false},
		{"T-DR-05 Brightspace-style absent deployment_id", lmssim.DeploymentAbsent, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(nil)
			defer srv.Close()
			lms, err := lmssim.New(srv.URL, "client-9", "deployment-9")
			if err != nil {
				t.Fatal(err)
			}
			srv.Config.Handler = lms.Handler()
			lms.EnableDynamicRegistration(tc.mode)
			start, _ := url.Parse(lms.RegistrationStart("https://ltiop.example.edu/lti/register"))
			q := start.Query()

			pc, err := FetchConfiguration(context.Background(), srv.Client(), q.Get("openid_configuration"), q.Get("registration_token"))
			if err != nil {
				t.Fatal(err)
			}
			if pc.Issuer != lms.Issuer || pc.IsCanvas() != tc.canvas || pc.TokenAudience() != lms.Issuer+lmssim.TokenPath {
				t.Errorf("configuration %+v", pc)
			}
			reg := BuildRegistration(testTool, pc, nil, "")
			got, err := Register(context.Background(), srv.Client(), pc, q.Get("registration_token"), reg)
			if err != nil {
				t.Fatal(err)
			}
			if got.ClientID != "client-9" || got.DeploymentID != tc.deployment {
				t.Errorf("registered %+v, want client-9 / %q", got, tc.deployment)
			}
			regs := lms.Registrations()
			if len(regs) != 1 || !reflect.DeepEqual(regs[0], roundTrip(t, reg)) {
				t.Errorf("the simulator recorded %v", regs)
			}
			// The token is single use.
			_, err = Register(context.Background(), srv.Client(), pc, q.Get("registration_token"), reg)
			e := wantCode(t, err, CodeRegistrationRefused, 401)
			if !strings.Contains(e.Message, "token_already_used") {
				t.Errorf("second registration: %v", e)
			}
			// Without the token, the configuration is refused (T-DR-03).
			_, err = FetchConfiguration(context.Background(), srv.Client(), q.Get("openid_configuration"), "")
			_ = wantCode(t, err, CodeConfigurationUnavailable, 401)
		})
	}
}
