// Package lti is the protocol core of ltiop's tool mode: LTI 1.3 id_token
// validation, tolerant claim decoding, role and context-type normalisation, the
// simplified ID token that GET /api/idtoken returns, and deep-linking responses.
// Package ltiplatform, the platform side, builds on it (KeyFunc, claims, content items).
//
// The package is pure protocol. It imports nothing of Kubernetes, no HTTP server
// code and no html/template (purity_test.go checks, for ltiplatform too); keys
// arrive through a KeyFunc and every policy value through a Policy, so it is tested
// with table tests and fuzz targets alone.
//
// # Validating a launch
//
// The login chose the platform registration by (iss, client_id) (T-QUIRK-01) and
// sealed it in the state, so the launch handler never picks a registration from the
// unverified id_token (T-TOK-06). Given the id_token form field, it:
//
//  1. calls Validate with a KeyFunc over that registration's key set and a Policy
//     holding the registration (Issuer, ClientID, DeploymentIDs) and what the
//     login bound to the browser's state (ExpectedNonce, ExpectedDeploymentID,
//     ExpectedTargetLinkURI);
//  2. on success, records the nonce as used (replay, T-NONCE-03, is the
//     caller's), and keeps Claims.Raw for the launch session (ParseValidatedClaims
//     reads it back).
//
// Validate follows lti-conformance.md §1.4 in order and then §1.5 for the message
// type, stopping at the first failure. Each failure is an *apierr.Error carrying the
// HTTP status to answer with, a stable Code for details.message, a Description
// safe to show, and the conformance Rule it enforces. Structure and claim
// problems are 400, authentication problems 401, an unknown deployment 403, and a
// key set that cannot be fetched 503 — never 401, which would blame the token for
// the platform's outage (T-JWKS-03). Only RS256 is accepted, checked before any
// key lookup; a kid is required.
//
// # Decoding claims
//
// Claims are read with internal/jsonscan, a strict scanner that accepts exactly
// the JSON encoding/json accepts and validates as it walks: no reflection, no
// encoding/json, no regular expressions. Each part of the token is base64-decoded
// once, into one buffer, and read in one pass that also validates it: the header and
// the payload must be JSON objects before a key is looked up, and the claims decoded
// then are checked only once the signature holds. The signature is checked by jwx's
// jwsbb over the exact bytes that were decoded (Claims.Raw, whose memory the decoded
// strings share). Each modelled claim is one entry of a table (claimFields): how to
// decode it, and how null, which counts as absent, resets it. Wrong JSON types in optional claims leave the field empty
// rather than failing (T-QUIRK-04): Canvas has sent custom values as numbers and
// null, Moodle sends accept_media_types as an array, booleans may arrive as strings. Unknown claims and unknown members of known
// claims are ignored (T-TOK-23). A claim the message requires, present with the
// wrong type, is an error.
//
// # Deep linking
//
// DecodeDeepLinkingBody and ValidateContentItems take the integrator's content
// items (contentitems*.go); DeepLinkingResponse signs the LtiDeepLinkingResponse.
// The self-submitting form that carries it back is HTML, built by the HTTP side.
//
// # Simplified ID token
//
// SimplifiedIDToken maps validated claims and the registration to the
// service-interface §2.3 shape. Roles go through NormaliseRoles (the §2.1
// vocabulary, deprecated forms mapped, unknown and empty values dropped) and
// context types through NormaliseContextTypes (§2.2). The raw claims stay
// available in Claims.Raw for ?raw=true.
package lti
