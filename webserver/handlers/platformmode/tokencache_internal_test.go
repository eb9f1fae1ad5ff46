package platformmode

import (
	"crypto/sha256"
	"strconv"
	"testing"
	"time"
)

// TestVerifiedTokensBounded: however many valid tokens come, at most maxVerifiedTokens are
// remembered, expired ones leaving first, and an expired entry is not served.
func TestVerifiedTokensBounded(t *testing.T) {
	var v verifiedTokens
	now := time.Unix(1_800_000_000, 0)
	key := func(i int) [sha256.Size]byte { return sha256.Sum256([]byte(strconv.Itoa(i))) }
	entry := func(exp time.Time) verifiedToken {
		return verifiedToken{claims: accessTokenClaims{ExpiresAt: exp.Unix()}, kid: "k"}
	}
	for i := range maxVerifiedTokens {
		exp := now.Add(time.Hour)
		if i%2 == 0 {
			exp = now.Add(time.Minute) // half of them expire first
		}
		v.put(key(i), entry(exp), now)
	}
	later := now.Add(2 * time.Minute)
	v.put(key(-1), entry(later.Add(time.Hour)), later)
	if n := v.len(); n != maxVerifiedTokens/2+1 {
		t.Fatalf("%d entries after a put into a full cache with half expired, want %d", n, maxVerifiedTokens/2+1)
	}
	for i := range 3 * maxVerifiedTokens {
		v.put(key(maxVerifiedTokens+i), entry(later.Add(time.Hour)), later)
		if n := v.len(); n > maxVerifiedTokens {
			t.Fatalf("%d entries, bound %d", n, maxVerifiedTokens)
		}
	}
	v.put(key(-2), entry(later.Add(time.Second)), later)
	if _, ok := v.get(key(-2), later.Add(time.Second)); ok {
		t.Fatal("an expired token was served")
	}
	if _, ok := v.get(key(-2), later); ok {
		t.Fatal("the expired entry was not dropped")
	}
}
