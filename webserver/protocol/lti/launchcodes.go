package lti

// Stable error codes of tool mode's login and launch flow (see docs/api.md), beside the
// id_token's own (validate.go): the launch's refusal vocabulary, read by the handlers that
// answer with them and by the launch-health recorder that explains them.
const (
	CodeInvalidLogin        = "INVALID_LOGIN_REQUEST"
	CodeUnregistered        = "UNREGISTERED_OR_INACTIVE_PLATFORM"
	CodeAmbiguousPlatform   = "AMBIGUOUS_PLATFORM"
	CodeInvalidTarget       = "INVALID_TARGET_LINK_URI"
	CodeMissingIDToken      = "MISSING_ID_TOKEN"
	CodeMissingState        = "MISSING_STATE"
	CodeInvalidState        = "INVALID_STATE"
	CodeStateExpired        = "STATE_EXPIRED"
	CodeStateReused         = "STATE_ALREADY_USED"
	CodeNonceReused         = "NONCE_ALREADY_USED"
	CodeBrowserBinding      = "BROWSER_BINDING_FAILED"
	CodePlatformError       = "PLATFORM_ERROR"
	CodeLaunchNotConfigured = "LAUNCH_URL_NOT_CONFIGURED"
	// CodeCrossSiteRequest: a form only ltiop's own pages post came from another site.
	CodeCrossSiteRequest = "CROSS_SITE_REQUEST"
)
