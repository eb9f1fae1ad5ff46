package advantage

import (
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Report is an asset report in the simplified shape the integrator posts, which is also
// the Asset Report Service's JSON (LTI Asset Processor 1.0 §Asset Report). Timestamp is
// set to now when empty.
type Report struct {
	AssetID            string   `json:"assetId"`
	Type               string   `json:"type"`
	Timestamp          string   `json:"timestamp"`
	ProcessingProgress string   `json:"processingProgress"`
	Priority           *float64 `json:"priority,omitempty"`
	Title              string   `json:"title,omitempty"`
	Comment            string   `json:"comment,omitempty"`
	Result             string   `json:"result,omitempty"`
	ScoreGiven         *float64 `json:"scoreGiven,omitempty"`
	ScoreMaximum       *float64 `json:"scoreMaximum,omitempty"`
	IndicationColor    string   `json:"indicationColor,omitempty"`
	IndicationAlt      string   `json:"indicationAlt,omitempty"`
	ErrorCode          string   `json:"errorCode,omitempty"`
	VisibleToOwner     *bool    `json:"visibleToOwner,omitempty"`
}

// Vocabularies and bounds of a report.
var (
	processingProgress = []string{"Processed", "Processing", "PendingManual", "Failed", "NotProcessed", "NotReady"}
	// StandardReportErrorCodes are the spec's error codes; a tool may use its own.
	StandardReportErrorCodes = []string{"UNSUPPORTED_ASSET_TYPE", "ASSET_TOO_LARGE", "ASSET_TOO_SMALL", "EULA_NOT_ACCEPTED", "DOWNLOAD_FAILED"}
	hexColor                 = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)
	errorCodeToken           = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
)

const (
	maxReportID      = 255
	maxReportTitle   = 1024
	maxReportComment = 100 << 10
	maxReportResult  = 16 // Canvas's limit of result
	maxReportAlt     = 1024
	maxReportScore   = 1e9
)

// ValidateReport checks a report before it is sent, naming the first bad field:
// assetId and type required; processingProgress required and from the spec's list;
// priority a whole number 0–5 (0 when absent); timestamp ISO 8601 with a zone (now when
// absent); scoreGiven ≥ 0 with scoreMaximum > 0; indicationColor #RRGGBB with an
// indicationAlt; errorCode only on a Failed or NotProcessed report; lengths bounded.
func ValidateReport(r *Report, now time.Time) *FieldError {
	if r == nil {
		return &FieldError{Field: "", Message: "a report is required"}
	}
	if fe := requiredText("assetId", r.AssetID, maxReportID); fe != nil {
		return fe
	}
	if fe := requiredText("type", r.Type, maxReportID); fe != nil {
		return fe
	}
	if fe := oneOf("processingProgress", r.ProcessingProgress, processingProgress); fe != nil {
		return fe
	}
	if r.Priority == nil {
		zero := 0.0
		r.Priority = &zero
	} else if p := *r.Priority; p != math.Trunc(p) || p < 0 || p > 5 {
		return &FieldError{Field: "priority", Message: "must be a whole number from 0 (nothing notable) to 5 (urgent)"}
	}
	if r.Timestamp == "" {
		r.Timestamp = now.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	} else if fe := checkDateTime("timestamp", r.Timestamp); fe != nil {
		return fe
	}
	for _, f := range []struct {
		name, v string
		limit   int
	}{{"title", r.Title, maxReportTitle}, {"comment", r.Comment, maxReportComment}, {"result", r.Result, maxReportResult}, {"indicationAlt", r.IndicationAlt, maxReportAlt}} {
		if utf8.RuneCountInString(f.v) > f.limit {
			return &FieldError{Field: f.name, Message: "must be at most " + itoa(f.limit) + " characters"}
		}
	}
	if r.ScoreGiven != nil {
		if g := *r.ScoreGiven; !(g >= 0) || g > maxReportScore {
			return &FieldError{Field: "scoreGiven", Message: "must be a number of at least 0"}
		}
		if r.ScoreMaximum == nil {
			return &FieldError{Field: "scoreMaximum", Message: "is required with scoreGiven"}
		}
	}
	if r.ScoreMaximum != nil {
		if m := *r.ScoreMaximum; !(m > 0) || m > maxReportScore {
			return &FieldError{Field: "scoreMaximum", Message: "must be a number greater than 0"}
		}
		if r.ScoreGiven == nil {
			return &FieldError{Field: "scoreGiven", Message: "is required with scoreMaximum"}
		}
	}
	if r.IndicationColor != "" {
		if !hexColor.MatchString(r.IndicationColor) {
			return &FieldError{Field: "indicationColor", Message: "must be a hex colour #RRGGBB"}
		}
		if strings.TrimSpace(r.IndicationAlt) == "" {
			return &FieldError{Field: "indicationAlt", Message: "is required with indicationColor (what the colour means, for screen readers)"}
		}
	}
	if r.ErrorCode != "" {
		if r.ProcessingProgress != "Failed" && r.ProcessingProgress != "NotProcessed" {
			return &FieldError{Field: "errorCode", Message: "is only allowed when processingProgress is Failed or NotProcessed"}
		}
		if !errorCodeToken.MatchString(r.ErrorCode) {
			return &FieldError{Field: "errorCode", Message: "must be one of " + strings.Join(StandardReportErrorCodes, ", ") + ", or a code of your own of letters, digits and _.:- (at most 128)"}
		}
	}
	return nil
}

func requiredText(field, v string, limit int) *FieldError {
	switch {
	case strings.TrimSpace(v) == "":
		return &FieldError{Field: field, Message: "is required and must not be blank"}
	case len(v) > limit:
		return &FieldError{Field: field, Message: "must be at most " + itoa(limit) + " bytes"}
	}
	return nil
}

// ValidateDateTime checks an optional ISO 8601 date-time with a zone, naming field.
func ValidateDateTime(field, v string) *FieldError { return checkDateTime(field, v) }
