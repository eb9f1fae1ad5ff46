package advantage

import (
	"math"
	"testing"
)

func TestValidateLineItem(t *testing.T) {
	ok := func() LineItem { return LineItem{Label: "Quiz 1", ScoreMaximum: 10} }
	for _, tc := range []struct {
		name  string
		mod   func(*LineItem)
		field string // "" = valid
	}{
		{"minimal", func(*LineItem) {}, ""},
		{"fractional maximum", func(li *LineItem) { li.ScoreMaximum = 0.5 }, ""},
		{"dates Z", func(li *LineItem) {
			li.StartDateTime, li.EndDateTime = "2026-09-01T08:00:00Z", "2026-09-30T23:59:59.999Z"
		}, ""},
		{"dates offset", func(li *LineItem) { li.StartDateTime = "2017-04-16T18:54:36.736+00:00" }, ""},
		{"dates basic offset", func(li *LineItem) { li.EndDateTime = "2026-09-30T23:59:59-0500" }, ""},
		{"label missing", func(li *LineItem) { li.Label = "" }, "label"},
		{"label blank", func(li *LineItem) { li.Label = " \t\n" }, "label"},
		{"T-AGS-06 scoreMaximum zero", func(li *LineItem) { li.ScoreMaximum = 0 }, "scoreMaximum"},
		{"T-AGS-06 scoreMaximum negative", func(li *LineItem) { li.ScoreMaximum = -5 }, "scoreMaximum"},
		{"scoreMaximum NaN", func(li *LineItem) { li.ScoreMaximum = math.NaN() }, "scoreMaximum"},
		{"scoreMaximum Inf", func(li *LineItem) { li.ScoreMaximum = math.Inf(1) }, "scoreMaximum"},
		{"start without zone", func(li *LineItem) { li.StartDateTime = "2026-09-01T08:00:00" }, "startDateTime"},
		{"start date only", func(li *LineItem) { li.StartDateTime = "2026-09-01" }, "startDateTime"},
		{"end garbage", func(li *LineItem) { li.EndDateTime = "next tuesday" }, "endDateTime"},
	} {
		li := ok()
		tc.mod(&li)
		fe := ValidateLineItem(&li)
		switch {
		case tc.field == "" && fe != nil:
			t.Errorf("%s: %v", tc.name, fe)
		case tc.field != "" && (fe == nil || fe.Field != tc.field):
			t.Errorf("%s: got %v, want an error on %s", tc.name, fe, tc.field)
		case fe != nil && (fe.Message == "" || fe.Error() != fe.Field+": "+fe.Message):
			t.Errorf("%s: message %q", tc.name, fe.Error())
		}
	}
	if ValidateLineItem(nil) == nil {
		t.Error("nil line item accepted")
	}
}

func TestValidateScore(t *testing.T) {
	ok := func() Score {
		return Score{UserID: "u1", ScoreGiven: ptr(8.0), ScoreMaximum: ptr(10.0), ActivityProgress: "Completed", GradingProgress: "FullyGraded"}
	}
	for _, tc := range []struct {
		name  string
		mod   func(*Score)
		field string
	}{
		{"full", func(*Score) {}, ""},
		{"no score (clears it)", func(s *Score) { s.ScoreGiven, s.ScoreMaximum = nil, nil }, ""},
		{"zero score", func(s *Score) { s.ScoreGiven = ptr(0.0) }, ""},
		{"score above maximum (extra credit)", func(s *Score) { s.ScoreGiven = ptr(12.0) }, ""},
		{"every activityProgress", func(s *Score) { s.ActivityProgress = "InProgress" }, ""},
		{"every gradingProgress", func(s *Score) { s.GradingProgress = "PendingManual" }, ""},
		{"submission", func(s *Score) {
			s.Submission = &Submission{StartedAt: "2026-01-01T10:00:00Z", SubmittedAt: "2026-01-01T11:00:00.5+01:00"}
		}, ""},
		{"userId missing", func(s *Score) { s.UserID = "" }, "userId"},
		{"userId blank", func(s *Score) { s.UserID = "  " }, "userId"},
		{"activityProgress missing", func(s *Score) { s.ActivityProgress = "" }, "activityProgress"},
		{"activityProgress unknown", func(s *Score) { s.ActivityProgress = "Done" }, "activityProgress"},
		{"activityProgress wrong case", func(s *Score) { s.ActivityProgress = "completed" }, "activityProgress"},
		{"gradingProgress missing", func(s *Score) { s.GradingProgress = "" }, "gradingProgress"},
		{"gradingProgress unknown", func(s *Score) { s.GradingProgress = "Graded" }, "gradingProgress"},
		{"T-AGS-07 scoreGiven negative", func(s *Score) { s.ScoreGiven = ptr(-0.5) }, "scoreGiven"},
		{"scoreGiven NaN", func(s *Score) { s.ScoreGiven = ptr(math.NaN()) }, "scoreGiven"},
		{"scoreGiven without scoreMaximum", func(s *Score) { s.ScoreMaximum = nil }, "scoreMaximum"},
		{"scoreMaximum zero", func(s *Score) { s.ScoreMaximum = ptr(0.0) }, "scoreMaximum"},
		{"scoreMaximum negative without scoreGiven", func(s *Score) { s.ScoreGiven, s.ScoreMaximum = nil, ptr(-1.0) }, "scoreMaximum"},
		{"startedAt not ISO", func(s *Score) { s.Submission = &Submission{StartedAt: "yesterday"} }, "submission.startedAt"},
		{"submittedAt without zone", func(s *Score) { s.Submission = &Submission{SubmittedAt: "2026-01-01T11:00:00"} }, "submission.submittedAt"},
		{"submittedAt before startedAt", func(s *Score) {
			s.Submission = &Submission{StartedAt: "2026-01-01T11:00:00Z", SubmittedAt: "2026-01-01T11:30:00+01:00"}
		}, "submission.submittedAt"},
	} {
		s := ok()
		tc.mod(&s)
		fe := ValidateScore(&s)
		switch {
		case tc.field == "" && fe != nil:
			t.Errorf("%s: %v", tc.name, fe)
		case tc.field != "" && (fe == nil || fe.Field != tc.field):
			t.Errorf("%s: got %v, want an error on %s", tc.name, fe, tc.field)
		}
	}

	s := ok()
	s.ActivityProgress = "Initiated"
	if fe := ValidateScore(&s); fe != nil || s.ActivityProgress != "Initialized" {
		t.Errorf("Initiated: %v, rewritten to %q", fe, s.ActivityProgress)
	}
	if ValidateScore(nil) == nil {
		t.Error("nil score accepted")
	}
}
