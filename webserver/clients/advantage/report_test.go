package advantage

import (
	"testing"
	"time"
)

func TestValidateReportFillsDefaults(t *testing.T) {
	now := time.Date(2026, 11, 25, 21, 0, 0, 123456000, time.UTC)
	r := Report{AssetID: "a", Type: "originality", ProcessingProgress: "Processed"}
	if fe := ValidateReport(&r, now); fe != nil {
		t.Fatal(fe)
	}
	if r.Timestamp != "2026-11-25T21:00:00.123456Z" || r.Priority == nil || *r.Priority != 0 {
		t.Fatalf("defaults: timestamp %q priority %v", r.Timestamp, r.Priority)
	}
	// errorCode: any of the spec's codes with Failed, and a tool's own.
	for _, code := range append(StandardReportErrorCodes, "ACME_QUOTA") {
		r := Report{AssetID: "a", Type: "t", ProcessingProgress: "Failed", ErrorCode: code}
		if fe := ValidateReport(&r, now); fe != nil {
			t.Errorf("%s: %v", code, fe)
		}
	}
	r = Report{AssetID: "a", Type: "t", ProcessingProgress: "Processed", ErrorCode: "DOWNLOAD_FAILED"}
	if fe := ValidateReport(&r, now); fe == nil || fe.Field != "errorCode" {
		t.Errorf("errorCode on a Processed report: %v", fe)
	}
	r = Report{AssetID: "a", Type: "t", ProcessingProgress: "Processed", ScoreGiven: ptr(3.0)}
	if fe := ValidateReport(&r, now); fe == nil || fe.Field != "scoreMaximum" {
		t.Errorf("scoreGiven alone: %v", fe)
	}
}

func BenchmarkValidateReport(b *testing.B) {
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r := Report{AssetID: "dd33081e-81ba-4651-b528-098315f8a346", Type: "originality", ProcessingProgress: "Processed",
			Priority: ptr(5.0), ScoreGiven: ptr(83.0), ScoreMaximum: ptr(100.0), IndicationColor: "#EC0000",
			IndicationAlt: "High percentage of matched text.", Title: "Originality", Result: "83%"}
		if fe := ValidateReport(&r, now); fe != nil {
			b.Fatal(fe)
		}
	}
}
