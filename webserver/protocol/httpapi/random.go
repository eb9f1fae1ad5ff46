package httpapi

import (
	"crypto/rand"
	"encoding/base64"
)

// RandomToken returns n random bytes, base64url-encoded without padding (n ≥ 16 gives
// ≥ 128 bits: states, nonces, token ids, CSP nonces).
func RandomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}
