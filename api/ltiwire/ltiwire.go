// Package ltiwire names the LTI wire vocabulary every part of ltiop shares, each value
// once: the scope URIs of the LTI Advantage services and the typ headers of the JWTs ltiop
// signs. It imports nothing, so the API types (api/v1alpha1), the pure protocol packages
// and everything above them can use it; a simulator keeps its own copy (it never imports
// product code). test/architecture fails when a scope URI is written twice.
package ltiwire

// Scopes of the LTI Advantage services a tool asks a platform's token endpoint for.
const (
	// ScopeLineItem manages line items (AGS).
	ScopeLineItem = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	// ScopeLineItemReadOnly reads line items (AGS).
	ScopeLineItemReadOnly = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
	// ScopeResultReadOnly reads results (AGS).
	ScopeResultReadOnly = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
	// ScopeScore posts scores (AGS).
	ScopeScore = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	// ScopeMembershipReadOnly reads a context's memberships (NRPS).
	ScopeMembershipReadOnly = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
	// ScopeGroupReadOnly reads a context's groups and group sets (Course Groups).
	ScopeGroupReadOnly = "https://purl.imsglobal.org/spec/lti-gs/scope/contextgroup.readonly"
	// ScopeNoticeHandlers is the scope of the platform's notice-handler endpoint (Platform
	// Notification Service).
	ScopeNoticeHandlers = "https://purl.imsglobal.org/spec/lti/scope/noticehandlers"
)

// Scopes of Asset Processor and its EULA service, in the spelling of the final
// specification (lti.HasScope also accepts the draft namespaces some platforms send).
const (
	ScopeAssetReadOnly  = "https://purl.imsglobal.org/spec/lti/scope/asset.readonly"
	ScopeReport         = "https://purl.imsglobal.org/spec/lti/scope/report"
	ScopeEulaUser       = "https://purl.imsglobal.org/spec/lti/scope/eula/user"
	ScopeEulaDeployment = "https://purl.imsglobal.org/spec/lti/scope/eula/deployment"
)

// typ headers of the JWTs ltiop signs: one per kind of token, so that a token of one kind
// never passes for another under the same key.
const (
	// TypeJWT is the typ of id_tokens, client assertions, deep-linking responses and most
	// JWTs (RFC 7519 §5.1).
	TypeJWT = "JWT"
	// TypeAccessToken is the typ of OAuth 2.0 access tokens in JWT form (RFC 9068 §2.1).
	TypeAccessToken = "at+jwt"
	// TypeDeepLinking is the typ of platform mode's deep-linking return payloads.
	TypeDeepLinking = "ltiop-deeplinking+jwt"
	// TypeLaunchPayload is the typ of platform mode's launch payloads (?payload= of the
	// authorization endpoint).
	TypeLaunchPayload = "ltiop-launch+jwt"
)

// The scopes that let each NRPS and AGS operation through, the narrowest first: a tool that
// does not know what its launch granted asks for the first; a platform accepts any of them
// (AGS 2.0 §3.1, NRPS 2.0 §2.3). Callers must not modify them.
var (
	ScopesMemberships  = []string{ScopeMembershipReadOnly}
	ScopesGroups       = []string{ScopeGroupReadOnly}
	ScopesLineItemRead = []string{ScopeLineItemReadOnly, ScopeLineItem}
	ScopesLineItemEdit = []string{ScopeLineItem}
	ScopesScore        = []string{ScopeScore}
	ScopesResults      = []string{ScopeResultReadOnly}
)
