package toolsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Registration is what a platform answered a dynamic registration with.
type Registration struct {
	ClientID     string
	DeploymentID string
	Scope        string
	// Answer is the platform's JSON answer as received.
	Answer map[string]any
}

// Register runs LTI Dynamic Registration 1.0 from the tool's side, as the tool's
// registration initiation page does when the platform opens initiation (a URL with
// openid_configuration and registration_token): it reads the platform's OpenID
// configuration, posts its registration (its pages under base, its key set, scopes and
// messages) with the registration token, and on success takes the platform's endpoints
// and the client id and deployment id it was given into its configuration. The answer of
// a refused registration is returned as an error with the status.
func (t *Tool) Register(ctx context.Context, initiation, base string, scopes []string, deepLinking bool) (Registration, error) {
	u, err := url.Parse(initiation)
	if err != nil {
		return Registration{}, err
	}
	configURL, token := u.Query().Get("openid_configuration"), u.Query().Get("registration_token")
	if configURL == "" {
		return Registration{}, fmt.Errorf("the initiation URL has no openid_configuration")
	}
	cfg := t.Config()
	var pc struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		JWKSURI               string `json:"jwks_uri"`
		RegistrationEndpoint  string `json:"registration_endpoint"`
	}
	if status, err := t.doJSON(ctx, cfg, http.MethodGet, configURL, "", nil, &pc); err != nil {
		return Registration{}, fmt.Errorf("openid configuration: HTTP %d: %w", status, err)
	} else if status != http.StatusOK {
		return Registration{}, fmt.Errorf("openid configuration: HTTP %d", status)
	}
	messages := []map[string]any{{"type": ResourceLinkRequest}}
	if deepLinking {
		messages = append(messages, map[string]any{"type": DeepLinkingRequest, "target_link_uri": base + DeepLinkLaunchPath})
	}
	body := map[string]any{
		"application_type": "web", "response_types": []string{"id_token"}, "grant_types": []string{"implicit", "client_credentials"},
		"initiate_login_uri": base + LoginPath, "redirect_uris": []string{base + LaunchPath, base + DeepLinkLaunchPath},
		"client_name": "toolsim", "jwks_uri": base + JWKSPath, "token_endpoint_auth_method": "private_key_jwt",
		"scope": strings.Join(scopes, " "),
		"https://purl.imsglobal.org/spec/lti-tool-configuration": map[string]any{
			"domain": strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://"), "target_link_uri": base + LaunchPath,
			"claims": []string{"iss", "sub", "name", "email"}, "messages": messages,
		},
	}
	var answer map[string]any
	status, err := t.doJSON(ctx, cfg, http.MethodPost, pc.RegistrationEndpoint, token, body, &answer)
	if err != nil {
		return Registration{}, err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return Registration{Answer: answer}, fmt.Errorf("registration refused: HTTP %d: %v", status, answer)
	}
	reg := Registration{Answer: answer}
	reg.ClientID, _ = answer["client_id"].(string)
	reg.Scope, _ = answer["scope"].(string)
	if tc, ok := answer["https://purl.imsglobal.org/spec/lti-tool-configuration"].(map[string]any); ok {
		reg.DeploymentID, _ = tc["deployment_id"].(string)
	}
	cfg.ClientID, cfg.DeploymentID, cfg.Issuer = reg.ClientID, reg.DeploymentID, pc.Issuer
	cfg.AuthorizationEndpoint, cfg.TokenEndpoint, cfg.PlatformJWKSURL = pc.AuthorizationEndpoint, pc.TokenEndpoint, pc.JWKSURI
	t.SetConfig(cfg)
	return reg, nil
}

// doJSON sends a JSON request (body nil: none) with an optional Bearer token and decodes the
// JSON answer into out.
func (t *Tool) doJSON(ctx context.Context, cfg Config, method, target, bearer string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := t.httpClient(cfg).Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return res.StatusCode, err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return res.StatusCode, fmt.Errorf("HTTP %d with no JSON object: %s", res.StatusCode, trim(string(b)))
	}
	return res.StatusCode, nil
}
