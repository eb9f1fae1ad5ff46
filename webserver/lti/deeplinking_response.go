package lti

// Deep Linking 2.0 responses (conformance §5, service interface §2.6 and §4.5):
// content items as the integrator sends them, their validation against the
// platform's deep_linking_settings, and the signed LtiDeepLinkingResponse JWT.

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
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

// Content item types (DL §3.1–3.5). Any other type must be a fully-qualified URL (DL §3.7).
const (
	ContentItemLink            = "link"
	ContentItemLTIResourceLink = "ltiResourceLink"
	ContentItemFile            = "file"
	ContentItemHTML            = "html"
	ContentItemImage           = "image"
)

// Stable error codes of the deep-linking *apierr.Error values (Code, details.message).
const (
	CodeNotDeepLinkingLaunch = "NOT_DEEP_LINKING_LAUNCH"      // 400: the launch is not an LtiDeepLinkingRequest
	CodeInvalidReturnURL     = "INVALID_DEEP_LINK_RETURN_URL" // 400: deep_link_return_url is not an absolute http(s) URL
)

// ContentItem is one item the integrator returns (service interface §2.6),
// decoded from the API body. Its JSON form is also the wire form of the
// content_items claim: the member names of §2.6 are those of DL §3.
//
// Extensions holds the members this type does not model, verbatim: for the
// standard types only those named by a fully-qualified http(s) URL (DL §3.6;
// other unknown members are ignored), for an item whose type is itself a URL
// (DL §3.7) every unknown member, since that type defines its own members.
type ContentItem struct {
	Type       string            `json:"type"`
	URL        string            `json:"url,omitempty"`
	Title      string            `json:"title,omitempty"`
	Text       string            `json:"text,omitempty"`
	HTML       string            `json:"html,omitempty"`
	Icon       *Image            `json:"icon,omitempty"`
	Thumbnail  *Image            `json:"thumbnail,omitempty"`
	Embed      *Embed            `json:"embed,omitempty"`
	Window     *Window           `json:"window,omitempty"`
	Iframe     *Iframe           `json:"iframe,omitempty"`
	Custom     map[string]string `json:"custom,omitempty"`
	LineItem   *ContentLineItem  `json:"lineItem,omitempty"`
	Available  *TimeWindow       `json:"available,omitempty"`
	Submission *TimeWindow       `json:"submission,omitempty"`
	ExpiresAt  string            `json:"expiresAt,omitempty"`
	MediaType  string            `json:"mediaType,omitempty"`
	Width      int               `json:"width,omitempty"`
	Height     int               `json:"height,omitempty"`

	Extensions map[string]json.RawMessage `json:"-"`
}

// Image is an icon or thumbnail: url, width, height (pixels).
type Image struct {
	URL    string `json:"url"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// Embed is the embed member of a link: an HTML fragment the platform sanitises.
type Embed struct {
	HTML string `json:"html"`
}

// Window tells how to open the item in a new window or tab.
type Window struct {
	TargetName     string `json:"targetName,omitempty"`
	Width          int    `json:"width,omitempty"`
	Height         int    `json:"height,omitempty"`
	WindowFeatures string `json:"windowFeatures,omitempty"`
}

// Iframe tells how to embed the item in an iframe. Src is required on a link
// (DL §3.1); an ltiResourceLink's iframe has only dimensions (DL §3.2).
type Iframe struct {
	Src    string `json:"src,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// ContentLineItem is the lineItem of an ltiResourceLink (DL §3.2, AGS).
type ContentLineItem struct {
	Label          string  `json:"label,omitempty"`
	ScoreMaximum   float64 `json:"scoreMaximum"`
	ResourceID     string  `json:"resourceId,omitempty"`
	Tag            string  `json:"tag,omitempty"`
	GradesReleased *bool   `json:"gradesReleased,omitempty"`
}

// TimeWindow is available or submission: RFC 3339 date-times, kept as sent.
type TimeWindow struct {
	StartDateTime string `json:"startDateTime,omitempty"`
	EndDateTime   string `json:"endDateTime,omitempty"`
}

// DeepLinkingOptions is the options object of service interface §2.6: message
// and log on success, errMessage and errLog on error (the platform then rejects
// the submission). They become the msg, log, errormsg and errorlog claims.
type DeepLinkingOptions struct {
	Message    string `json:"message,omitempty"`
	Log        string `json:"log,omitempty"`
	ErrMessage string `json:"errMessage,omitempty"`
	ErrLog     string `json:"errLog,omitempty"`
}

// ContentItemError is an invalid content item (or options object): Index is the
// item's position in contentItems, or -1 when the error is outside the items
// (the options, or the body itself); Field is the JSON path inside the item
// ("url", "lineItem.scoreMaximum", "custom.quiz_id"), empty when the item as a
// whole is refused. Rule is the conformance ID the check implements, if any.
// The message never contains secrets and is safe to return to the integrator.
type ContentItemError struct {
	Index   int
	Field   string
	Message string
	Rule    string
}

// Error reads like "contentItems[2].url: required for type link".
func (e *ContentItemError) Error() string {
	path := e.Field
	if e.Index >= 0 {
		path = "contentItems[" + strconv.Itoa(e.Index) + "]"
		if e.Field != "" {
			path += "." + e.Field
		}
	}
	if path == "" {
		return e.Message
	}
	return path + ": " + e.Message
}

// itemMembers are the members ContentItem models, in their JSON spelling.
var itemMembers = []string{"type", "url", "title", "text", "html", "icon", "thumbnail", "embed",
	"window", "iframe", "custom", "lineItem", "available", "submission", "expiresAt", "mediaType",
	"width", "height"}

// isItemMember reports whether key names a modelled member; encoding/json
// matches member names case-insensitively, so this does too.
func isItemMember(key string) bool {
	for _, m := range itemMembers {
		if strings.EqualFold(m, key) {
			return true
		}
	}
	return false
}

func isStandardType(t string) bool {
	switch t {
	case ContentItemLink, ContentItemLTIResourceLink, ContentItemFile, ContentItemHTML, ContentItemImage:
		return true
	}
	return false
}

// UnmarshalJSON decodes an item of the API body. Custom values must be strings
// (T-DL-08: null, numbers, booleans, objects are refused; "" is allowed).
// Members of the wrong JSON type fail with a *ContentItemError whose Index is -1
// (DecodeDeepLinkingBody sets it). null leaves the item unchanged.
func (it *ContentItem) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return &ContentItemError{Index: -1, Message: "a content item must be a JSON object"}
	}
	type plain ContentItem // no methods: no recursion
	var v struct {
		*plain
		Custom json.RawMessage `json:"custom"` // shadows plain.Custom: checked below
	}
	var out ContentItem
	v.plain = (*plain)(&out)
	if err := json.Unmarshal(b, &v); err != nil {
		ce := decodeError(-1, "", err)
		ce.Field = strings.TrimPrefix(ce.Field, "plain.") // the embedded field's name
		return ce
	}
	var err error
	if out.Custom, err = decodeItemCustom(v.Custom); err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return decodeError(-1, "", err)
	}
	extensionType := !isStandardType(out.Type) && isHTTPURL(out.Type)
	for k, raw := range members {
		if isItemMember(k) || (!extensionType && !isHTTPURL(k)) {
			continue
		}
		if out.Extensions == nil {
			out.Extensions = make(map[string]json.RawMessage, 2)
		}
		out.Extensions[k] = append(json.RawMessage(nil), raw...)
	}
	*it = out
	return nil
}

func decodeItemCustom(raw json.RawMessage) (map[string]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, &ContentItemError{Index: -1, Field: "custom", Rule: "T-DL-08",
			Message: "must be an object whose values are strings"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, decodeError(-1, "custom", err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key in order, not at random
	out := make(map[string]string, len(m))
	for _, k := range keys {
		v := m[k]
		var s string
		if kindOf(string(v)) != kindString || json.Unmarshal(v, &s) != nil {
			what := jsonKindName(kindOf(string(v)))
			return nil, &ContentItemError{Index: -1, Field: "custom." + truncate(k, 64), Rule: "T-DL-08",
				Message: "custom values must be strings (an empty string is allowed), not " + what}
		}
		out[k] = s
	}
	return out, nil
}

func jsonKindName(k jsonKind) string {
	switch k {
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	case kindBool:
		return "a boolean"
	case kindNull:
		return "null"
	}
	return "another value"
}

// decodeError turns an encoding/json error into a *ContentItemError; prefix is
// the path of the decoded value ("" for the item, "custom", "options").
func decodeError(index int, prefix string, err error) *ContentItemError {
	var ce *ContentItemError
	if errors.As(err, &ce) {
		return ce
	}
	join := func(a, b string) string {
		switch {
		case a == "":
			return b
		case b == "":
			return a
		}
		return a + "." + b
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := "another type"
		if te.Type != nil {
			switch te.Type.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				want = "an integer"
			case reflect.Float32, reflect.Float64:
				want = "a number"
			case reflect.String:
				want = "a string"
			case reflect.Bool:
				want = "a boolean"
			case reflect.Pointer, reflect.Struct, reflect.Map:
				want = "an object"
			case reflect.Slice, reflect.Array:
				want = "an array"
			}
		}
		return &ContentItemError{Index: index, Field: join(prefix, te.Field),
			Message: "must be " + want + ", not " + te.Value}
	}
	return &ContentItemError{Index: index, Field: prefix, Message: "is not valid JSON"}
}

// MarshalJSON renders the item in the wire form of the content_items claim:
// the modelled members (empty ones left out) followed by Extensions, verbatim
// (compacted), in key order. Extension keys that name a modelled member are
// skipped. HTML characters are not escaped.
func (it ContentItem) MarshalJSON() ([]byte, error) {
	type plain ContentItem
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode((*plain)(&it)); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if len(it.Extensions) == 0 {
		return out, nil
	}
	keys := make([]string, 0, len(it.Extensions))
	for k := range it.Extensions {
		if !isItemMember(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out = out[:len(out)-1] // drop the closing brace
	for _, k := range keys {
		var val bytes.Buffer
		if err := json.Compact(&val, it.Extensions[k]); err != nil {
			return nil, errors.New("lti: content item extension " + strconv.Quote(truncate(k, 64)) + " is not valid JSON")
		}
		out = append(out, ',')
		out = appendJSONString(out, k)
		out = append(out, ':')
		out = append(out, val.Bytes()...)
	}
	return append(out, '}'), nil
}

// appendJSONString appends s as a JSON string without HTML escaping.
func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// DecodeDeepLinkingBody decodes the body of POST /api/deeplinking/form
// (service interface §4.5): contentItems (a required array, possibly empty) and
// options (optional). A failure is a *ContentItemError naming the item and the
// member ("contentItems[2].custom.quiz_id: …"), or with Index -1 the body, the
// contentItems member or the options. It does not validate the items: call
// ValidateContentItems and ValidateOptions (DeepLinkingResponse does).
func DecodeDeepLinkingBody(body []byte) ([]ContentItem, DeepLinkingOptions, error) {
	var opts DeepLinkingOptions
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, opts, &ContentItemError{Index: -1, Message: "the body must be a JSON object"}
	}
	var v struct {
		ContentItems json.RawMessage `json:"contentItems"`
		Options      json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(trimmed, &v); err != nil {
		return nil, opts, &ContentItemError{Index: -1, Message: "the body must be a JSON object"}
	}
	switch kindOf(string(v.ContentItems)) {
	case kindArray:
	case kindNone, kindNull:
		return nil, opts, &ContentItemError{Index: -1, Field: "contentItems", Message: "required (an array, possibly empty)"}
	default:
		return nil, opts, &ContentItemError{Index: -1, Field: "contentItems", Message: "must be an array"}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(v.ContentItems, &raws); err != nil {
		return nil, opts, &ContentItemError{Index: -1, Field: "contentItems", Message: "must be an array"}
	}
	items := make([]ContentItem, len(raws))
	for i, raw := range raws {
		if kindOf(string(raw)) != kindObject {
			return nil, opts, &ContentItemError{Index: i, Message: "a content item must be a JSON object"}
		}
		if err := items[i].UnmarshalJSON(raw); err != nil {
			ce := decodeError(i, "", err)
			ce.Index = i
			return nil, opts, ce
		}
	}
	switch kindOf(string(v.Options)) {
	case kindNone, kindNull:
	case kindObject:
		if err := json.Unmarshal(v.Options, &opts); err != nil {
			return nil, DeepLinkingOptions{}, decodeError(-1, "options", err)
		}
	default:
		return nil, opts, &ContentItemError{Index: -1, Field: "options", Message: "must be an object"}
	}
	return items, opts, nil
}

// ValidateOptions refuses success and error options together (a message or log
// with an errMessage or errLog): the platform could not tell which applies.
// The error is a *ContentItemError with Index -1 and Field "options".
func ValidateOptions(o DeepLinkingOptions) error {
	if (o.Message != "" || o.Log != "") && (o.ErrMessage != "" || o.ErrLog != "") {
		return &ContentItemError{Index: -1, Field: "options",
			Message: "message/log (success) and errMessage/errLog (error) cannot be sent together"}
	}
	return nil
}

// ValidateContentItems checks the items against service interface §2.6 / DL §3
// and, when settings is not nil, against the platform's deep_linking_settings:
//
//   - more than one item needs accept_multiple true (T-DL-05; reported at contentItems[1]);
//   - type is link, ltiResourceLink, file, html, image or a fully-qualified http(s)
//     URL (DL §3.7), and is one of accept_types (T-DL-04; standard types match
//     case-insensitively, so "LtiResourceLink" accepts ltiResourceLink);
//   - link, file and image need url, html needs html, embed needs html, an icon
//     or thumbnail needs url, a link's iframe needs src;
//   - every URL (url, icon.url, thumbnail.url, iframe.src) is absolute http(s);
//   - widths and heights are ≥ 0;
//   - lineItem.scoreMaximum is > 0, and lineItem is refused when accept_lineitem
//     is false (T-DL-06);
//   - available, submission and expiresAt are RFC 3339 date-times, a window's
//     end not before its start;
//   - extension members of standard types are named by URLs and hold valid JSON.
//
// Custom values are strings by construction (T-DL-08 is enforced when decoding).
// Members that DL §3 defines for another type are allowed and checked the same.
// It returns the first failure, items in order.
func ValidateContentItems(items []ContentItem, settings *DeepLinkingSettings) *ContentItemError {
	if settings != nil && len(items) > 1 && (settings.AcceptMultiple == nil || !*settings.AcceptMultiple) {
		return &ContentItemError{Index: 1, Rule: "T-DL-05",
			Message: "the platform accepts a single content item (accept_multiple is not true)"}
	}
	for i := range items {
		if e := validateItem(&items[i], settings); e != nil {
			e.Index = i
			return e
		}
	}
	return nil
}

func validateItem(it *ContentItem, settings *DeepLinkingSettings) *ContentItemError {
	fail := func(field, msg string) *ContentItemError {
		return &ContentItemError{Field: field, Message: msg}
	}
	standard := isStandardType(it.Type)
	switch {
	case it.Type == "":
		return fail("type", "required")
	case !standard && !isHTTPURL(it.Type):
		return fail("type", strconv.Quote(truncate(it.Type, 64))+
			" is not link, ltiResourceLink, file, html, image or a fully-qualified URL")
	}
	if settings != nil && !acceptsType(settings.AcceptTypes, it.Type) {
		e := fail("type", strconv.Quote(truncate(it.Type, 64))+" is not in the platform's accept_types")
		e.Rule = "T-DL-04"
		return e
	}
	// Required members per type.
	switch it.Type {
	case ContentItemLink, ContentItemFile, ContentItemImage:
		if it.URL == "" {
			return fail("url", "required for type "+it.Type)
		}
	case ContentItemHTML:
		if it.HTML == "" {
			return fail("html", "required for type html")
		}
	}
	if it.URL != "" && !isHTTPURL(it.URL) {
		return fail("url", "must be an absolute http(s) URL")
	}
	if e := checkImage("icon", it.Icon); e != nil {
		return e
	}
	if e := checkImage("thumbnail", it.Thumbnail); e != nil {
		return e
	}
	if it.Embed != nil && it.Embed.HTML == "" {
		return fail("embed.html", "required when embed is present")
	}
	if w := it.Window; w != nil {
		if e := checkDims("window", w.Width, w.Height); e != nil {
			return e
		}
	}
	if f := it.Iframe; f != nil {
		switch {
		case f.Src == "" && it.Type != ContentItemLTIResourceLink:
			return fail("iframe.src", "required when iframe is present")
		case f.Src != "" && !isHTTPURL(f.Src):
			return fail("iframe.src", "must be an absolute http(s) URL")
		}
		if e := checkDims("iframe", f.Width, f.Height); e != nil {
			return e
		}
	}
	if e := checkDims("", it.Width, it.Height); e != nil {
		return e
	}
	if li := it.LineItem; li != nil {
		if settings != nil && settings.AcceptLineItem != nil && !*settings.AcceptLineItem {
			e := fail("lineItem", "the platform does not accept line items (accept_lineitem is false)")
			e.Rule = "T-DL-06"
			return e
		}
		if !(li.ScoreMaximum > 0) || math.IsInf(li.ScoreMaximum, 0) {
			return fail("lineItem.scoreMaximum", "required: a positive number")
		}
	}
	if e := checkTimeWindow("available", it.Available); e != nil {
		return e
	}
	if e := checkTimeWindow("submission", it.Submission); e != nil {
		return e
	}
	if it.ExpiresAt != "" && !isDateTime(it.ExpiresAt) {
		return fail("expiresAt", "must be an RFC 3339 date-time (e.g. 2014-03-05T12:34:56Z)")
	}
	keys := make([]string, 0, len(it.Extensions))
	for k := range it.Extensions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := truncate(k, 128)
		switch {
		case isItemMember(k):
			return fail(field, "an extension member cannot have the name of a content item member")
		case standard && !isHTTPURL(k):
			return fail(field, "extension members must be named by a fully-qualified URL")
		case !json.Valid(it.Extensions[k]):
			return fail(field, "is not valid JSON")
		}
	}
	return nil
}

func checkImage(field string, img *Image) *ContentItemError {
	if img == nil {
		return nil
	}
	switch {
	case img.URL == "":
		return &ContentItemError{Field: field + ".url", Message: "required when " + field + " is present"}
	case !isHTTPURL(img.URL):
		return &ContentItemError{Field: field + ".url", Message: "must be an absolute http(s) URL"}
	}
	return checkDims(field, img.Width, img.Height)
}

func checkDims(prefix string, width, height int) *ContentItemError {
	name := func(f string) string {
		if prefix == "" {
			return f
		}
		return prefix + "." + f
	}
	switch {
	case width < 0:
		return &ContentItemError{Field: name("width"), Message: "must not be negative"}
	case height < 0:
		return &ContentItemError{Field: name("height"), Message: "must not be negative"}
	}
	return nil
}

func checkTimeWindow(field string, w *TimeWindow) *ContentItemError {
	if w == nil {
		return nil
	}
	const msg = "must be an RFC 3339 date-time (e.g. 2018-02-06T20:05:02Z)"
	var start, end time.Time
	var err error
	if w.StartDateTime != "" {
		if start, err = time.Parse(time.RFC3339, w.StartDateTime); err != nil {
			return &ContentItemError{Field: field + ".startDateTime", Message: msg}
		}
	}
	if w.EndDateTime != "" {
		if end, err = time.Parse(time.RFC3339, w.EndDateTime); err != nil {
			return &ContentItemError{Field: field + ".endDateTime", Message: msg}
		}
	}
	if !start.IsZero() && !end.IsZero() && end.Before(start) {
		return &ContentItemError{Field: field + ".endDateTime", Message: "must not be before startDateTime"}
	}
	return nil
}

func isDateTime(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

// acceptsType reports whether accept_types admits t: extension types exactly,
// standard types ignoring case (T-DL-04: platforms send "LtiResourceLink",
// "ltiresourcelink").
func acceptsType(accept []string, t string) bool {
	standard := isStandardType(t)
	for _, a := range accept {
		a = strings.TrimSpace(a)
		if a == t || (standard && strings.EqualFold(a, t)) {
			return true
		}
	}
	return false
}

// isHTTPURL reports whether s is an absolute http or https URL with a host and
// no whitespace or control characters.
func isHTTPURL(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.Hostname() == "" {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return true
	}
	return false
}

// DeepLinkingResponseParams is what DeepLinkingResponse needs.
type DeepLinkingResponseParams struct {
	// Request is the validated LtiDeepLinkingRequest: its iss becomes the aud,
	// its deployment_id and deep_linking_settings (return URL, accept_*, data)
	// shape the response. Raw, when present, lets data be echoed as sent.
	Request *Claims
	// ClientID is the tool's client_id at the platform: the JWT's iss.
	ClientID string
	// KID and Key are the registration's tool key (published in the tool JWKS);
	// the kid goes in the header (T-DL-02, D2L requires it).
	KID string
	Key *rsa.PrivateKey
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
	case p.Key.N == nil || p.Key.N.BitLen() < 2048:
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
	if err := hdr.Set(jws.TypeKey, "JWT"); err != nil {
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
	obj := trimJSON(string(payload))
	if kindOf(obj) != kindObject {
		return "", false
	}
	settings := ""
	for it := newObjectIter(obj); ; {
		k, v, ok := it.next()
		if !ok {
			break
		}
		if k == ClaimDeepLinkingSettings {
			settings = v
		}
	}
	if kindOf(settings) != kindObject {
		return "", false
	}
	data := ""
	for it := newObjectIter(settings); ; {
		k, v, ok := it.next()
		if !ok {
			break
		}
		if k == "data" {
			data = v
		}
	}
	return data, kindOf(data) == kindString
}
