package sessions

import (
	"os"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

// canvasClaims is a compact 4 KB id_token claim set shaped like a Canvas resource link launch
// (synthetic values; the ids are random so they do not compress better than real ones).
func canvasClaims(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/canvas_claims.json")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustKey(tb testing.TB, now time.Time, delay time.Duration) keyring.SealingKey {
	tb.Helper()
	return testkeys.SealingKey(tb, now, delay)
}

// testKeyring holds one key active since an hour before t0, with the real clock.
func testKeyring(tb testing.TB, extra ...keyring.SealingKey) *Keyring {
	tb.Helper()
	k, err := NewKeyring(append([]keyring.SealingKey{mustKey(tb, t0.Add(-time.Hour), 0)}, extra...))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
