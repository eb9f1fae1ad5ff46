package launchhealth

import (
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

// toolHints say, per refusal code of platform mode, what the tool's administrator (or the
// integrator) can do: one line each, the same advice as docs/troubleshooting.md. The
// authorization request, the token request and the deep-linking response share codes;
// the Event's action says which it was.
var toolHints = map[string]string{
	ltiplatform.CodeInactiveTool:        "The registration is inactive or not Ready: set spec.active, or fix what its Ready condition names.",
	ltiplatform.CodeInvalidRedirectURI:  "An authorization request naming this tool sent a redirect_uri its registration does not list: if it was the tool's, add it to spec.redirectionUris, byte for byte.",
	ltiplatform.CodeMissingParameter:    "An authorization request naming this tool lacks a required parameter (see the code's rule): if it was the tool's, a tool defect to report to the tool vendor.",
	ltiplatform.CodeInvalidScope:        "A request for this tool has a missing or malformed scope (openid in an authorization request naming it; the service scopes in its token request).",
	ltiplatform.CodeInvalidResponseType: "An authorization request naming this tool does not ask for response_type=id_token: if it was the tool's, a tool defect.",
	ltiplatform.CodeClientMismatch:      "The tool's authorization request names another client_id than the launch it answers: check spec.clientId against the tool's configuration.",
	ltiplatform.CodeInvalidResponseMode: "An authorization request naming this tool does not ask for response_mode=form_post: if it was the tool's, a tool defect.",
	ltiplatform.CodeInvalidPrompt:       "An authorization request naming this tool does not send prompt=none: if it was the tool's, a tool defect.",
	ltiplatform.CodeLoginHintMismatch:   "The tool sent back another login_hint than the launch gave it: a tool defect, or a proxy rewriting the request.",
	ltiplatform.CodeInvalidMessageHint:  "An authorization request naming this tool carried an lti_message_hint ltiop did not issue (or altered): a tool defect, a launch from another ltiop installation, or a forged request.",
	ltiplatform.CodeMessageHintExpired:  "An authorization request naming this tool carried the message hint of a launch begun more than an hour before: usually a stale browser tab; start the launch again.",
	ltiplatform.CodeDuplicateNonce:      "The tool reused a nonce (in an authorization request or a deep-linking response): usually a double submit; repeated, a tool defect or a replay attempt.",
	httpapi.CodeReplayStoreUnavailable:  "ltiop's replay store (Redis) did not answer: see the ReplayStoreErrors alert's runbook; the tool's request may be retried.",

	ltiplatform.CodeUnknownClient:                "The tool's client assertion names a client_id no active registration has: check spec.clientId (status.clientId) against the tool's configuration.",
	ltiplatform.CodeIssuerMismatch:               "The tool's JWT has another iss than its client_id: configure the tool with the client_id in status.clientId.",
	ltiplatform.CodeSubjectMismatch:              "The tool's client assertion has another sub than its client_id: a tool defect.",
	ltiplatform.CodeAudienceMismatch:             "The tool's JWT is addressed to another audience: configure the tool with the token endpoint and issuer in status.tokenEndpoint and status.issuer.",
	ltiplatform.CodeAzpMismatch:                  "The tool's JWT has several audiences and no azp, or an azp other than ltiop's issuer: a tool defect.",
	ltiplatform.CodeInvalidToken:                 "The tool sent a malformed JWT: a tool defect, report it to the tool vendor.",
	ltiplatform.CodeInvalidAlgorithm:             "The tool signed with another algorithm than RS256: configure it to use RS256.",
	ltiplatform.CodeMissingKID:                   "The tool's JWT has no kid and the registration has no single static key: give the tool a kid, or set spec.authConfig to its one key.",
	ltiplatform.CodeUnknownKID:                   "The tool signed with a key its key set does not list: check spec.authConfig (the tool's JWKS URL or key), or wait for the tool's key rotation to publish.",
	ltiplatform.CodeKeySetUnavailable:            "ltiop could not fetch the tool's key set: check spec.authConfig.key's URL, TLS and the outbound address policy.",
	ltiplatform.CodeInvalidSignature:             "The tool's JWT does not verify with the registered key: spec.authConfig may name another tool's key.",
	ltiplatform.CodeTokenExpired:                 "The tool's JWT had expired: check the tool server's clock (NTP).",
	ltiplatform.CodeTokenNotYetValid:             "The tool's JWT is not valid yet (nbf): check the tool server's clock (NTP).",
	ltiplatform.CodeInvalidIAT:                   "The tool's JWT was issued in the future: check the tool server's clock (NTP).",
	ltiplatform.CodeLifetimeTooLong:              "The tool's JWT is valid for too long (exp far after iat): a tool defect.",
	ltiplatform.CodeMissingJTI:                   "The tool's client assertion has no jti: a tool defect.",
	ltiplatform.CodeInvalidJTI:                   "The tool's client assertion has an over-long jti: a tool defect.",
	ltiplatform.CodeAssertionReplayed:            "The tool reused a client assertion (same jti) for a second token: a tool defect, or a replay attempt.",
	ltiplatform.CodeScopeNotAllowed:              "The tool asked only for scopes its registration does not grant: add them to spec.scopes if the tool should have them.",
	ltiplatform.CodeUnsupportedGrantType:         "The tool's token request is not grant_type=client_credentials: a tool defect.",
	ltiplatform.CodeMissingClientAuthentication:  "The tool's token request carries no client assertion: configure the tool for private_key_jwt client authentication.",
	ltiplatform.CodeUnsupportedAssertionType:     "The tool's client_assertion_type is not the JWT bearer type: a tool defect.",
	ltiplatform.CodeMultipleClientAuthentication: "The tool sent a client secret next to its client assertion: configure it for private_key_jwt only.",
	ltiplatform.CodeInvalidClaim:                 "The tool's JWT has a claim of the wrong type or length (see the rule): a tool defect.",

	ltiplatform.CodeMissingNonce:        "The tool's deep-linking response has no nonce: a tool defect.",
	ltiplatform.CodeInvalidNonce:        "The tool's deep-linking response has an over-long nonce: a tool defect.",
	ltiplatform.CodeDeploymentMismatch:  "The tool's deep-linking response or service call is of another deployment than the one in force (spec.deploymentId changed since its launch?): the next launch gives the tool current values.",
	ltiplatform.CodeInvalidMessageType:  "The tool answered deep linking with another message type than LtiDeepLinkingResponse: a tool defect.",
	ltiplatform.CodeInvalidLTIVersion:   "The tool's deep-linking response is not LTI 1.3.0: a tool defect.",
	ltiplatform.CodeDataMismatch:        "The tool did not echo the deep-linking request's data claim unchanged: a tool defect.",
	ltiplatform.CodeInvalidContentItem:  "The tool returned a malformed content item: a tool defect, report it with the Event's rule.",
	ltiplatform.CodeContentItemRejected: "The tool returned content the request did not accept (type, several items, or a line item): check what the integrator's deep-linking page allows.",

	ltiplatform.CodeInvalidGrant:      "The tool called a service URL ltiop did not issue (or altered): a tool defect, or a URL from another ltiop installation.",
	ltiplatform.CodeGrantExpired:      "The tool called a service URL past its lifetime (platformData.grantLifetime): the tool must use the URLs of a newer launch.",
	ltiplatform.CodeGrantOtherTool:    "The tool called a service URL ltiop gave another tool: a tool defect, or tools sharing one key.",
	ltiplatform.CodeInsufficientScope: "The tool's access token lacks the operation's scope: add it to spec.scopes, and the tool must ask for it in its token request.",
	ltiplatform.CodeInvalidScore:      "The tool posted a score AGS does not allow (the answer's description names the field): a tool defect.",
	ltiplatform.CodeInvalidLineItem:   "The tool sent a line item AGS does not allow: a tool defect.",
	platformdata.CodeUnavailable:      "The integrator's platform data API did not answer well: check platformData.url and its logs; the tool may retry.",
}

// ToolHint is the one-line advice for a refusal code of platform mode.
func ToolHint(code string) string {
	if h, ok := toolHints[code]; ok {
		return h
	}
	return "See docs/troubleshooting.md for this code."
}
