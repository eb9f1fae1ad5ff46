// Package ltiplatform is the LTI 1.3 protocol of platform mode, where ltiop is the learning
// platform and external tools are launched from it: the OIDC authorization request a tool
// sends (lti-conformance.md §1.7), the id_token minted for it, and the JWTs a tool signs —
// deep-linking responses (§1.8) and client assertions at the token endpoint (§2, P-TOK).
//
// Like package lti, it is pure protocol: no HTTP handlers, no Kubernetes (lti's
// purity_test.go checks both). Keys arrive through an lti.KeyFunc, time through
// arguments, and replay caches stay with the caller; failures are *apierr.Error values
// that also carry the OAuth error value for the tool.
package ltiplatform
