package dynreg

import (
	"slices"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// With notices enabled, dynamic registration asks for the notice-handler scope (after the
// others), still only where the platform lists it.
func TestBuildRegistrationNoticeScope(t *testing.T) {
	before := slices.Clone(Scopes)
	tool := testTool
	tool.Notices = true
	scope := func(tc ToolConfig, pc *PlatformConfig) string {
		return BuildRegistration(tc, pc, nil, "")["scope"].(string)
	}
	if got := scope(tool, nil); got != strings.Join(Scopes, " ")+" "+ltiwire.ScopeNoticeHandlers {
		t.Errorf("notices on: %q", got)
	}
	if got := scope(testTool, nil); strings.Contains(got, ltiwire.ScopeNoticeHandlers) {
		t.Errorf("notices off, yet asked for: %q", got)
	}
	if got := scope(tool, &PlatformConfig{ScopesSupported: []string{ltiwire.ScopeMembershipReadOnly, ltiwire.ScopeNoticeHandlers}}); got != ltiwire.ScopeMembershipReadOnly+" "+ltiwire.ScopeNoticeHandlers {
		t.Errorf("intersection: %q", got)
	}
	if got := scope(tool, &PlatformConfig{ScopesSupported: []string{ltiwire.ScopeMembershipReadOnly}}); got != ltiwire.ScopeMembershipReadOnly {
		t.Errorf("a platform without PNS: %q", got)
	}
	if !slices.Equal(Scopes, before) {
		t.Errorf("Scopes was changed: %v", Scopes)
	}
}
