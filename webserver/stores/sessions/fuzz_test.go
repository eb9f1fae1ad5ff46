package sessions

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
)

// fuzzTokens were sealed once with fuzzKey at t0 for an hour, payload {"sub":"fuzz"}. They
// are constants because the fuzzing workers are other processes: a token sealed in one would
// be unknown to the others. (To regenerate: Seal with fuzzKey and a clock at t0.)
var fuzzTokens = map[string]string{
	"eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoiZnV6emtleSIsInR5cCI6Imx0aW9wLWx0aWsiLCJ6aXAiOiJERUYifQ..BP2w6IDuiZOYiBUT.si_NFgM-BZKtF73KiWe1Djk7QAmDShDRVLWBAvayz36pruYb7nR9Z7No838rkbnF755zwzTluFq6J9gAuap6X0jWh4TYGQs-BAa4rMEkveuMXYJvfYxyxvroTg78KWml2A.qg01OZ5u0s7F6BqQLpFE-A":      PurposeLTIK,
	"eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoiZnV6emtleSIsInR5cCI6Imx0aW9wLXN0YXRlIiwiemlwIjoiREVGIn0..JJalO949xnsrBzQa.JbIv1p3xSFqEcJbEE0gS3uNwwFsyZYvjyOQJCxWeprS9nWJoaP1r3Z_TfZfr9VezWDeuY8kbB8RSogoeN3wqW0GVBJCtQg6TArLFN5OqiOtjunq4z7yP-RRwIpc1Fo3l7liinQ.gdbSW83vYjFVNzw90WVDWQ": PurposeState,
}

var fuzzKey = keyring.SealingKey{ID: "fuzzkey", Secret: bytes.Repeat([]byte{7}, keyring.SealingKeySize), NotBefore: t0, Created: t0}

// FuzzOpen: Open never panics, and nothing but the exact tokens sealed ever opens — no other
// spelling of them, no other purpose, no random input.
func FuzzOpen(f *testing.F) {
	k, err := NewKeyring([]keyring.SealingKey{fuzzKey})
	if err != nil {
		f.Fatal(err)
	}
	for tok, purpose := range fuzzTokens {
		if got, _, err := k.Open(purpose, tok, t0.Add(time.Minute)); err != nil || string(got) != `{"sub":"fuzz"}` {
			f.Fatalf("fuzz seed does not open (was the token format changed? regenerate it): %v", err)
		}
		f.Add(purpose, tok)
		f.Add(PurposeLTIK, mutate(tok, 3, 10))
		f.Add(purpose, mutate(tok, 4, 21))
		f.Add(purpose, strings.ToUpper(tok))
	}
	f.Add(PurposeLTIK, "")
	f.Add(PurposeLTIK, "....")
	f.Add(PurposeState, "eyJhbGciOiJkaXIifQ....")
	f.Add("", "a.b.c.d.e")

	f.Fuzz(func(t *testing.T, purpose, token string) {
		got, id, err := k.Open(purpose, token, t0.Add(time.Minute))
		if err != nil {
			if got != nil || id != "" {
				t.Fatalf("an error with a payload or id: %q, %q, %v", got, id, err)
			}
			return
		}
		if fuzzTokens[token] != purpose || string(got) != `{"sub":"fuzz"}` {
			t.Fatalf("opened a token that was never sealed: purpose %q token %q -> %q", purpose, token, got)
		}
	})
}
