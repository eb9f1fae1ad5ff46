package lmssim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Member is one course member NRPS serves. Roles may be full URIs or short context role
// names ("Learner"), as platforms send them; empty optional fields are left out.
type Member struct {
	UserID     string   `json:"user_id"`
	Roles      []string `json:"roles"`
	Status     string   `json:"status,omitempty"` // Active, Inactive, or absent (= Active)
	Name       string   `json:"name,omitempty"`
	GivenName  string   `json:"given_name,omitempty"`
	FamilyName string   `json:"family_name,omitempty"`
	Email      string   `json:"email,omitempty"`
	// ResourceLinks are the resource link ids the member belongs to (the rlid filter).
	ResourceLinks []string `json:"-"`
	// LTI11LegacyUserID is the member's LTI 1.1 user_id (migrated platforms send it).
	LTI11LegacyUserID string `json:"lti11_legacy_user_id,omitempty"`
}

// Role URIs.
const (
	RoleLearner    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	RoleInstructor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	RoleTA         = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
)

// ResourceLinkID is the resource link of Claims, known to NRPS (rlid) and AGS.
const ResourceLinkID = "resource-link-1"

var defaultMembers = sync.OnceValue(func() []Member {
	given := []string{"Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "John", "Hedy"}
	family := []string{"Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Backus", "Lamarr"}
	out := make([]Member, 0, 1000)
	for n := 1; n <= 1000; n++ {
		m := Member{UserID: fmt.Sprintf("user-%d", n)}
		switch {
		case n == 1:
			m.Roles = []string{RoleInstructor}
		case n%50 == 5:
			m.Roles = []string{RoleInstructor, RoleTA} // a sub-role comes with its principal role
		case n%25 == 0:
			m.Roles = []string{"Instructor"}
		case n%10 == 0:
			m.Roles = []string{RoleInstructor}
		case n%7 == 0:
			m.Roles = []string{"Learner"}
		default:
			m.Roles = []string{RoleLearner}
		}
		switch {
		case n%13 == 0:
			m.Status = "Inactive"
		case n%4 == 1:
			// no status: Active
		default:
			m.Status = "Active"
		}
		switch {
		case n == 1:
			m.Name, m.GivenName, m.FamilyName, m.Email = "Ada Lovelace", "Ada", "Lovelace", "ada@example.edu"
		case n%17 == 0:
			// no personal data shared
		default:
			m.GivenName, m.FamilyName = given[n%len(given)], family[(n/10)%len(family)]
			m.Name = m.GivenName + " " + m.FamilyName
			m.Email = m.UserID + "@example.edu"
		}
		if n%3 != 0 {
			m.ResourceLinks = []string{ResourceLinkID}
		}
		out = append(out, m)
	}
	return out
})

// DefaultMembers returns the roster NRPS serves when LMS.Members is nil: 1,000 members
// "user-1" … "user-1000". user-1 is the instructor Ada Lovelace; every 10th is an
// Instructor (every 25th as the short name "Instructor"); n%50==5 are Instructor plus
// TeachingAssistant; other multiples of 7 are "Learner" (short); the rest are Learners.
// n%13==0 are Inactive, n%4==1 have no status, n%17==0 have no name or email, and the
// members with n%3!=0 belong to the resource link ResourceLinkID.
func DefaultMembers() []Member {
	src := defaultMembers()
	out := make([]Member, len(src))
	for i, m := range src {
		m.Roles, m.ResourceLinks = slices.Clone(m.Roles), slices.Clone(m.ResourceLinks)
		out[i] = m
	}
	return out
}

// RoleURI expands a short context role name to its URI: "Learner" becomes
// membership#Learner and "Instructor#TeachingAssistant" membership/Instructor#TeachingAssistant.
// Full URIs are returned as they are.
func RoleURI(role string) string {
	switch {
	case strings.Contains(role, ":"):
		return role
	case strings.Contains(role, "#"):
		return "http://purl.imsglobal.org/vocab/lis/v2/membership/" + role
	default:
		return "http://purl.imsglobal.org/vocab/lis/v2/membership#" + role
	}
}

func (l *LMS) members() []Member {
	if l.Members != nil {
		return l.Members
	}
	return defaultMembers()
}

// knownResourceLink reports whether rlid names a resource link of the course.
func knownResourceLink(rlid string, members []Member) bool {
	if rlid == ResourceLinkID {
		return true
	}
	for _, m := range members {
		if slices.Contains(m.ResourceLinks, rlid) {
			return true
		}
	}
	return false
}

// memberships is the NRPS context membership service.
func (l *LMS) memberships(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeNRPS) || !requireAccept(w, r, MediaMembershipContainer) {
		return
	}
	all := l.members()
	q := r.URL.Query()
	rlid := q.Get("rlid")
	if rlid != "" && !knownResourceLink(rlid, all) {
		http.Error(w, "no resource link "+rlid, http.StatusNotFound)
		return
	}
	role := ""
	if v := q.Get("role"); v != "" {
		role = RoleURI(v)
	}
	list := []Member{}
	for _, m := range all {
		if rlid != "" && !slices.Contains(m.ResourceLinks, rlid) {
			continue
		}
		if role != "" && !slices.ContainsFunc(m.Roles, func(r string) bool { return RoleURI(r) == role }) {
			continue
		}
		if m.Roles == nil {
			m.Roles = []string{}
		}
		list = append(list, m)
	}
	start, end, next, err := l.paginate(r, len(list))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	setNext(w, next)
	writeJSON(w, http.StatusOK, MediaMembershipContainer, map[string]any{
		"id":      l.Issuer + r.URL.RequestURI(),
		"context": map[string]any{"id": "course-42", "label": "CS101", "title": "Introduction to Programming"},
		"members": list[start:end],
	})
}
