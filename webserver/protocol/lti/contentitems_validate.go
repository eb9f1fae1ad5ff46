package lti

// Validation of content items against DL §3 and the platform's deep_linking_settings
// (conformance §5: T-DL-04, T-DL-05, T-DL-06), before anything is signed.

import (
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
			" is not link, ltiResourceLink, file, html, image, ltiAssetProcessor or a fully-qualified URL")
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
	if e := checkAssetProcessorItem(it); e != nil {
		return e
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
