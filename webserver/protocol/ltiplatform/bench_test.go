package ltiplatform

import (
	"context"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testjws"
)

// BenchmarkVerifyDeepLinkingResponse is a full verification of a response with the
// five Canvas-style content items.
func BenchmarkVerifyDeepLinkingResponse(b *testing.B) {
	tool, _ := toolTestKeys(b)
	token := testjws.SignClaims(b, toolTestHeader(), toolTestDLClaims(), tool)
	ctx, req, key := context.Background(), toolTestDLRequest(), toolTestKeyFunc(b)
	b.SetBytes(int64(len(token)))
	b.ReportAllocs()
	for b.Loop() {
		if _, e := VerifyDeepLinkingResponse(ctx, token, req, key, toolTestNow, toolTestSkew); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkVerifyClientAssertion is PeekAssertionClient and VerifyClientAssertion
// of a pylti1.3-like assertion, as the token endpoint runs them.
func BenchmarkVerifyClientAssertion(b *testing.B) {
	tool, _ := toolTestKeys(b)
	token := testjws.SignClaims(b, toolTestHeader(), toolTestAssertionClaims(), tool)
	ctx, auds, key := context.Background(), toolTestAudiences(), toolTestKeyFunc(b)
	b.SetBytes(int64(len(token)))
	b.ReportAllocs()
	for b.Loop() {
		client, e := PeekAssertionClient(token)
		if e != nil {
			b.Fatal(e)
		}
		if _, e := VerifyClientAssertion(ctx, token, client, auds, key, toolTestNow, toolTestSkew); e != nil {
			b.Fatal(e)
		}
	}
}
