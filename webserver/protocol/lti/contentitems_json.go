package lti

// The JSON of content items: the API body (service interface §4.5) in, the wire form of
// the content_items claim out.

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

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
