package lti

// Content items of Deep Linking 2.0 (DL §3, service interface §2.6) as the integrator
// sends them: the model here, its JSON codec in contentitems_json.go, and its validation
// against the platform's deep_linking_settings in contentitems_validate.go.

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Content item types (DL §3.1–3.5). Any other type must be a fully-qualified URL (DL §3.7).
const (
	ContentItemLink            = "link"
	ContentItemLTIResourceLink = "ltiResourceLink"
	ContentItemFile            = "file"
	ContentItemHTML            = "html"
	ContentItemImage           = "image"
	// ContentItemLTIAssetProcessor attaches an asset processor to an assignment (LTI Asset
	// Processor 1.0; contentitems_assetprocessor.go).
	ContentItemLTIAssetProcessor = "ltiAssetProcessor"
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
	// Report is an ltiAssetProcessor's report review launch: its URL and custom parameters.
	Report *AssetProcessorReport `json:"report,omitempty"`

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
	"width", "height", "report"}

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
	case ContentItemLink, ContentItemLTIResourceLink, ContentItemFile, ContentItemHTML, ContentItemImage,
		ContentItemLTIAssetProcessor:
		return true
	}
	return false
}
