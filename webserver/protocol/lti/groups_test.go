package lti

import (
	"fmt"
	"testing"
)

// The groups service claim as Blackboard (scope array), a spec-minded platform (scope as a
// space-separated string) and Sakai (no group sets URL) send it, and as garbage.
func TestGroupsClaim(t *testing.T) {
	const groupsURL = "https://learn.blackboard.com/learn/api/v1/lti/courses/_4_1/groups"
	const setsURL = "https://learn.blackboard.com/learn/api/v1/lti/courses/_4_1/groupsets"
	const scope = "https://purl.imsglobal.org/spec/lti-gs/scope/contextgroup.readonly"
	for _, tc := range []struct {
		name  string
		claim any
		want  *GroupsClaim
		token IDTokenGroups
	}{
		{"Blackboard", map[string]any{"context_groups_url": groupsURL, "context_group_sets_url": setsURL,
			"scope": []any{scope}, "service_versions": []any{"1.0"}},
			&GroupsClaim{ContextGroupsURL: groupsURL, ContextGroupSetsURL: setsURL, Scope: []string{scope}, ServiceVersions: []string{"1.0"}},
			IDTokenGroups{Available: true, GroupSets: true}},
		{"scope as a string, versions as one", map[string]any{"context_groups_url": groupsURL, "scope": scope + " other", "service_versions": "1.0"},
			&GroupsClaim{ContextGroupsURL: groupsURL, Scope: []string{scope, "other"}, ServiceVersions: []string{"1.0"}},
			IDTokenGroups{Available: true}},
		{"Sakai: no group sets URL", map[string]any{"context_groups_url": groupsURL, "context_group_sets_url": nil},
			&GroupsClaim{ContextGroupsURL: groupsURL}, IDTokenGroups{Available: true}},
		{"no groups URL", map[string]any{"context_group_sets_url": setsURL}, &GroupsClaim{ContextGroupSetsURL: setsURL}, IDTokenGroups{}},
		{"URLs of the wrong type", map[string]any{"context_groups_url": 7, "context_group_sets_url": []any{setsURL}}, &GroupsClaim{}, IDTokenGroups{}},
		{"not an object", "groups", nil, IDTokenGroups{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := rlrClaims()
			claims[ClaimGroups] = tc.claim
			c := claimsOf(t, claims)
			if fmt.Sprintf("%+v", c.Groups) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("got  %+v\nwant %+v", c.Groups, tc.want)
			}
			if got := SimplifiedIDToken(c, testPlatform).Services.Groups; got != tc.token {
				t.Fatalf("services.groups %+v, want %+v", got, tc.token)
			}
		})
	}
}
