// Package lti11 is the LTI 1.1 protocol of ltiop's tool mode: the basic-lti-launch-request
// checks and their mapping to LTI 1.3 claims, OAuth 1.0a verification with stable error
// codes (over internal/oauth1), and the verdict on the lti1p1 migration claim of LTI 1.3
// launches.
//
// Like package lti it is pure protocol: no Kubernetes, no HTTP server. Refusals are
// *apierr.Error with stable codes (Code*); tests name the rules they cover (LTI11-SIG-01 …,
// listed in docs/lti11.md).
package lti11
