package oauthbroker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/internal/outbound"
)

// tokenResponse is the LMS token endpoint's answer (RFC 6749 §5.1); other members are ignored.
type tokenResponse struct {
	AccessToken  string  `json:"access_token"`
	TokenType    string  `json:"token_type"`
	ExpiresIn    seconds `json:"expires_in"`
	RefreshToken string  `json:"refresh_token"`
	Scope        string  `json:"scope"`
	// RFC 6749 §5.2, when an LMS answers an error with 200.
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// seconds is expires_in: a JSON number, or a string holding one (some LMSs quote it).
type seconds struct {
	v   int64
	set bool
}

// maxExpiresIn bounds expires_in, so that time arithmetic cannot overflow.
const maxExpiresIn = 10 * 365 * 24 * 3600

func (s *seconds) UnmarshalJSON(b []byte) error {
	text := strings.Trim(string(b), `"`)
	if text == "null" || text == "" {
		return nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return fmt.Errorf("expires_in: %q is not a number", text)
	}
	s.v, s.set = int64(min(max(f, 0), maxExpiresIn)), true
	return nil
}

// upstreamError is a failed call to the LMS token endpoint.
type upstreamError struct {
	Status      int    // the LMS's HTTP status; 0 when it did not answer
	Body        string // the start of its body (2 KiB), secrets of the request removed
	Code        string // RFC 6749 error, when the body had one
	Description string // error_description, clipped
	Timeout     bool
	Refused     bool   // the outbound policy refused the token URL: nothing was sent
	Cause       string // what went wrong otherwise, for the description (no secrets)
}

// log records the failure: statuses and RFC 6749 error codes, never bodies (an LMS may
// echo secrets in ways redact does not catch).
func (e *upstreamError) log(ctx context.Context, platformID, grant string) {
	log.FromContext(ctx).Info("LMS token request failed", "platform", platformID, "grant", grant,
		"status", e.Status, "error", e.Code, "timeout", e.Timeout, "refused", e.Refused)
}

// summary describes the failure for humans, LMS texts included (callers escape it).
func (e *upstreamError) summary() string {
	switch {
	case e.Timeout:
		return "the LMS did not answer in time."
	case e.Refused:
		return "the token URL leads where ltiop does not connect (a loopback, private or cloud metadata address, or a redirect)."
	case e.Code != "" && e.Description != "":
		return e.Code + " (" + e.Description + ")."
	case e.Code != "":
		return e.Code + "."
	case e.Status != 0 && e.Cause != "":
		return fmt.Sprintf("HTTP %d: %s.", e.Status, e.Cause)
	case e.Status != 0:
		return fmt.Sprintf("HTTP %d.", e.Status)
	default:
		return "the LMS could not be reached."
	}
}

// tokenRequest posts form to the LMS token endpoint, adding the client credentials
// (client_secret_post: Canvas and Brightspace accept it), and returns its token response.
func (b *Broker) tokenRequest(ctx context.Context, cc *ClientConfig, form url.Values) (*tokenResponse, *upstreamError) {
	secrets := []string{cc.ClientSecret, form.Get("code"), form.Get("code_verifier"), form.Get("refresh_token")}
	form.Set("client_id", cc.ClientID)
	if cc.ClientSecret != "" {
		form.Set("client_secret", cc.ClientSecret)
	}
	req, err := http.NewRequestWithContext(outbound.WithTarget(ctx, outbound.TargetOAuth), http.MethodPost, cc.TokenURL, strings.NewReader(form.Encode())) //nolint:gosec // G704: the token URL is the registration's; hc is the outbound client that refuses private addresses
	if err != nil {
		return nil, &upstreamError{Cause: "the token URL is not usable"}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent())
	res, err := b.hc.Do(req) //nolint:gosec // G704: hc is the outbound client that refuses private and metadata addresses
	if err != nil {
		var oe *outbound.Error
		if errors.As(err, &oe) {
			return nil, &upstreamError{Refused: true}
		}
		var ne net.Error
		timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
		return nil, &upstreamError{Timeout: timeout}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxTokenResponse+1))
	if err != nil {
		var ne net.Error
		timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
		return nil, &upstreamError{Status: res.StatusCode, Timeout: timeout, Cause: "the response could not be read"}
	}
	fail := func(cause string) *upstreamError {
		clean := redact(raw, secrets) // an LMS may echo what it was sent
		e := &upstreamError{Status: res.StatusCode, Cause: cause}
		if res.StatusCode < 200 || res.StatusCode > 299 {
			// A 2xx body ltiop cannot use may still hold tokens: it is not passed on. Of
			// an error body only its JSON error fields are.
			e.Body = outbound.ErrorExcerpt([]byte(clean))
		}
		var oe struct {
			Error            any `json:"error"`
			ErrorDescription any `json:"error_description"`
		}
		if json.Unmarshal([]byte(clean), &oe) == nil {
			if s, ok := oe.Error.(string); ok {
				e.Code = clip(s, maxLMSErrorText)
			}
			if s, ok := oe.ErrorDescription.(string); ok {
				e.Description = clip(s, maxLMSErrorText)
			}
		}
		return e
	}
	if len(raw) > maxTokenResponse {
		return nil, fail(fmt.Sprintf("the response is larger than %d bytes", maxTokenResponse))
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, fail("")
	}
	var tok tokenResponse
	if err := json.Unmarshal(raw, &tok); err != nil {
		return nil, fail("the response is not a JSON token response")
	}
	if tok.Error != "" || tok.AccessToken == "" {
		return nil, fail("the response has no access_token")
	}
	if tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer") {
		return nil, fail("the token type is not Bearer")
	}
	return &tok, nil
}

// redact removes the request's secrets from an LMS body.
func redact(raw []byte, secrets []string) string {
	s := string(raw)
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
