package lti

import (
	"encoding/json"
	"testing"
)

// Opening an ltik decodes its claims: a report review launch with the asset and report
// claims must cost about what a resource link launch does.
func BenchmarkParseValidatedClaimsReportReview(b *testing.B) {
	payload, _ := json.Marshal(apReviewClaims())
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := ParseValidatedClaims(payload); err != nil {
			b.Fatal(err)
		}
	}
}
