package dynreg

import (
	"slices"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// Asset Processor and EULA in registrations (docs/asset-processor.md): with
// ToolConfig.AssetProcessor, ltiop offers the three message types and asks for the asset,
// report and EULA scopes. Canvas attaches an asset processor through deep linking in its
// ActivityAssetProcessor placement, and enables LtiEulaRequest through message_settings.

// Message types of Asset Processor and the EULA service (ltiwire names their scopes).
const (
	MessageAssetProcessorSettings = "LtiAssetProcessorSettingsRequest"
	MessageReportReview           = "LtiReportReviewRequest"
	MessageEula                   = "LtiEulaRequest"

	// CanvasAssetProcessorPlacement is Canvas's deep-linking placement for attaching an
	// asset processor to an assignment.
	CanvasAssetProcessorPlacement = "ActivityAssetProcessor"
)

// AssetProcessorScopes are the scopes asked for when Asset Processor is offered.
var AssetProcessorScopes = []string{ltiwire.ScopeAssetReadOnly, ltiwire.ScopeReport, ltiwire.ScopeEulaUser, ltiwire.ScopeEulaDeployment}

// assetProcessorMessages are the message types offered besides resource links and deep
// linking.
func (tc ToolConfig) assetProcessorMessages() []string {
	if !tc.AssetProcessor {
		return nil
	}
	return []string{MessageAssetProcessorSettings, MessageReportReview, MessageEula}
}

// assetProcessorScopes are the Asset Processor scopes to ask for: those the platform lists
// in scopes_supported, all of them when it lists none (pc nil included).
func (tc ToolConfig) assetProcessorScopes(pc *PlatformConfig) []string {
	if !tc.AssetProcessor {
		return nil
	}
	if pc == nil || len(pc.ScopesSupported) == 0 {
		return slices.Clone(AssetProcessorScopes)
	}
	var out []string
	for _, s := range AssetProcessorScopes {
		if slices.Contains(pc.ScopesSupported, s) {
			out = append(out, s)
		}
	}
	return out
}

// assetProcessorPlacements are the deep-linking placements that attach an asset processor:
// Canvas's, when it advertises it.
func (tc ToolConfig) assetProcessorPlacements(pc *PlatformConfig) []string {
	if !tc.AssetProcessor || !pc.IsCanvas() {
		return nil
	}
	for _, m := range pc.MessagesSupported {
		if m.Type == MessageDeepLinking && (slices.Contains(m.Placements, CanvasAssetProcessorPlacement) ||
			slices.Contains(m.Placements, canvasPlacementPrefix+CanvasAssetProcessorPlacement)) {
			return []string{CanvasAssetProcessorPlacement}
		}
	}
	return nil
}

// addCanvasAssetProcessor adds, to the settings of a Canvas developer key, the
// ActivityAssetProcessor placement (deep linking) and the LtiEulaRequest message setting.
func (tc ToolConfig) addCanvasAssetProcessor(settings map[string]any, placement func(name, messageType string) map[string]any) {
	if !tc.AssetProcessor {
		return
	}
	placements, _ := settings["placements"].([]any)
	settings["placements"] = append(placements, placement(CanvasAssetProcessorPlacement, MessageDeepLinking))
	settings["message_settings"] = []any{map[string]any{"type": MessageEula, "enabled": true, "target_link_url": tc.launch()}}
}
