package dynreg

import (
	"slices"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// With assetProcessor.enabled, the registration offers the three message types and asks
// for the asset, report and EULA scopes the platform supports; without, nothing changes.
func TestBuildRegistrationAssetProcessor(t *testing.T) {
	types := func(reg map[string]any) []string {
		var out []string
		for _, m := range reg[KeyToolConfiguration].(map[string]any)["messages"].([]any) {
			out = append(out, m.(map[string]any)["type"].(string))
		}
		return out
	}
	off := BuildRegistration(testTool, nil, nil, "")
	if slices.Contains(types(off), MessageEula) || strings.Contains(off["scope"].(string), ltiwire.ScopeReport) {
		t.Fatalf("disabled, yet offered: %v %q", types(off), off["scope"])
	}

	ap := testTool
	ap.AssetProcessor = true
	reg := BuildRegistration(ap, nil, nil, "")
	if got, want := types(reg), []string{MessageResourceLink, MessageDeepLinking, MessageAssetProcessorSettings, MessageReportReview, MessageEula}; !slices.Equal(got, want) {
		t.Errorf("messages %v, want %v", got, want)
	}
	if got, want := reg["scope"], strings.Join(append(slices.Clone(Scopes), AssetProcessorScopes...), " "); got != want {
		t.Errorf("scope %q, want %q", got, want)
	}
	// A platform listing only some of the scopes gets only those.
	pc := &PlatformConfig{ScopesSupported: []string{ltiwire.ScopeMembershipReadOnly, ltiwire.ScopeAssetReadOnly, ltiwire.ScopeReport}}
	if got := BuildRegistration(ap, pc, nil, "")["scope"]; got != ltiwire.ScopeMembershipReadOnly+" "+ltiwire.ScopeAssetReadOnly+" "+ltiwire.ScopeReport {
		t.Errorf("intersection: %q", got)
	}
	// The pre-approval's choice keeps only the types it names.
	if got := types(BuildRegistration(ap, nil, []string{MessageEula}, "")); !slices.Equal(got, []string{MessageEula}) {
		t.Errorf("override: %v", got)
	}
	// Canvas: the ActivityAssetProcessor placement on the deep-linking message when advertised.
	canvas := &PlatformConfig{ProductFamilyCode: "canvas", MessagesSupported: []MessageSupport{
		{Type: MessageDeepLinking, Placements: []string{"editor_button", CanvasAssetProcessorPlacement}},
	}}
	dl := BuildRegistration(ap, canvas, nil, "")[KeyToolConfiguration].(map[string]any)["messages"].([]any)[1].(map[string]any)
	if p, _ := dl["placements"].([]string); !slices.Contains(p, CanvasAssetProcessorPlacement) {
		t.Errorf("Canvas deep-linking placements %v lack %s", dl["placements"], CanvasAssetProcessorPlacement)
	}
	dl = BuildRegistration(testTool, canvas, nil, "")[KeyToolConfiguration].(map[string]any)["messages"].([]any)[1].(map[string]any)
	if p, _ := dl["placements"].([]string); slices.Contains(p, CanvasAssetProcessorPlacement) {
		t.Errorf("disabled, yet the asset processor placement is asked for: %v", p)
	}
}

func TestCanvasDeveloperKeyAssetProcessor(t *testing.T) {
	ap := testTool
	ap.AssetProcessor = true
	key := roundTrip(t, CanvasDeveloperKey(ap))
	scopes := key["scopes"].([]any)
	for _, s := range AssetProcessorScopes {
		if !slices.Contains(scopes, any(s)) {
			t.Errorf("scope %s missing: %v", s, scopes)
		}
	}
	settings := key["extensions"].([]any)[0].(map[string]any)["settings"].(map[string]any)
	found := false
	for _, p := range settings["placements"].([]any) {
		p := p.(map[string]any)
		found = found || (p["placement"] == CanvasAssetProcessorPlacement && p["message_type"] == MessageDeepLinking)
	}
	if !found {
		t.Errorf("no %s placement: %v", CanvasAssetProcessorPlacement, settings["placements"])
	}
	if ms := settings["message_settings"].([]any); len(ms) != 1 || ms[0].(map[string]any)["type"] != MessageEula {
		t.Errorf("message_settings %v", ms)
	}
	if _, ok := roundTrip(t, CanvasDeveloperKey(testTool))["extensions"].([]any)[0].(map[string]any)["settings"].(map[string]any)["message_settings"]; ok {
		t.Error("disabled, yet message_settings")
	}
}
