package dynreg

import "slices"

// ScopeNoticeHandlers lets ltiop register notice handlers with the platform's Platform
// Notification Service (docs/notices.md); asked for only when notices are enabled.
const ScopeNoticeHandlers = "https://purl.imsglobal.org/spec/lti/scope/noticehandlers"

// scopes are the scopes the tool asks for: Scopes, and the notice-handler scope when
// notices are enabled.
func (tc ToolConfig) scopes() []string {
	if !tc.Notices {
		return Scopes
	}
	return append(slices.Clone(Scopes), ScopeNoticeHandlers)
}
