package lti

// ClaimGroups is the Course Groups Service claim (LTI-GS 1.0): the groups and group sets
// URLs of the launch's context. Blackboard and Sakai send it; Sakai may leave out the
// group sets URL.
const ClaimGroups = "https://purl.imsglobal.org/spec/lti-gs/claim/groupsservice"

// GroupsClaim is the Course Groups Service claim. URLs are opaque: use them as given.
type GroupsClaim struct {
	ContextGroupsURL    string
	ContextGroupSetsURL string
	Scope               []string // an array, or a space-separated string (as AGS's is tolerated)
	ServiceVersions     []string
}

func decodeGroups(val string) *GroupsClaim {
	g := &GroupsClaim{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "context_groups_url":
			g.ContextGroupsURL = optString(v)
		case "context_group_sets_url":
			g.ContextGroupSetsURL = optString(v)
		case "scope":
			if kindOf(v) == kindString {
				g.Scope = splitSpaces(decodeString(v))
			} else {
				g.Scope, _ = stringList(v, false)
			}
		case "service_versions":
			g.ServiceVersions, _ = stringList(v, true)
		}
	}) {
		return nil
	}
	return g
}
