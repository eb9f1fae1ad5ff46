package advantage

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// SubmissionReview is a line item's submissionReview (AGS §3.2.8): the platform offers
// a "review this submission" launch (LtiSubmissionReviewRequest) for the learners whose
// activity progress is one of ReviewableStatus, to URL (default: the tool's launch URL)
// with Custom added to the launch's custom parameters. The line item keeps it as sent, in
// Extensions["submissionReview"], so members this type does not model survive a round trip.
type SubmissionReview struct {
	ReviewableStatus []string          `json:"reviewableStatus"`
	Label            string            `json:"label,omitempty"`
	URL              string            `json:"url,omitempty"`
	Custom           map[string]string `json:"custom,omitempty"`
}

// Bounds of a submissionReview, so one line item cannot carry an unbounded payload.
const (
	maxReviewLabel  = 1024
	maxReviewURL    = 2048
	maxReviewCustom = 100
)

const submissionReviewKey = "submissionReview"

// SubmissionReview returns the line item's submissionReview, nil when it has none (or
// null), or the field that is wrong.
func (li *LineItem) SubmissionReview() (*SubmissionReview, *FieldError) {
	raw, ok := li.Extensions[submissionReviewKey]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	return parseSubmissionReview(raw)
}

func reviewError(member, message string) *FieldError {
	field := submissionReviewKey
	if member != "" {
		field += "." + member
	}
	return &FieldError{Field: field, Message: message}
}

// parseSubmissionReview checks raw member by member, naming the first wrong one:
// reviewableStatus required, a non-empty list of distinct activity progress values;
// label a string; url an absolute http(s) URL; custom an object of strings (no null, as
// in a deep-linking custom); other members only when named by a URL (extensions).
func parseSubmissionReview(raw json.RawMessage) (*SubmissionReview, *FieldError) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return nil, reviewError("", "must be an object")
	}
	var sr SubmissionReview
	for _, k := range slices.Sorted(maps.Keys(members)) {
		v := members[k]
		switch k {
		case "reviewableStatus":
			if err := json.Unmarshal(v, &sr.ReviewableStatus); err != nil || sr.ReviewableStatus == nil {
				return nil, reviewError(k, "must be an array of activity progress values ("+strings.Join(activityProgress, ", ")+")")
			}
		case "label":
			if err := json.Unmarshal(v, &sr.Label); err != nil || isNull(v) {
				return nil, reviewError(k, "must be a string")
			}
		case "url":
			if err := json.Unmarshal(v, &sr.URL); err != nil || isNull(v) {
				return nil, reviewError(k, "must be a string")
			}
		case "custom":
			var custom map[string]*string
			if err := json.Unmarshal(v, &custom); err != nil || custom == nil {
				return nil, reviewError(k, "must be an object whose values are strings")
			}
			sr.Custom = make(map[string]string, len(custom))
			for ck, cv := range custom {
				if cv == nil {
					return nil, reviewError(k+"."+ck, "must be a string, not null")
				}
				if ck == "" {
					return nil, reviewError(k, "must not have an empty name")
				}
				sr.Custom[ck] = *cv
			}
		default:
			if !isExtensionKey(k) {
				return nil, reviewError(k, "is not a submissionReview member (reviewableStatus, label, url, custom)")
			}
		}
	}
	if fe := sr.check(); fe != nil {
		return nil, fe
	}
	return &sr, nil
}

func (sr *SubmissionReview) check() *FieldError {
	switch {
	case len(sr.ReviewableStatus) == 0:
		return reviewError("reviewableStatus", "is required: at least one of "+strings.Join(activityProgress, ", "))
	case len(sr.Label) > maxReviewLabel:
		return reviewError("label", "must be at most "+strconv.Itoa(maxReviewLabel)+" bytes")
	case len(sr.URL) > maxReviewURL:
		return reviewError("url", "must be at most "+strconv.Itoa(maxReviewURL)+" bytes")
	case len(sr.Custom) > maxReviewCustom:
		return reviewError("custom", "must have at most "+strconv.Itoa(maxReviewCustom)+" members")
	}
	for i, s := range sr.ReviewableStatus {
		field := "reviewableStatus[" + strconv.Itoa(i) + "]"
		if !slices.Contains(activityProgress, s) {
			return reviewError(field, "must be one of "+strings.Join(activityProgress, ", "))
		}
		if slices.Index(sr.ReviewableStatus, s) != i {
			return reviewError(field, strconv.Quote(s)+" is listed twice")
		}
	}
	if sr.URL != "" {
		if u, err := url.Parse(sr.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
			return reviewError("url", "must be an absolute http(s) URL without a fragment")
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
