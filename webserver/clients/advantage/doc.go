// Package advantage holds ltiop's outbound LMS clients for LTI Advantage: OAuth 2
// client-credentials tokens obtained with a JWT client assertion (RFC 7523, conformance §2),
// Names and Role Provisioning Services 2.0 (§3) and Assignment and Grade Services 2.0 (§4).
//
// One Client serves every registration: it caches access tokens per (registration,
// client_id, token endpoint, deployment, scope set) until shortly before they expire, asks
// the token endpoint at most once at a time per key, retries a service call once with a
// fresh token when the LMS answers 401, and turns every LMS failure into an *UpstreamError.
//
// Trust rules. The token is only ever sent to URLs the launch gave us or to URLs on their
// hosts: paging links and item ids must be on the expected host (SameHost), else
// ErrForeignURL, and the default HTTP client refuses redirects to another host. Tokens
// and client assertions are never logged and never appear in errors.
//
// Nothing here knows about Kubernetes or HTTP servers: callers (the tool-mode handlers)
// build Credentials from a registration and the launch.
package advantage
