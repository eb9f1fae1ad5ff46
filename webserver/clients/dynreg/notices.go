package dynreg

import (
	"slices"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// scopes are the scopes the tool asks for: Scopes, and the notice-handler scope when
// notices are enabled (to register notice handlers with the platform's Platform
// Notification Service, docs/notices.md).
func (tc ToolConfig) scopes() []string {
	if !tc.Notices {
		return Scopes
	}
	return append(slices.Clone(Scopes), ltiwire.ScopeNoticeHandlers)
}
