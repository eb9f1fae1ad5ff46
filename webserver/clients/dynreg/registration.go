package dynreg

import (
	"slices"
	"strings"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// Claims ltiop asks platforms to put in launches.
var Claims = []string{"iss", "sub", "name", "given_name", "family_name", "email", "picture", "locale"}

// Deep-linking placements ltiop asks for when the platform advertises them: Canvas's
// (advertised either bare or as https://canvas.instructure.com/lti/<name>) and the
// generic ones of the LTI placement vocabulary.
var (
	canvasDeepLinkingPlacements  = []string{"link_selection", "assignment_selection", "editor_button"}
	genericDeepLinkingPlacements = []string{"ContentArea", "RichTextEditor"}
)

const canvasPlacementPrefix = "https://canvas.instructure.com/lti/"

// BuildRegistration returns the tool registration ltiop POSTs to the platform (T-DR-04):
// application_type "web", grant_types [client_credentials implicit], response_types
// [id_token], redirect_uris [launch URL], initiate_login_uri, client_name, jwks_uri,
// logo_uri (when LogoURL is set), token_endpoint_auth_method private_key_jwt, scope (the
// Scopes the platform lists in scopes_supported, space-separated; all Scopes when it lists
// none), and the lti-tool-configuration: domain, target_link_uri, custom_parameters,
// description (when set), claims, messages and, for Canvas only, its privacy level.
//
// messages overrides the message types offered (the pre-approval API's choice): only
// LtiResourceLinkRequest and LtiDeepLinkingRequest are kept, the latter only when
// tc.DeepLinking; an empty, non-nil slice offers none. nil offers LtiResourceLinkRequest,
// plus LtiDeepLinkingRequest when tc.DeepLinking. A deep-linking message asks for the
// platform's content-selection placements it advertises (Canvas: link_selection,
// assignment_selection, editor_button; others: ContentArea, RichTextEditor).
//
// pc may be nil (no scope filtering, not Canvas). tc should have passed Validate; an
// unknown Canvas privacy level is sent as anonymous.
//
// keySetID names the key set sent as jwks_uri, paths.KeySet(keySetID): the registration's
// own, whose name the caller picks before the platform answers. Empty sends /lti/keys.
func BuildRegistration(tc ToolConfig, pc *PlatformConfig, messages []string, keySetID string) map[string]any {
	launch := tc.launch()
	offered := []string{MessageResourceLink}
	if tc.DeepLinking {
		offered = append(offered, MessageDeepLinking)
	}
	offered = append(offered, tc.assetProcessorMessages()...)
	if messages != nil {
		offered = slices.DeleteFunc(slices.Clone(offered), func(t string) bool { return !slices.Contains(messages, t) })
	}
	msgs := make([]any, 0, len(offered))
	for _, t := range offered {
		m := map[string]any{"type": t, "target_link_uri": launch, "label": tc.name()}
		if tc.LogoURL != "" {
			m["icon_uri"] = tc.LogoURL
		}
		if t == MessageDeepLinking {
			if p := append(deepLinkingPlacements(pc), tc.assetProcessorPlacements(pc)...); len(p) > 0 {
				m["placements"] = p
			}
		}
		msgs = append(msgs, m)
	}

	toolConf := map[string]any{
		"domain":            tc.domain(),
		"target_link_uri":   launch,
		"custom_parameters": tc.customParameters(),
		"claims":            slices.Clone(Claims),
		"messages":          msgs,
	}
	if tc.Description != "" {
		toolConf["description"] = tc.Description
	}
	if pc.IsCanvas() {
		toolConf[KeyCanvasPrivacyLevel] = tc.privacyLevel()
	}

	reg := map[string]any{
		"application_type":           "web",
		"grant_types":                []string{"client_credentials", "implicit"},
		"response_types":             []string{"id_token"},
		"redirect_uris":              []string{launch},
		"initiate_login_uri":         tc.login(),
		"client_name":                tc.name(),
		"jwks_uri":                   tc.keySet(keySetID),
		"token_endpoint_auth_method": "private_key_jwt",
		"scope":                      strings.Join(append(requestedScopes(pc, tc.scopes()), tc.assetProcessorScopes(pc)...), " "),
		KeyToolConfiguration:         toolConf,
	}
	if tc.LogoURL != "" {
		reg["logo_uri"] = tc.LogoURL
	}
	return reg
}

// requestedScopes is scopes (the tool's), less those a platform that lists its scopes does not list.
func requestedScopes(pc *PlatformConfig, scopes []string) []string {
	if pc == nil || len(pc.ScopesSupported) == 0 {
		return slices.Clone(scopes)
	}
	var out []string
	for _, s := range scopes {
		if slices.Contains(pc.ScopesSupported, s) {
			out = append(out, s)
		}
	}
	return out
}

// deepLinkingPlacements are the content-selection placements the platform advertises for
// LtiDeepLinkingRequest, spelled as it advertises them.
func deepLinkingPlacements(pc *PlatformConfig) []string {
	if pc == nil {
		return nil
	}
	var advertised []string
	for _, m := range pc.MessagesSupported {
		if m.Type == MessageDeepLinking {
			advertised = append(advertised, m.Placements...)
		}
	}
	want := genericDeepLinkingPlacements
	if pc.IsCanvas() {
		want = canvasDeepLinkingPlacements
	}
	var out []string
	for _, w := range want {
		for _, a := range advertised {
			if (a == w || (pc.IsCanvas() && a == canvasPlacementPrefix+w)) && !slices.Contains(out, a) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// CanvasDeveloperKey returns Canvas's LTI developer-key JSON configuration for manual setup
// (GET /register/canvas): title, description, oidc_initiation_url, target_link_uri,
// public_jwk_url, scopes (Scopes but the groups scope, which Canvas does not offer),
// custom_fields, and one canvas.instructure.com
// extension with the domain, the privacy level and the placements link_selection and
// assignment_selection (LtiResourceLinkRequest), plus editor_button (LtiDeepLinkingRequest)
// when tc.DeepLinking. Canvas takes the redirect URIs (the launch URL) in a separate field
// of the developer key form; this JSON does not carry them.
func CanvasDeveloperKey(tc ToolConfig) map[string]any {
	launch := tc.launch()
	placement := func(name, messageType string) map[string]any {
		p := map[string]any{
			"placement": name, "message_type": messageType, "target_link_uri": launch, "text": tc.name(),
		}
		if tc.LogoURL != "" {
			p["icon_url"] = tc.LogoURL
		}
		return p
	}
	placements := []any{
		placement("link_selection", MessageResourceLink),
		placement("assignment_selection", MessageResourceLink),
	}
	if tc.DeepLinking {
		placements = append(placements, placement("editor_button", MessageDeepLinking))
	}
	settings := map[string]any{"text": tc.name(), "placements": placements}
	tc.addCanvasAssetProcessor(settings, placement)
	if tc.LogoURL != "" {
		settings["icon_url"] = tc.LogoURL
	}
	description := tc.Description
	if description == "" {
		description = tc.name() // Canvas requires one
	}
	return map[string]any{
		"title":               tc.name(),
		"description":         description,
		"oidc_initiation_url": tc.login(),
		"target_link_uri":     launch,
		"public_jwk_url":      tc.keys(),
		"scopes":              append(canvasScopes(tc), tc.assetProcessorScopes(nil)...),
		"extensions": []any{map[string]any{
			"platform":      "canvas.instructure.com",
			"domain":        tc.domain(),
			"privacy_level": tc.privacyLevel(),
			"settings":      settings,
		}},
		"custom_fields": tc.customParameters(),
	}
}

// SetPlacements replaces the placements of reg's messages (as BuildRegistration made them)
// whose type is in placements: the pre-approval API's choice. An empty list asks for none.
func SetPlacements(reg map[string]any, placements map[string][]string) {
	conf, _ := reg[KeyToolConfiguration].(map[string]any)
	msgs, _ := conf["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		t, _ := msg["type"].(string)
		p, ok := placements[t]
		switch {
		case !ok:
		case len(p) == 0:
			delete(msg, "placements")
		default:
			msg["placements"] = slices.Clone(p)
		}
	}
}

// canvasScopes are the Scopes a Canvas developer key may list: Canvas has no Course Groups
// Service, and a key listing a scope Canvas does not know is refused.
func canvasScopes(tc ToolConfig) []string {
	return slices.DeleteFunc(slices.Clone(tc.scopes()), func(s string) bool { return s == ltiwire.ScopeGroupReadOnly })
}
