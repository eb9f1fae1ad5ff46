package admin

// The tools API's view: what it shows of a ToolRegistration and takes in a body.

import (
	"encoding/json"
	"slices"

	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// Tool is a ToolRegistration as the API shows it.
type Tool struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	ClientID        string            `json:"clientId"`
	LoginURL        string            `json:"loginUrl"`
	RedirectionURIs []string          `json:"redirectionUris"`
	TargetLinkURI   string            `json:"targetLinkUri"`
	DeepLinkingURL  string            `json:"deepLinkingUrl,omitempty"`
	AuthConfig      AuthConfig        `json:"authConfig"`
	DeploymentID    string            `json:"deploymentId"`
	Scopes          []string          `json:"scopes"`
	Custom          map[string]string `json:"custom,omitempty"`
	PlatformDataURL string            `json:"platformDataUrl,omitempty"`
	Active          bool              `json:"active"`
	// Ready is read-only: the Ready condition for the current generation.
	Ready bool `json:"ready"`
	// LaunchHealth is read-only: the last launch and the last refusal (healthview.go).
	LaunchHealth *LaunchHealth `json:"launchHealth,omitempty"`
}

// ToolRequest is the body of POST /api/tools and PUT /api/tools/{id}. A PUT replaces the
// whole spec (what is left out goes back to its default); it accepts what GET answered,
// read-only fields included (id must be the tool's own, ready and launchHealth are ignored).
type ToolRequest struct {
	ID              *string           `json:"id,omitempty"`
	Name            *string           `json:"name"`
	ClientID        string            `json:"clientId,omitempty"`
	LoginURL        *string           `json:"loginUrl"`
	RedirectionURIs []string          `json:"redirectionUris"`
	TargetLinkURI   *string           `json:"targetLinkUri"`
	DeepLinkingURL  string            `json:"deepLinkingUrl,omitempty"`
	AuthConfig      *AuthConfig       `json:"authConfig"`
	DeploymentID    string            `json:"deploymentId,omitempty"`
	Scopes          []string          `json:"scopes,omitempty"`
	Custom          map[string]string `json:"custom,omitempty"`
	PlatformDataURL string            `json:"platformDataUrl,omitempty"`
	Active          *bool             `json:"active,omitempty"`
	DevMode         *bool             `json:"devMode,omitempty"`
	Ready           *bool             `json:"ready,omitempty"`
	LaunchHealth    json.RawMessage   `json:"launchHealth,omitempty"`
}

// ToolList is the answer of GET /api/tools.
type ToolList struct {
	Tools []Tool `json:"tools"`
	Next  string `json:"next,omitempty"`
}

func toolToAPI(t *registry.Tool) Tool {
	out := Tool{ID: t.ID, Name: t.Spec.Name, ClientID: t.ClientID, LoginURL: string(t.Spec.LoginURL),
		RedirectionURIs: slices.Clone(t.RedirectionURIs()), TargetLinkURI: string(t.Spec.TargetLinkURI),
		DeepLinkingURL: string(t.Spec.DeepLinkingURL), AuthConfig: AuthConfig{Method: string(t.Spec.AuthConfig.Method), Key: t.Spec.AuthConfig.Key},
		DeploymentID: t.DeploymentID, Scopes: slices.Clone(t.Scopes()), Custom: t.Spec.Custom,
		PlatformDataURL: string(t.Spec.PlatformDataURL), Active: t.Spec.IsActive(), Ready: t.Ready,
		LaunchHealth: healthToAPI(t.Health)}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	return out
}
