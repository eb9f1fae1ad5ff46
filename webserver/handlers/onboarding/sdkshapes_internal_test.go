package onboarding

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ltiop/ltiop/webserver/clients/dynreg"
)

// The LTIAAS SDK's schema requires familyCode, version (strings), supportedScopes and
// supportedMessages (arrays) even when the platform said nothing of them, and allows only
// its own message types in supportedMessages.
func TestPendingViewHasTheSDKFieldsAlways(t *testing.T) {
	for _, tc := range []struct {
		name string
		pc   *dynreg.PlatformConfig
		want map[string]any
	}{
		{"a platform that says little", &dynreg.PlatformConfig{Issuer: "https://lms.example"}, map[string]any{
			"familyCode": "", "version": "", "supportedScopes": []any{}, "supportedMessages": []any{},
		}},
		{"types the SDK does not know are left out", &dynreg.PlatformConfig{Issuer: "https://lms.example", ProductFamilyCode: "canvas",
			Version: "cloud", ScopesSupported: []string{"openid"}, MessagesSupported: []dynreg.MessageSupport{
				{Type: "LtiResourceLinkRequest", Placements: []string{"course_navigation"}},
				{Type: "LtiEulaRequest"},
				{Type: "LtiDeepLinkingRequest", Placements: []string{"link_selection", "editor_button"}},
			}}, map[string]any{
			"familyCode": "canvas", "productFamilyCode": "canvas", "version": "cloud", "supportedScopes": []any{"openid"},
			"supportedMessages": []any{
				map[string]any{"type": "LtiResourceLinkRequest", "placements": []any{"course_navigation"}},
				map[string]any{"type": "LtiDeepLinkingRequest", "placements": []any{"link_selection", "editor_button"}},
			},
			"messagesSupported": []any{"LtiResourceLinkRequest", "LtiEulaRequest", "LtiDeepLinkingRequest"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(pendingView("id-1", tc.pc))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
		})
	}
}

func TestMessageChoiceTakesBothForms(t *testing.T) {
	for _, tc := range []struct {
		body    string
		want    []MessageChoice
		wantErr bool
	}{
		{`["LtiResourceLinkRequest"]`, []MessageChoice{{Type: "LtiResourceLinkRequest"}}, false},
		{`[{"type":"LtiResourceLinkRequest"}]`, []MessageChoice{{Type: "LtiResourceLinkRequest"}}, false},
		{`[{"type":"LtiDeepLinkingRequest","placements":["ContentArea"]}, "LtiResourceLinkRequest"]`,
			[]MessageChoice{{Type: "LtiDeepLinkingRequest", Placements: []string{"ContentArea"}, placementsGiven: true}, {Type: "LtiResourceLinkRequest"}}, false},
		{`[{"type":"LtiDeepLinkingRequest","placements":[]}]`,
			[]MessageChoice{{Type: "LtiDeepLinkingRequest", Placements: []string{}, placementsGiven: true}}, false},
		{`[{"type":"LtiResourceLinkRequest","label":"x"}]`, nil, true},
		{`[42]`, nil, true},
		{`[{"type":7}]`, nil, true},
		{`[{"placements":["ContentArea"]}]`, nil, true},
	} {
		var got []MessageChoice
		if err := json.Unmarshal([]byte(tc.body), &got); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if tc.wantErr {
			if len(got) != 1 || !got[0].malformed || got[0].check() == "" {
				t.Errorf("%s: %#v not refused", tc.body, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v", tc.body, got)
		}
	}
}
