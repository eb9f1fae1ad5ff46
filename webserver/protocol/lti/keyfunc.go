package lti

import (
	"context"
	"crypto/rsa"
	"errors"
)

// KeyFunc returns the RSA public key a JWT was signed with, for the kid of its header:
// the platform's key for an id_token (Validate), the tool's for what a tool signs
// (package ltiplatform, where kid is "" when the header has none and the tool has a
// static key). It returns ErrUnknownKey, wrapped or not, when the signer has no key with
// that kid; any other error means the keys could not be obtained: an outage, answered
// 503 and never 401 (T-JWKS-03, P-DLR-01, P-TOK-08).
type KeyFunc func(ctx context.Context, kid string) (*rsa.PublicKey, error)

// ErrUnknownKey is what a KeyFunc returns when the signer's keys, refetched if need be,
// have no key with the requested kid.
var ErrUnknownKey = errors.New("lti: no key with this kid")
