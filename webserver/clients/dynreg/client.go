package dynreg

import (
	"bytes"
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
	"time"

	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/version"
)

// Limits of the outbound exchanges.
const (
	// DefaultTimeout bounds an exchange when neither the context nor the client has a
	// deadline of its own.
	DefaultTimeout = 15 * time.Second
	// MaxBody is the largest OpenID configuration or registration answer read.
	MaxBody = 1 << 20
	// maxExcerpt is how much of a platform's error answer is read for the error fields an
	// Error quotes.
	maxExcerpt = 16 << 10
)

// MessageSupport is one entry of the platform's messages_supported.
type MessageSupport struct {
	Type       string
	Placements []string
}

// PlatformConfig is a platform's OpenID configuration: the fields ltiop uses, plus Raw,
// the document as served.
type PlatformConfig struct {
	Issuer                string
	AuthorizationEndpoint string
	RegistrationEndpoint  string
	JWKSURI               string
	TokenEndpoint         string
	// AuthorizationServer is authorization_server as advertised: a URL (the client
	// assertion audience) or, as Canvas does, a bare host name. See TokenAudience.
	AuthorizationServer string
	ScopesSupported     []string
	// ProductFamilyCode ("canvas", "moodle", "desire2learn", …), Version and
	// MessagesSupported come from the lti-platform-configuration member.
	ProductFamilyCode string
	Version           string
	MessagesSupported []MessageSupport
	Raw               json.RawMessage
}

// TokenAudience is the client-assertion audience to store with the registration
// (T-DR-06, T-QUIRK-06): authorization_server when it is an absolute URL, else the token
// endpoint. Canvas advertises a bare host name there and accepts its token URL.
func (pc *PlatformConfig) TokenAudience() string {
	if isAbsoluteURL(pc.AuthorizationServer) {
		return pc.AuthorizationServer
	}
	return pc.TokenEndpoint
}

// URLMember is a member of a platform's configuration that holds a URL.
type URLMember struct{ Name, URL string }

// FetchedURLs are the configuration's URLs that ltiop calls itself, now or later:
// registration_endpoint (the registration), jwks_uri (launches), token_endpoint (service
// calls) and authorization_endpoint (launches only send the browser there, but the
// registration check, POST /api/platforms/{id}/check, calls it). The issuer and
// authorization_server are names, never fetched.
func (pc *PlatformConfig) FetchedURLs() []URLMember {
	return []URLMember{
		{"registration_endpoint", pc.RegistrationEndpoint},
		{"jwks_uri", pc.JWKSURI},
		{"token_endpoint", pc.TokenEndpoint},
		{"authorization_endpoint", pc.AuthorizationEndpoint},
	}
}

// IsCanvas reports whether the platform says it is Canvas.
func (pc *PlatformConfig) IsCanvas() bool {
	return pc != nil && strings.EqualFold(pc.ProductFamilyCode, "canvas")
}

// FetchConfiguration GETs the platform's OpenID configuration at configURL (the LMS's
// openid_configuration parameter) with Accept: application/json and, when token is not
// empty, Authorization: Bearer <token> (T-DR-03). It reads at most 1 MiB and checks the
// document: a JSON object whose issuer, authorization_endpoint, registration_endpoint,
// jwks_uri and token_endpoint are absolute http(s) URLs (https when configURL is https),
// whose issuer is on configURL's host and whose registration_endpoint is on the issuer's
// host (T-DR-02). Every error is an *Error: CodeConfigurationUnavailable,
// CodeInvalidConfiguration or CodeIssuerMismatch.
func FetchConfiguration(ctx context.Context, client *http.Client, configURL, token string) (*PlatformConfig, error) {
	if client == nil {
		return nil, errors.New("dynreg: FetchConfiguration needs an HTTP client")
	}
	cu, err := parseHTTPURL(configURL)
	if err != nil {
		return nil, newError(CodeInvalidConfiguration, "the openid_configuration URL "+err.Error(), 0, nil)
	}
	ctx, cancel := withDefaultTimeout(ctx, client)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, configURL, nil)
	if err != nil {
		return nil, newError(CodeInvalidConfiguration, "the openid_configuration URL is not usable", 0, err)
	}
	setHeaders(req, token)
	res, err := client.Do(req) //nolint:bodyclose // closed by the deferred drainClose(res.Body)
	if err != nil {
		return nil, newError(CodeConfigurationUnavailable, "the platform's OpenID configuration could not be fetched: "+describe(err), 0, err)
	}
	defer drainClose(res.Body)
	if res.StatusCode != http.StatusOK {
		return nil, newError(CodeConfigurationUnavailable,
			"the platform answered the OpenID configuration request with "+statusText(res.StatusCode)+excerpt(res.Body), res.StatusCode, nil)
	}
	body, err := readLimited(res.Body)
	if err != nil {
		return nil, newError(CodeInvalidConfiguration, "the OpenID configuration "+err.Error(), res.StatusCode, err)
	}
	pc, perr := parseConfiguration(body, cu)
	if perr != nil {
		perr.Status = res.StatusCode
		return nil, perr
	}
	return pc, nil
}

// ParseConfiguration reads an OpenID configuration FetchConfiguration accepted earlier
// (its Raw, kept for instance while a registration awaits pre-approval) and checks it as
// FetchConfiguration does, except for the configuration URL's host, which it does not
// know: keep Raw where it cannot be tampered with. Errors are *Error
// (CodeInvalidConfiguration, CodeIssuerMismatch) with Status 0.
func ParseConfiguration(raw []byte) (*PlatformConfig, error) {
	pc, err := parseConfiguration(raw, nil)
	if err != nil {
		return nil, err
	}
	return pc, nil
}

// parseConfiguration reads and checks an OpenID configuration fetched from cu; with cu
// nil, the issuer's host is not checked and the issuer's scheme stands for cu's.
func parseConfiguration(body []byte, cu *url.URL) (*PlatformConfig, *Error) {
	invalid := func(msg string) *Error { return newError(CodeInvalidConfiguration, msg, 0, nil) }
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return nil, invalid("the OpenID configuration is not a JSON object")
	}
	pc := &PlatformConfig{Raw: json.RawMessage(bytes.Clone(body))}
	urls := map[string]*url.URL{}
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"issuer", &pc.Issuer},
		{"authorization_endpoint", &pc.AuthorizationEndpoint},
		{"registration_endpoint", &pc.RegistrationEndpoint},
		{"jwks_uri", &pc.JWKSURI},
		{"token_endpoint", &pc.TokenEndpoint},
	} {
		s, ok := stringMember(doc, f.key)
		if !ok || s == "" {
			return nil, invalid("the OpenID configuration has no " + f.key)
		}
		u, err := parseHTTPURL(s)
		if err != nil {
			return nil, invalid("the OpenID configuration's " + f.key + " " + err.Error())
		}
		if cu == nil && f.key == "issuer" {
			cu = &url.URL{Scheme: u.Scheme}
		}
		if cu.Scheme == "https" && u.Scheme != "https" {
			return nil, invalid("the OpenID configuration's " + f.key + " is not https")
		}
		*f.dst, urls[f.key] = s, u
	}
	if cu.Host != "" && !sameHost(urls["issuer"], cu) {
		return nil, newError(CodeIssuerMismatch, fmt.Sprintf("the issuer %q is not on the host of the OpenID configuration URL (%s)", pc.Issuer, cu.Host), 0, nil)
	}
	if !sameHost(urls["registration_endpoint"], urls["issuer"]) {
		return nil, newError(CodeIssuerMismatch, fmt.Sprintf("the registration endpoint %q is not on the issuer's host", pc.RegistrationEndpoint), 0, nil)
	}
	// Optional members: a wrong type is ignored rather than refused (T-QUIRK-04).
	pc.AuthorizationServer, _ = stringMember(doc, "authorization_server")
	pc.ScopesSupported = stringsMember(doc, "scopes_supported")
	var lti map[string]json.RawMessage
	if raw, ok := doc[KeyPlatformConfiguration]; ok && json.Unmarshal(raw, &lti) == nil {
		pc.ProductFamilyCode, _ = stringMember(lti, "product_family_code")
		pc.Version, _ = stringMember(lti, "version")
		var msgs []map[string]json.RawMessage
		if raw, ok := lti["messages_supported"]; ok && json.Unmarshal(raw, &msgs) == nil {
			for _, m := range msgs {
				if t, ok := stringMember(m, "type"); ok && t != "" {
					pc.MessagesSupported = append(pc.MessagesSupported, MessageSupport{Type: t, Placements: stringsMember(m, "placements")})
				}
			}
		}
	}
	return pc, nil
}

// Registered is the platform's answer to a registration.
type Registered struct {
	ClientID string
	// DeploymentID is where the platform put it: top level (Canvas), inside the tool
	// configuration (Moodle), or "" when it sent none (Brightspace, some Canvas versions):
	// learn it at the first launch (T-DR-05).
	DeploymentID string
	Raw          json.RawMessage
}

// Register POSTs registration (see BuildRegistration) to pc.RegistrationEndpoint as JSON,
// with Authorization: Bearer <token> when token is not empty (T-DR-03), and reads the
// answer (at most 1 MiB): a JSON object with a client_id, and a deployment_id at the top
// level, inside the tool configuration, or nowhere (T-DR-05). Errors are *Error:
// CodeRegistrationUnavailable (no answer), CodeRegistrationRefused (non-2xx; Status is the
// platform's, Message quotes the start of its answer), CodeInvalidRegistrationResponse;
// CodeInvalidConfiguration when pc has no registration endpoint. A registration that cannot
// be encoded as JSON, or a nil client, is a plain error (a programming error).
//
// Registration tokens are single-use on most platforms: do not retry a registration whose
// POST may have reached the platform; start over from the LMS.
func Register(ctx context.Context, client *http.Client, pc *PlatformConfig, token string, registration map[string]any) (*Registered, error) {
	if client == nil {
		return nil, errors.New("dynreg: Register needs an HTTP client")
	}
	if pc == nil || pc.RegistrationEndpoint == "" {
		return nil, newError(CodeInvalidConfiguration, "the platform has no registration endpoint", 0, nil)
	}
	if _, err := parseHTTPURL(pc.RegistrationEndpoint); err != nil {
		return nil, newError(CodeInvalidConfiguration, "the registration endpoint "+err.Error(), 0, nil)
	}
	payload, err := json.Marshal(registration)
	if err != nil {
		return nil, fmt.Errorf("dynreg: encoding the registration: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx, client)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pc.RegistrationEndpoint, bytes.NewReader(payload))
	if err != nil {
		return nil, newError(CodeInvalidConfiguration, "the registration endpoint is not usable", 0, err)
	}
	setHeaders(req, token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return nil, newError(CodeRegistrationUnavailable, "the platform's registration endpoint did not answer: "+describe(err), 0, err)
	}
	defer drainClose(res.Body)
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, newError(CodeRegistrationRefused,
			"the platform refused the registration with "+statusText(res.StatusCode)+excerpt(res.Body), res.StatusCode, nil)
	}
	body, err := readLimited(res.Body)
	if err != nil {
		return nil, newError(CodeInvalidRegistrationResponse, "the registration answer "+err.Error(), res.StatusCode, err)
	}
	invalid := func(msg string) error { return newError(CodeInvalidRegistrationResponse, msg, res.StatusCode, nil) }
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return nil, invalid("the registration answer is not a JSON object")
	}
	out := &Registered{Raw: json.RawMessage(bytes.Clone(body))}
	out.ClientID, _ = idMember(doc, "client_id")
	if out.ClientID == "" {
		return nil, invalid("the registration answer has no client_id")
	}
	if id, ok := idMember(doc, "deployment_id"); ok && id != "" {
		out.DeploymentID = id
	} else {
		var tool map[string]json.RawMessage
		if raw, ok := doc[KeyToolConfiguration]; ok && json.Unmarshal(raw, &tool) == nil {
			out.DeploymentID, _ = idMember(tool, "deployment_id")
		}
	}
	return out, nil
}

func setHeaders(req *http.Request, token string) {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", version.UserAgent())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// withDefaultTimeout bounds ctx by DefaultTimeout unless the context or the client already
// has a deadline.
func withDefaultTimeout(ctx context.Context, client *http.Client) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || client.Timeout > 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

var errTooLarge = errors.New("is larger than 1 MiB")

func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("could not be read: %w", err)
	}
	if len(b) > MaxBody {
		return nil, errTooLarge
	}
	return b, nil
}

// drainClose reads a little of what is left so the connection can be reused, then closes.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}

func statusText(code int) string {
	s := "HTTP " + strconv.Itoa(code)
	if t := http.StatusText(code); t != "" {
		s += " " + t
	}
	return s
}

// excerpt quotes a platform's error answer: its JSON error fields only
// (outbound.ErrorExcerpt), so that nothing else of a body, HTML or text, is ever echoed.
func excerpt(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, maxExcerpt))
	if s := outbound.ErrorExcerpt(b); s != "" {
		return ": " + s
	}
	return ""
}

// describe says why a request got no answer, without the URL (the caller knows it).
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	}
	return err.Error()
}

// parseHTTPURL accepts an absolute http or https URL with a host and no user info.
func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, errors.New("is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, errors.New("is not an absolute http(s) URL")
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("has no host")
	case u.User != nil:
		return nil, errors.New("must not carry user information")
	}
	return u, nil
}

func isAbsoluteURL(s string) bool {
	_, err := parseHTTPURL(s)
	return err == nil
}

// sameHost compares host names (case-insensitively) and effective ports.
func sameHost(a, b *url.URL) bool {
	return strings.EqualFold(strings.TrimSuffix(a.Hostname(), "."), strings.TrimSuffix(b.Hostname(), ".")) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "http" {
		return "80"
	}
	return "443"
}

func stringMember(m map[string]json.RawMessage, key string) (string, bool) {
	raw, ok := m[key]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// idMember reads an identifier that should be a string but may be a number.
func idMember(m map[string]json.RawMessage, key string) (string, bool) {
	if s, ok := stringMember(m, key); ok {
		return s, true
	}
	raw, ok := m[key]
	if !ok {
		return "", false
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&n) != nil {
		return "", false
	}
	return n.String(), true
}

// stringsMember reads an array of strings, skipping elements of other types.
func stringsMember(m map[string]json.RawMessage, key string) []string {
	var items []json.RawMessage
	if raw, ok := m[key]; !ok || json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}
