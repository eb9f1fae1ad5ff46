// Package signing holds the platform-mode signing key: the RSA key ltiop signs with when it
// acts as a learning platform (id_tokens sent to tools, access tokens of its token endpoint,
// short-lived payloads), and the public keys it publishes at the platform JWKS URL.
//
// The keys (keyring.SigningKey) live in the service Secret (data key
// ltiv1.SecretKeyPlatformKeys), which the controller creates and rotates; a Keyring follows
// that Secret. Rotation publishes first and signs later: every key held is in the JWKS at
// once, and a key signs only from its NotBefore, which the controller puts far enough ahead
// for tools' JWKS caches to expire. An old key stays, published and verifying, until tokens
// it signed can no longer be in use.
package signing

// Alg is the one signature algorithm of platform mode (LTI Security Framework §5.1.1).
const Alg = "RS256"
