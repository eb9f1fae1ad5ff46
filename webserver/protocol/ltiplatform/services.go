package ltiplatform

// Stable codes of the service endpoints ltiop serves tools (P-NRPS, P-AGS), besides
// CodeDeploymentMismatch (a service URL or access token of another deployment).
const (
	CodeInvalidGrant       = "INVALID_SERVICE_GRANT"   // 404: not a service URL of this platform
	CodeGrantExpired       = "SERVICE_GRANT_EXPIRED"   // 404: the service URL's time is over
	CodeGrantOtherTool     = "GRANT_NOT_FOR_THIS_TOOL" // 403: a service URL given to another tool
	CodeInvalidAccessToken = "INVALID_ACCESS_TOKEN"    // 401: not an access token this platform issued
	CodeAccessTokenExpired = "ACCESS_TOKEN_EXPIRED"    // 401
	CodeInsufficientScope  = "INSUFFICIENT_SCOPE"      // 403: the token lacks the operation's scope
	CodeServiceNotOffered  = "SERVICE_NOT_OFFERED"     // 403: the launch of the service URL did not offer it
	CodeLineItemNotOffered = "LINE_ITEM_NOT_OFFERED"   // 403: the launch offered one other line item only
	CodeInvalidScore       = "INVALID_SCORE"           // 400 P-AGS-07
	CodeInvalidLineItem    = "INVALID_LINE_ITEM"       // 400 P-AGS-03..06
)
