package toolsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ClientAssertionType is the client_assertion_type of a JWT client assertion (RFC 7523).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// TokenResponse is the token endpoint's JSON answer: an access token or an RFC 6749 §5.2
// error.
type TokenResponse struct {
	AccessToken      string `json:"access_token"`
	TokenType        string `json:"token_type"`
	Scope            string `json:"scope"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
	ExpiresIn        int    `json:"expires_in"`
}

// RequestToken posts a client_credentials grant to TokenEndpoint with a fresh client
// assertion (aud = TokenEndpoint) and the scopes, and returns the decoded JSON answer and
// the HTTP status. An answer that is not JSON is an error (the status is still returned).
func (t *Tool) RequestToken(ctx context.Context, scopes []string) (TokenResponse, int, error) {
	return t.RequestTokenWith(ctx, scopes)
}

// RequestTokenWith is RequestToken with the assertion changed by opts.
func (t *Tool) RequestTokenWith(ctx context.Context, scopes []string, opts ...AssertionOption) (TokenResponse, int, error) {
	cfg := t.Config()
	if cfg.TokenEndpoint == "" {
		return TokenResponse{}, 0, errors.New("no token endpoint configured")
	}
	assertion, err := t.ClientAssertion(cfg.TokenEndpoint, opts...)
	if err != nil {
		return TokenResponse{}, 0, err
	}
	return t.PostToken(ctx, url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {ClientAssertionType},
		"client_assertion":      {assertion},
		"scope":                 {strings.Join(scopes, " ")},
	})
}

// PostToken posts form as is to TokenEndpoint, for requests tests break by hand.
func (t *Tool) PostToken(ctx context.Context, form url.Values) (TokenResponse, int, error) {
	cfg := t.Config()
	if cfg.TokenEndpoint == "" {
		return TokenResponse{}, 0, errors.New("no token endpoint configured")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return TokenResponse{}, 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := t.httpClient(cfg).Do(req)
	if err != nil {
		return TokenResponse{}, 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return TokenResponse{}, res.StatusCode, err
	}
	var tr TokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		return TokenResponse{}, res.StatusCode, fmt.Errorf("token endpoint answered HTTP %d with no JSON object: %s", res.StatusCode, trim(string(body)))
	}
	return tr, res.StatusCode, nil
}
