package lti

import "strings"

// Role vocabulary bases (CORE App. A.2).
const (
	roleSystemBase      = "http://purl.imsglobal.org/vocab/lis/v2/system/person#"
	roleInstitutionBase = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
	roleMembershipBase  = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
	roleSubRoleBase     = "http://purl.imsglobal.org/vocab/lis/v2/membership/" // + Role#SubRole
	roleLTISystemBase   = "http://purl.imsglobal.org/vocab/lti/system/person#"
	roleDeprecatedBase  = "http://purl.imsglobal.org/vocab/lis/v2/person#" // system or institution
	roleV1Context       = "urn:lti:role:ims/lis/"
	roleV1System        = "urn:lti:sysrole:ims/lis/"
	roleV1Institution   = "urn:lti:instrole:ims/lis/"
)

// Well-known role values.
const (
	RoleInstructor          = roleMembershipBase + "Instructor"
	RoleLearner             = roleMembershipBase + "Learner"
	RoleContextAdmin        = roleMembershipBase + "Administrator"
	RoleTeachingAssistant   = roleSubRoleBase + "Instructor#TeachingAssistant"
	RoleSystemAdministrator = roleSystemBase + "Administrator"
	RoleInstitutionAdmin    = roleInstitutionBase + "Administrator"
	RoleTestUser            = roleLTISystemBase + "TestUser" // Canvas "Student View" (T-ROLE-06)
)

var (
	systemRoles      = []string{"Administrator", "None", "AccountAdmin", "Creator", "SysAdmin", "SysSupport", "User"}
	institutionRoles = []string{"Administrator", "Faculty", "Guest", "None", "Other", "Staff", "Student", "Alumni",
		"Instructor", "Learner", "Member", "Mentor", "Observer", "ProspectiveStudent"}
	contextRoles = []string{"Administrator", "ContentDeveloper", "Instructor", "Learner", "Mentor", "Manager", "Member", "Officer"}
	subRoles     = map[string][]string{
		"Administrator": {"Administrator", "Developer", "ExternalDeveloper", "ExternalSupport",
			"ExternalSystemAdministrator", "Support", "SystemAdministrator"},
		"ContentDeveloper": {"ContentDeveloper", "ContentExpert", "ExternalContentExpert", "Librarian"},
		"Instructor": {"ExternalInstructor", "Grader", "GuestInstructor", "Lecturer", "PrimaryInstructor",
			"SecondaryInstructor", "TeachingAssistant", "TeachingAssistantGroup", "TeachingAssistantOffering",
			"TeachingAssistantSection", "TeachingAssistantSectionAssociation", "TeachingAssistantTemplate"},
		"Learner": {"ExternalLearner", "GuestLearner", "Instructor", "Learner", "NonCreditLearner"},
		"Manager": {"AreaManager", "CourseCoordinator", "ExternalObserver", "Manager", "Observer"},
		"Member":  {"Member"},
		"Mentor": {"Advisor", "Auditor", "ExternalAdvisor", "ExternalAuditor", "ExternalLearningFacilitator",
			"ExternalMentor", "ExternalReviewer", "ExternalTutor", "LearningFacilitator", "Mentor", "Reviewer", "Tutor"},
		"Officer": {"Chair", "Communications", "Secretary", "Treasurer", "Vice-Chair"},
	}
	// The short names service-interface §2.1 lists as values in their own right.
	shortRoles = []string{"Administrator", "Student", "Learner", "Instructor"}
)

// roleVocab is service-interface §2.1 exactly; roleAliases maps deprecated and
// simple-name forms (CORE App. A.2) to their §2.1 value.
var roleVocab, roleAliases = buildRoleTables()

func buildRoleTables() (map[string]struct{}, map[string]string) {
	vocab := map[string]struct{}{roleLTISystemBase + "TestUser": {}}
	alias := map[string]string{}
	for _, r := range shortRoles {
		vocab[r] = struct{}{}
	}
	for _, r := range systemRoles {
		vocab[roleSystemBase+r] = struct{}{}
		alias[roleV1System+r] = roleSystemBase + r
	}
	for _, r := range institutionRoles {
		vocab[roleInstitutionBase+r] = struct{}{}
		alias[roleV1Institution+r] = roleInstitutionBase + r
		alias[roleDeprecatedBase+r] = roleInstitutionBase + r // institution wins where both exist
	}
	for _, r := range systemRoles {
		if _, ok := alias[roleDeprecatedBase+r]; !ok {
			alias[roleDeprecatedBase+r] = roleSystemBase + r
		}
	}
	for _, r := range contextRoles {
		vocab[roleMembershipBase+r] = struct{}{}
		alias[roleV1Context+r] = roleMembershipBase + r
		alias[r] = roleMembershipBase + r // CORE A.2.3 simple names; §2.1 short names win below
		for _, s := range subRoles[r] {
			full := roleSubRoleBase + r + "#" + s
			vocab[full] = struct{}{}
			alias[roleV1Context+r+"/"+s] = full
		}
	}
	// LTI 1.1 had TeachingAssistant as a context role of its own.
	alias[roleV1Context+"TeachingAssistant"] = RoleTeachingAssistant
	alias["TeachingAssistant"] = RoleTeachingAssistant
	for _, r := range shortRoles {
		delete(alias, r) // kept as given
	}
	for from, to := range alias {
		if _, ok := vocab[to]; !ok {
			panic("lti: role alias " + from + " maps outside the vocabulary")
		}
	}
	return vocab, alias
}

// NormaliseRoles maps roles to the service-interface §2.1 vocabulary: values of
// the vocabulary are kept exactly; deprecated forms (urn:lti:role|sysrole|instrole,
// lis/v2/person#, simple context-role names) become their §2.1 value; empty strings
// (T-ROLE-03) and values outside the vocabulary (T-ROLE-02; they stay in the raw
// claims) are dropped; duplicates are removed; order is kept. Never nil.
func NormaliseRoles(roles []string) []string {
	out := make([]string, 0, len(roles))
	for _, r := range roles {
		v, ok := normaliseRole(r)
		if !ok || containsString(out, v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

func normaliseRole(r string) (string, bool) {
	if _, ok := roleVocab[r]; ok {
		return r, true
	}
	if v, ok := roleAliases[r]; ok {
		return v, true
	}
	if t := strings.TrimSpace(r); t != r && t != "" {
		return normaliseRole(t)
	}
	return "", false
}

// KnownRole reports whether r is in the §2.1 vocabulary or maps to it.
func KnownRole(r string) bool {
	_, ok := normaliseRole(r)
	return ok
}

// IsInstructor reports whether normalised roles make the user an instructor of the
// context: membership#Instructor, any Instructor sub-role such as
// TeachingAssistant (T-ROLE-06), or the short name.
func IsInstructor(roles []string) bool {
	for _, r := range roles {
		if r == RoleInstructor || r == "Instructor" || strings.HasPrefix(r, roleSubRoleBase+"Instructor#") {
			return true
		}
	}
	return false
}

// IsLearner reports whether normalised roles make the user a learner of the context.
func IsLearner(roles []string) bool {
	for _, r := range roles {
		if r == RoleLearner || r == "Learner" || r == "Student" || strings.HasPrefix(r, roleSubRoleBase+"Learner#") {
			return true
		}
	}
	return false
}

// IsAdministrator reports whether normalised roles carry an administrator role at
// context, institution or system level.
func IsAdministrator(roles []string) bool {
	for _, r := range roles {
		switch {
		case r == RoleContextAdmin, r == "Administrator", r == RoleInstitutionAdmin, r == RoleSystemAdministrator,
			r == roleSystemBase+"SysAdmin", strings.HasPrefix(r, roleSubRoleBase+"Administrator#"):
			return true
		}
	}
	return false
}

// IsTestUser reports the LTI TestUser system role (Canvas "Student View").
func IsTestUser(roles []string) bool { return containsString(roles, RoleTestUser) }

// contextTypeVocab is service-interface §2.2 exactly.
var contextTypeVocab = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, t := range []string{"CourseTemplate", "CourseOffering", "CourseSection", "Group"} {
		m["http://purl.imsglobal.org/vocab/lis/v2/course#"+t] = struct{}{}
		m[t] = struct{}{}
		m["urn:lti:context-type:ims/lis/"+t] = struct{}{}
	}
	return m
}()

// NormaliseContextTypes keeps the context types of service-interface §2.2 as
// given (full LIS v2 URIs, simple names as Moodle and the DL spec send them, and
// the LTI 1.1 URNs), dropping empty and unknown values (T-CTX-01) and duplicates.
// Never nil.
func NormaliseContextTypes(types []string) []string {
	out := make([]string, 0, len(types))
	for _, t := range types {
		if _, ok := contextTypeVocab[t]; !ok {
			if t = strings.TrimSpace(t); t == "" {
				continue
			}
			if _, ok := contextTypeVocab[t]; !ok {
				continue
			}
		}
		if !containsString(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// MembershipRoles is NormaliseRoles with the §2.1 short names written as the context
// roles they stand for (Learner and Student: membership#Learner; Instructor;
// Administrator: membership#Administrator), as NRPS memberships carry them: a tool matches
// full URIs. Platform mode answers rosters and reads role filters with it.
func MembershipRoles(roles []string) []string {
	out := NormaliseRoles(roles)
	j := 0
	for _, r := range out {
		switch r {
		case "Learner", "Student":
			r = RoleLearner
		case "Instructor":
			r = RoleInstructor
		case "Administrator":
			r = RoleContextAdmin
		}
		if !containsString(out[:j], r) {
			out[j] = r
			j++
		}
	}
	return out[:j]
}
