package lti

// AssetProcessorReport is the report member of an ltiAssetProcessor content item: where
// the platform sends report review launches of this processor (default: the tool's launch
// URL) and their custom parameters.
type AssetProcessorReport struct {
	URL    string            `json:"url,omitempty"`
	Custom map[string]string `json:"custom,omitempty"`
}

// checkAssetProcessorItem: report belongs to an ltiAssetProcessor only, and its url, when
// given, is an absolute http(s) URL.
func checkAssetProcessorItem(it *ContentItem) *ContentItemError {
	r := it.Report
	switch {
	case r == nil:
		return nil
	case it.Type != ContentItemLTIAssetProcessor:
		return &ContentItemError{Field: "report", Message: "only an ltiAssetProcessor item has a report"}
	case r.URL != "" && !isHTTPURL(r.URL):
		return &ContentItemError{Field: "report.url", Message: "must be an absolute http(s) URL"}
	}
	return nil
}
