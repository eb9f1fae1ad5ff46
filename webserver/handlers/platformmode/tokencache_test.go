package platformmode_test

import (
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

// TestVerifiedAccessTokens: a tool's access token is verified once per replica and then
// recognised by its hash (tokencache.go); forged tokens add nothing, and a token stops
// working as soon as the key that signed it is no longer held (P-NRPS-01).
func TestVerifiedAccessTokens(t *testing.T) {
	h := newHarness(t, nil)
	seedCourse(h, "course-1", 3)
	li := h.data.AddLineItem("course-1", h.reg.Name, datasim.LineItem{Label: "Quiz", ScoreMaximum: 10})
	memberships, _, _, _ := serviceURLs(t, h.servedLaunch("course-1", li))
	tok := h.token(scopeNRPS)
	for range 3 {
		if ans := h.call("GET", memberships, tok, "", "", nil); ans.Status != 200 {
			t.Fatalf("%d %s", ans.Status, ans.Body)
		}
	}
	if n := h.platform.VerifiedTokens(); n != 1 {
		t.Fatalf("%d tokens remembered, want 1", n)
	}

	// The attack: a flood of forged tokens (a valid one with another signature) grows nothing.
	for i := range 50 {
		forged := tok[:len(tok)-6] + string(rune('A'+i%26)) + "AAAAA"
		refused(t, h.call("GET", memberships, forged, "", "", nil), 401, ltiplatform.CodeInvalidAccessToken)
	}
	if n := h.platform.VerifiedTokens(); n != 1 {
		t.Fatalf("%d tokens remembered after forged ones, want 1", n)
	}

	// The signing key retired (a new key alone in the keyring): the remembered token is refused.
	next, err := keyring.Signing.NewKey(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.signer.Replace([]keyring.SigningKey{next}); err != nil {
		t.Fatal(err)
	}
	refused(t, h.call("GET", memberships, tok, "", "", nil), 401, ltiplatform.CodeInvalidAccessToken)
}
