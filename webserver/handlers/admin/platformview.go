package admin

// The platforms API's view: what it shows of a registration and takes in a body.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// Platform is a registration as the API shows it (service interface §2.5).
type Platform struct {
	ID                     string     `json:"id"`
	URL                    string     `json:"url"`
	ClientID               string     `json:"clientId"`
	Name                   string     `json:"name"`
	AuthenticationEndpoint string     `json:"authenticationEndpoint"`
	AccesstokenEndpoint    string     `json:"accesstokenEndpoint"`
	AuthConfig             AuthConfig `json:"authConfig"`
	PublicKey              string     `json:"publicKey"`
	Active                 bool       `json:"active"`
	// LTI11 is the registration's LTI 1.1 consumer key and secret reference (lti11.go).
	LTI11 *PlatformLTI11 `json:"lti11,omitempty"`
	// LaunchHealth is read-only: the last launch and the last refusal (healthview.go).
	LaunchHealth *LaunchHealth `json:"launchHealth,omitempty"`
}

// AuthConfig is the platform key: method JWK_SET, JWK_KEY or RSA_KEY, and the key.
type AuthConfig struct {
	Key    string `json:"key"`
	Method string `json:"method"`
}

// PlatformRequest is the body of POST and PUT. The §4.4 fields are required; the others
// are ltiop extensions and keep their current value (or default) when omitted.
type PlatformRequest struct {
	URL                    *string     `json:"url"`
	ClientID               *string     `json:"clientId"`
	Name                   *string     `json:"name"`
	AuthenticationEndpoint *string     `json:"authenticationEndpoint"`
	AccesstokenEndpoint    *string     `json:"accesstokenEndpoint"`
	AuthConfig             *AuthConfig `json:"authConfig"`
	AuthorizationServer    *string     `json:"authorizationServer,omitempty"`
	DeploymentIDs          []string    `json:"deploymentIds,omitempty"`
	Active                 *bool       `json:"active,omitempty"`
	// LTI11 sets the LTI 1.1 credentials (lti11.go).
	LTI11 *PlatformLTI11 `json:"lti11,omitempty"`
}

func toAPI(p *registry.Platform) Platform {
	out := Platform{
		ID:                     p.ID,
		URL:                    string(p.Spec.URL),
		ClientID:               p.Spec.ClientID,
		Name:                   p.Spec.Name,
		AuthenticationEndpoint: string(p.Spec.AuthenticationEndpoint),
		AccesstokenEndpoint:    string(p.Spec.AccesstokenEndpoint),
		AuthConfig:             AuthConfig{Key: p.Spec.AuthConfig.Key, Method: string(p.Spec.AuthConfig.Method)},
		Active:                 p.Spec.IsActive(),
		LaunchHealth:           healthToAPI(p.Health),
	}
	if p.Key != nil {
		out.PublicKey = p.PublicKeyPEM()
	}
	out.LTI11 = lti11ToAPI(&p.Spec)
	return out
}

// writeList streams {"platforms":[...]} (with "next" when given), one platform at a
// time: the same bytes httpapi.WriteJSON would write, without holding the whole body and
// a copy of every platform in memory (an unpaged list of 10,000 is megabytes).
func (h *Platforms) writeList(w http.ResponseWriter, platforms []*registry.Platform, next string) {
	httpapi.StartJSON(w, http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as httpapi.WriteJSON
	encode := func(v any) []byte {
		buf.Reset()
		_ = enc.Encode(v) // strings and bools: cannot fail
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	_, _ = bw.WriteString(`{"platforms":[`)
	for i, p := range platforms {
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		_, _ = bw.Write(encode(toAPI(p)))
	}
	_ = bw.WriteByte(']')
	if next != "" {
		_, _ = bw.WriteString(`,"next":`)
		_, _ = bw.Write(encode(next))
	}
	_ = bw.WriteByte('}')
	_ = bw.Flush()
}
