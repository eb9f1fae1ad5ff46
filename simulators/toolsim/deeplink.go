package toolsim

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DeepLinkingResponse builds the tool's LtiDeepLinkingResponse JWT for a verified
// deep-linking launch (§5): iss = ClientID, aud = Issuer, iat, exp = now+5m, a fresh nonce,
// the launch's deployment_id, message_type, version 1.3.0, content_items (an empty array
// when items is nil), and the data of the launch's deep_linking_settings, when it has one.
// It returns the JWT and the deep_link_return_url to post it to.
func (t *Tool) DeepLinkingResponse(l Launch, items []map[string]any, opts ...AssertionOption) (jwt, returnURL string, err error) {
	if !l.OK || l.MessageType != DeepLinkingRequest {
		return "", "", errors.New("not a verified LtiDeepLinkingRequest launch")
	}
	settings, _ := l.Claims[ClaimDLSettings].(map[string]any)
	returnURL, _ = settings["deep_link_return_url"].(string)
	if returnURL == "" {
		return "", "", errors.New("the launch has no deep_link_return_url")
	}
	cfg := t.Config()
	now := time.Now()
	content := make([]any, 0, len(items))
	for _, it := range items {
		content = append(content, it)
	}
	claims := map[string]any{
		"iss": cfg.ClientID, "aud": cfg.Issuer,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"nonce":           randomToken(),
		ClaimDeploymentID: l.Claims[ClaimDeploymentID],
		ClaimMessageType:  DeepLinkingResponse,
		ClaimVersion:      "1.3.0",
		ClaimDLContent:    content,
	}
	if data, ok := settings["data"]; ok {
		claims[ClaimDLData] = data
	}
	jwt, err = t.sign(claims, t.header(), opts)
	return jwt, returnURL, err
}

// PostDeepLinkingResponse posts jwt as the form field JWT to returnURL, query kept, as the
// browser does with the tool's auto-submitting form. It uses client (nil: the tool's) but
// never follows a redirect: the caller gets the platform's answer as is and closes its body.
func (t *Tool) PostDeepLinkingResponse(ctx context.Context, client *http.Client, returnURL, jwt string) (*http.Response, error) {
	if client == nil {
		client = t.httpClient(t.Config())
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, returnURL, strings.NewReader(url.Values{"JWT": {jwt}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}
