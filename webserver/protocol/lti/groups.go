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

func decodeGroups(sc *scanner) *GroupsClaim {
	if !enterObject(sc) {
		return nil
	}
	g := &GroupsClaim{}
	for sc.NextMember() {
		switch sc.Key() {
		case "context_groups_url":
			g.ContextGroupsURL = readOptString(sc)
		case "context_group_sets_url":
			g.ContextGroupSetsURL = readOptString(sc)
		case "scope":
			g.Scope = readScope(sc)
		case "service_versions":
			g.ServiceVersions, _ = readStringList(sc, true)
		}
	}
	return g
}
