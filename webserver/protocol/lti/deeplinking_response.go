package lti

// The LtiDeepLinkingResponse (conformance §5, service interface §4.5): the JWT a tool
// signs to return the integrator's content items (contentitems*.go) to the platform.

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// Claim names of the LtiDeepLinkingResponse (DL §4.5).
const (
	ClaimContentItems = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
	ClaimDLData       = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
	ClaimDLMsg        = "https://purl.imsglobal.org/spec/lti-dl/claim/msg"
	ClaimDLLog        = "https://purl.imsglobal.org/spec/lti-dl/claim/log"
	ClaimDLErrorMsg   = "https://purl.imsglobal.org/spec/lti-dl/claim/errormsg"
	ClaimDLErrorLog   = "https://purl.imsglobal.org/spec/lti-dl/claim/errorlog"
)

// MessageDeepLinkingResponse is the message_type of the response.
const MessageDeepLinkingResponse = "LtiDeepLinkingResponse"

// DeepLinkingResponseLifetime is exp - iat of the response JWT (T-DL-09: at most 10 minutes).
const DeepLinkingResponseLifetime = 5 * time.Minute

// Stable error codes of the deep-linking *apierr.Error values (Code, details.message).
const (
	CodeNotDeepLinkingLaunch = "NOT_DEEP_LINKING_LAUNCH"      // 400: the launch is not an LtiDeepLinkingRequest
	CodeInvalidReturnURL     = "INVALID_DEEP_LINK_RETURN_URL" // 400: deep_link_return_url is not an absolute http(s) URL
)

// DeepLinkingResponseParams is what DeepLinkingResponse needs.
type DeepLinkingResponseParams struct {
	// Request is the validated LtiDeepLinkingRequest: its iss becomes the aud,
	// its deployment_id and deep_linking_settings (return URL, accept_*, data)
	// shape the response. Raw, when present, lets data be echoed as sent.
	Request *Claims
	// ClientID is the tool's client_id at the platform: the JWT's iss.
	ClientID string
	// KID and Key are the registration's tool key (published in the tool JWKS);
	// the kid goes in the header (T-DL-02, D2L requires it). Key is an *rsa.PrivateKey,
	// or a signer that parses one when it signs (the registry's tool keys).
	KID string
	Key crypto.Signer
	// Items and Options are the integrator's selection (service interface §4.5).
	Items   []ContentItem
	Options DeepLinkingOptions
	// Now is iat (zero: time.Now()).
	Now time.Time
}

// dlResponsePayload is the LtiDeepLinkingResponse claim set, in wire order.
type dlResponsePayload struct {
	Issuer       string          `json:"iss"`
	Audience     string          `json:"aud"`
	IssuedAt     int64           `json:"iat"`
	ExpiresAt    int64           `json:"exp"`
	Nonce        string          `json:"nonce"`
	DeploymentID string          `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	MessageType  string          `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version      string          `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	ContentItems []ContentItem   `json:"https://purl.imsglobal.org/spec/lti-dl/claim/content_items"`
	Data         json.RawMessage `json:"https://purl.imsglobal.org/spec/lti-dl/claim/data,omitempty"`
	Msg          string          `json:"https://purl.imsglobal.org/spec/lti-dl/claim/msg,omitempty"`
	Log          string          `json:"https://purl.imsglobal.org/spec/lti-dl/claim/log,omitempty"`
	ErrorMsg     string          `json:"https://purl.imsglobal.org/spec/lti-dl/claim/errormsg,omitempty"`
	ErrorLog     string          `json:"https://purl.imsglobal.org/spec/lti-dl/claim/errorlog,omitempty"`
}

// DeepLinkingResponse validates the items and options against the request's
// deep_linking_settings and builds the signed LtiDeepLinkingResponse (DL §4.5,
// SEC §5.2.2; conformance §5). Header: alg RS256, kid, typ JWT. Claims: iss =
// ClientID; aud = the request's iss (a string); no azp; iat = Now; exp = Now +
// DeepLinkingResponseLifetime; nonce = fresh 130-bit random (T-DL-09);
// deployment_id as in the request; message_type LtiDeepLinkingResponse; version
// 1.3.0; content_items always present, [] when nothing was selected (T-DL-07);
// data iff the request had one, echoed as sent (T-DL-03); msg, log, errormsg,
// errorlog from the options when not empty.
//
// returnURL is deep_link_return_url verbatim, query included (T-DL-11): post the
// JWT there in a form field named JWT (T-DL-01; the HTTP side builds the form).
//
// Errors: a *ContentItemError when an item or the options are invalid (the
// integrator's input: 400); an *apierr.Error (Status 400, CodeNotDeepLinkingLaunch or
// CodeInvalidReturnURL) when the launch cannot take a deep-linking response;
// any other error is a configuration or signing failure (500).
func DeepLinkingResponse(p DeepLinkingResponseParams) (jwt string, returnURL string, err error) {
	c := p.Request
	if c == nil || c.MessageType != MessageDeepLinking || c.DeepLinking == nil {
		return "", "", newError(400, CodeNotDeepLinkingLaunch, "",
			"The launch is not a deep linking request (LtiDeepLinkingRequest): it cannot return content items.")
	}
	settings := c.DeepLinking
	if !isHTTPURL(settings.DeepLinkReturnURL) {
		return "", "", newError(400, CodeInvalidReturnURL, "T-DL-11",
			"The platform's deep_link_return_url is not an absolute http(s) URL.")
	}
	switch {
	case c.Issuer == "":
		return "", "", errors.New("lti: deep linking response: the request has no iss")
	case c.DeploymentID == "":
		return "", "", errors.New("lti: deep linking response: the request has no deployment_id")
	case p.ClientID == "":
		return "", "", errors.New("lti: deep linking response: no client_id")
	case p.KID == "":
		return "", "", errors.New("lti: deep linking response: no kid for the tool key")
	case p.Key == nil:
		return "", "", errors.New("lti: deep linking response: no tool key")
	case !rsaOf2048Bits(p.Key.Public()):
		return "", "", errors.New("lti: deep linking response: the tool key must be RSA of at least 2048 bits")
	}
	if e := ValidateContentItems(p.Items, settings); e != nil {
		return "", "", e
	}
	if err := ValidateOptions(p.Options); err != nil {
		return "", "", err
	}

	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	items := p.Items
	if items == nil {
		items = []ContentItem{}
	}
	claims := dlResponsePayload{
		Issuer:       p.ClientID,
		Audience:     c.Issuer,
		IssuedAt:     now.Unix(),
		ExpiresAt:    now.Add(DeepLinkingResponseLifetime).Unix(),
		Nonce:        rand.Text(),
		DeploymentID: c.DeploymentID,
		MessageType:  MessageDeepLinkingResponse,
		Version:      LTIVersion,
		ContentItems: items,
		Msg:          p.Options.Message,
		Log:          p.Options.Log,
		ErrorMsg:     p.Options.ErrMessage,
		ErrorLog:     p.Options.ErrLog,
	}
	if settings.DataPresent {
		claims.Data = dataToEcho(c)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&claims); err != nil {
		return "", "", errors.New("lti: deep linking response: encoding the claims: " + err.Error())
	}
	payload := bytes.TrimRight(buf.Bytes(), "\n")

	hdr := jws.NewHeaders()
	if err := hdr.Set(jws.KeyIDKey, p.KID); err != nil {
		return "", "", err
	}
	if err := hdr.Set(jws.TypeKey, ltiwire.TypeJWT); err != nil {
		return "", "", err
	}
	tok, err := jws.Sign(payload, jws.WithKey(jwa.RS256(), p.Key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", "", errors.New("lti: deep linking response: signing: " + err.Error())
	}
	return string(tok), settings.DeepLinkReturnURL, nil
}

// dataToEcho is the data claim of the response (T-DL-03): the request's data
// member exactly as the platform wrote it (escapes included) when Raw holds it,
// else Data encoded without HTML escaping. Either decodes to Data.
func dataToEcho(c *Claims) json.RawMessage {
	if raw, ok := rawDLData(c.Raw); ok && decodeString(raw) == c.DeepLinking.Data && json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	return appendJSONString(nil, c.DeepLinking.Data)
}

// rawDLData finds the raw text of deep_linking_settings.data in a claims
// payload, with the decoder's rules (last member wins, null is absent).
func rawDLData(payload []byte) (string, bool) {
	sc := newScanner(string(payload))
	data := ""
	for ok := enterObject(sc); ok && sc.NextMember(); {
		if sc.Key() != ClaimDeepLinkingSettings {
			continue
		}
		data = ""
		if !enterObject(sc) {
			continue
		}
		for sc.NextMember() {
			if sc.Key() == "data" {
				data = sc.Raw()
			}
		}
	}
	return data, kindOf(data) == kindString
}

// rsaOf2048Bits says whether public is an RSA key of at least 2048 bits.
func rsaOf2048Bits(public crypto.PublicKey) bool {
	pub, ok := public.(*rsa.PublicKey)
	return ok && pub.N != nil && pub.N.BitLen() >= 2048
}
