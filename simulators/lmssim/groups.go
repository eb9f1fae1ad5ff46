package lmssim

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
)

// The Course Groups Service (LTI-GS 1.0), as Blackboard offers it.
const (
	ScopeGroups            = "https://purl.imsglobal.org/spec/lti-gs/scope/contextgroup.readonly"
	MediaGroupContainer    = "application/vnd.ims.lti-gs.v1.contextgroupcontainer+json"
	MediaGroupSetContainer = "application/vnd.ims.lti-gs.v1.contextgroupsetcontainer+json"
	// GroupsPath and GroupSetsPath are context_groups_url and context_group_sets_url.
	GroupsPath    = "/lti/courses/42/groups"
	GroupSetsPath = "/lti/courses/42/groupsets"
	// ClaimGroups is the groups service claim of the launches.
	ClaimGroups = "https://purl.imsglobal.org/spec/lti-gs/claim/groupsservice"
)

// Group is one course group the groups service serves. Members are the user ids in it
// (the user_id filter); SetIDs may be empty: a group outside any set.
type Group struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Tag     string   `json:"tag,omitempty"`
	SetIDs  []string `json:"set_ids"`
	Members []string `json:"-"`
}

// GroupSet is one group set.
type GroupSet struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

var defaultGroups = sync.OnceValues(func() ([]Group, []GroupSet) {
	sets := []GroupSet{{ID: "set-labs", Name: "Lab groups", Tag: "labs"}, {ID: "set-projects", Name: "Project teams"}}
	var groups []Group
	for i := 1; i <= 10; i++ {
		groups = append(groups, Group{ID: fmt.Sprintf("lab-%d", i), Name: fmt.Sprintf("Lab %d", i), Tag: "lab", SetIDs: []string{"set-labs"}})
	}
	for i := 1; i <= 25; i++ {
		groups = append(groups, Group{ID: fmt.Sprintf("project-%d", i), Name: fmt.Sprintf("Project team %d", i), SetIDs: []string{"set-projects"}})
	}
	staff := Group{ID: "teaching-staff", Name: "Teaching staff", SetIDs: []string{}}
	for n := 1; n <= 1000; n++ {
		user := fmt.Sprintf("user-%d", n)
		groups[n%10].Members = append(groups[n%10].Members, user)
		groups[10+n%25].Members = append(groups[10+n%25].Members, user)
		if n == 1 || n%10 == 0 {
			staff.Members = append(staff.Members, user)
		}
	}
	return append(groups, staff), sets
})

// DefaultGroups returns the groups and sets served when LMS.Groups is nil: 10 lab groups
// "lab-1" … "lab-10" (set "set-labs"; user-n is in lab-(n%10+1)), 25 project teams
// "project-1" … "project-25" (set "set-projects"; user-n is in project-(n%25+1)) and
// "teaching-staff", outside any set (user-1 and every 10th user): 36 groups, 2 sets.
func DefaultGroups() ([]Group, []GroupSet) {
	groups, sets := defaultGroups()
	out := make([]Group, len(groups))
	for i, g := range groups {
		g.SetIDs, g.Members = slices.Clone(g.SetIDs), slices.Clone(g.Members)
		out[i] = g
	}
	return out, slices.Clone(sets)
}

func (l *LMS) groupsAndSets() ([]Group, []GroupSet) {
	if l.Groups != nil {
		return l.Groups, l.GroupSets
	}
	return defaultGroups()
}

// groups is the context groups service: all groups, or those of user_id, paged.
func (l *LMS) groups(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeGroups) || !requireAccept(w, r, MediaGroupContainer) {
		return
	}
	all, _ := l.groupsAndSets()
	user := r.URL.Query().Get("user_id")
	list := []Group{}
	for _, g := range all {
		if user == "" || slices.Contains(g.Members, user) {
			if g.SetIDs == nil {
				g.SetIDs = []string{}
			}
			list = append(list, g)
		}
	}
	start, end, next, err := l.paginate(r, len(list))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	setNext(w, next)
	writeJSON(w, http.StatusOK, MediaGroupContainer, map[string]any{"id": l.Issuer + r.URL.RequestURI(), "groups": list[start:end]})
}

// groupSets is the context group sets service, paged.
func (l *LMS) groupSets(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeGroups) || !requireAccept(w, r, MediaGroupSetContainer) {
		return
	}
	_, sets := l.groupsAndSets()
	if sets == nil {
		sets = []GroupSet{}
	}
	start, end, next, err := l.paginate(r, len(sets))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	setNext(w, next)
	writeJSON(w, http.StatusOK, MediaGroupSetContainer, map[string]any{"id": l.Issuer + r.URL.RequestURI(), "sets": sets[start:end]})
}

// groupsClaim is the groups service claim of a launch.
func (l *LMS) groupsClaim() map[string]any {
	return map[string]any{
		"context_groups_url": l.Issuer + GroupsPath, "context_group_sets_url": l.Issuer + GroupSetsPath,
		"scope": []string{ScopeGroups}, "service_versions": []string{"1.0"},
	}
}
