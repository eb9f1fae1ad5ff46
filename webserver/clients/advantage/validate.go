package advantage

import (
	"math"
	"strings"
	"time"
)

// FieldError says which field of an integrator's line item or score is wrong and why; the
// HTTP handlers answer 400 with it.
type FieldError struct {
	Field   string // JSON name, dotted for nested fields: "submission.submittedAt"
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidateLineItem checks a line item before it is created or updated: label present and
// not blank, scoreMaximum a number > 0 (T-AGS-06), startDateTime and endDateTime ISO 8601
// with a time zone when present, submissionReview well formed when present (T-SR-08).
func ValidateLineItem(item *LineItem) *FieldError {
	switch {
	case item == nil:
		return &FieldError{Field: "", Message: "a line item is required"}
	case strings.TrimSpace(item.Label) == "":
		return &FieldError{Field: "label", Message: "is required and must not be blank"}
	case !(item.ScoreMaximum > 0) || math.IsInf(item.ScoreMaximum, 0):
		return &FieldError{Field: "scoreMaximum", Message: "must be a number greater than 0"}
	}
	if fe := checkDateTime("startDateTime", item.StartDateTime); fe != nil {
		return fe
	}
	if fe := checkDateTime("endDateTime", item.EndDateTime); fe != nil {
		return fe
	}
	_, fe := item.SubmissionReview() // T-SR-08
	return fe
}

// Activity and grading progress values (AGS §3.4.6, §3.4.7).
var (
	activityProgress = []string{"Initialized", "Started", "InProgress", "Submitted", "Completed"}
	gradingProgress  = []string{"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
)

// ValidateScore checks a score before it is posted: userId, activityProgress and
// gradingProgress required and from the spec's vocabularies ("Initiated", an old spelling,
// is rewritten to "Initialized"); scoreGiven ≥ 0 (it may exceed scoreMaximum) (T-AGS-07);
// scoreMaximum required with scoreGiven, and > 0 when present; submission dates ISO 8601
// with a time zone, submittedAt not before startedAt. Timestamp is not checked: PostScore
// sets it.
func ValidateScore(s *Score) *FieldError {
	if s == nil {
		return &FieldError{Field: "", Message: "a score is required"}
	}
	if strings.TrimSpace(s.UserID) == "" {
		return &FieldError{Field: "userId", Message: "is required"}
	}
	if s.ActivityProgress == "Initiated" {
		s.ActivityProgress = "Initialized"
	}
	if fe := oneOf("activityProgress", s.ActivityProgress, activityProgress); fe != nil {
		return fe
	}
	if fe := oneOf("gradingProgress", s.GradingProgress, gradingProgress); fe != nil {
		return fe
	}
	if s.ScoreGiven != nil {
		if g := *s.ScoreGiven; !(g >= 0) || math.IsInf(g, 0) {
			return &FieldError{Field: "scoreGiven", Message: "must be a number of at least 0"}
		}
		if s.ScoreMaximum == nil {
			return &FieldError{Field: "scoreMaximum", Message: "is required with scoreGiven"}
		}
	}
	if s.ScoreMaximum != nil {
		if m := *s.ScoreMaximum; !(m > 0) || math.IsInf(m, 0) {
			return &FieldError{Field: "scoreMaximum", Message: "must be a number greater than 0"}
		}
	}
	if s.Submission != nil {
		if fe := checkDateTime("submission.startedAt", s.Submission.StartedAt); fe != nil {
			return fe
		}
		if fe := checkDateTime("submission.submittedAt", s.Submission.SubmittedAt); fe != nil {
			return fe
		}
		if s.Submission.StartedAt != "" && s.Submission.SubmittedAt != "" {
			started, _ := parseDateTime(s.Submission.StartedAt)
			submitted, _ := parseDateTime(s.Submission.SubmittedAt)
			if submitted.Before(started) {
				return &FieldError{Field: "submission.submittedAt", Message: "must not be before submission.startedAt"}
			}
		}
	}
	return nil
}

func oneOf(field, v string, allowed []string) *FieldError {
	if v == "" {
		return &FieldError{Field: field, Message: "is required (" + strings.Join(allowed, ", ") + ")"}
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return &FieldError{Field: field, Message: "must be one of " + strings.Join(allowed, ", ")}
}

func checkDateTime(field, v string) *FieldError {
	if v == "" {
		return nil
	}
	if _, ok := parseDateTime(v); !ok {
		return &FieldError{Field: field, Message: "must be an ISO 8601 date-time with a time zone, e.g. 2026-04-16T18:54:36.736Z"}
	}
	return nil
}

// ISO 8601 date-times with a zone designator: RFC 3339 (Z or ±hh:mm) and the basic
// offset ±hhmm. Fractional seconds are accepted by both.
var dateTimeLayouts = []string{time.RFC3339, "2006-01-02T15:04:05Z0700"}

func parseDateTime(v string) (time.Time, bool) {
	for _, layout := range dateTimeLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ValidateReceivedScore checks a score a tool posted to a platform (platform mode, P-AGS-07):
// what ValidateScore checks, and the timestamp the tool must send (AGS §3.4.3): an ISO 8601
// date-time with a time zone.
func ValidateReceivedScore(s *Score) *FieldError {
	if s != nil && s.Timestamp == "" {
		return &FieldError{Field: "timestamp", Message: "is required"}
	}
	if fe := ValidateScore(s); fe != nil {
		return fe
	}
	return checkDateTime("timestamp", s.Timestamp)
}
