// Package lti11 is the LTI 1.1 protocol of ltiop's tool mode, all of it but the two wire
// codecs: how the launch URL tells a 1.1 launch from a 1.3 one (IsLaunch), the
// basic-lti-launch-request checks and their mapping to LTI 1.3 claims, OAuth 1.0a
// verification with stable error codes, the parameters /api/idtoken?raw=true shows, and
// the legacy identity of /api/idtoken with the verdict on the lti1p1 migration claim of
// LTI 1.3 launches. The wire codecs, OAuth 1.0a signing (internal/oauth1) and the IMS POX
// messages of Basic Outcomes (internal/pox), live in internal/ because the LMS simulator
// shares them and simulators may import only api/ and internal/. Tool mode's handlers
// (launch11.go, idtoken11.go, outcomes.go) and advantage's Basic Outcomes client call
// these packages; none of them spells the protocol again.
//
// Like package lti it is pure protocol: no Kubernetes, no HTTP server. Refusals are
// *apierr.Error with stable codes (Code*); tests name the rules they cover (LTI11-SIG-01 …,
// listed in docs/lti11.md).
package lti11
