// Package lti is the protocol core of ltiop's tool mode: LTI 1.3 id_token
// validation, tolerant claim decoding, role and context-type normalisation, and
// the simplified ID token that GET /api/idtoken returns.
//
// The package is pure protocol. It imports nothing of Kubernetes and no HTTP
// server code; keys arrive through a KeyFunc and every policy value through a
// Policy, so it is tested with table tests and fuzz targets alone.
//
// # Validating a launch
//
// A launch handler receives the id_token form field and:
//
//  1. calls Peek to read the unverified iss, aud and azp, and only those, to
//     choose the platform registration by (iss, client_id) (T-TOK-06, T-QUIRK-01);
//  2. calls Validate with a KeyFunc over that registration's key set and a Policy
//     holding the registration (Issuer, ClientID, DeploymentIDs) and what the
//     login bound to the browser's state (ExpectedNonce, ExpectedDeploymentID,
//     ExpectedTargetLinkURI);
//  3. on success, records the nonce as used (replay, T-NONCE-03, is the
//     caller's), and keeps Claims.Raw or the Claims for the launch session.
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
// ParseClaims and the decode inside Validate read the payload once with a small
// single-pass reader over JSON that encoding/json has validated: no reflection,
// no second decode, no regular expressions. Wrong JSON types in optional claims
// leave the field empty rather than failing (T-QUIRK-04): Canvas has sent custom
// values as numbers and null, Moodle sends accept_media_types as an array,
// booleans may arrive as strings. Unknown claims and unknown members of known
// claims are ignored (T-TOK-23). A claim the message requires, present with the
// wrong type, is an error.
//
// # Simplified ID token
//
// SimplifiedIDToken maps validated claims and the registration to the
// service-interface §2.3 shape. Roles go through NormaliseRoles (the §2.1
// vocabulary, deprecated forms mapped, unknown and empty values dropped) and
// context types through NormaliseContextTypes (§2.2). The raw claims stay
// available in Claims.Raw for ?raw=true.
package lti
