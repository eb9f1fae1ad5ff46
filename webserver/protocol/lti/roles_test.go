package lti

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestNormaliseRoles(t *testing.T) {
	const (
		sys  = roleSystemBase
		inst = roleInstitutionBase
		mem  = roleMembershipBase
	)
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"nil gives an empty list", nil, []string{}},
		{"T-ROLE-01 short names kept as given", []string{"Instructor", "Learner", "Student", "Administrator"},
			[]string{"Instructor", "Learner", "Student", "Administrator"}},
		{"T-ROLE-01 other simple context names map to membership", []string{"Mentor", "ContentDeveloper", "TeachingAssistant"},
			[]string{mem + "Mentor", mem + "ContentDeveloper", RoleTeachingAssistant}},
		{"T-ROLE-02 unknown values dropped", []string{"http://purl.imsglobal.org/vocab/lis/v2/unknown/unknown#Helper",
			mem + "Wizard", "instructor", "urn:lti:role:ims/lis/Nobody"}, []string{}},
		{"T-ROLE-03 empty strings dropped", []string{"", " ", mem + "Learner", ""}, []string{mem + "Learner"}},
		{"T-ROLE-04 system, institution and context roles", []string{sys + "User", inst + "Faculty", mem + "Instructor",
			RoleTestUser}, []string{sys + "User", inst + "Faculty", mem + "Instructor", RoleTestUser}},
		{"T-ROLE-05 LTI 1.1 context URNs", []string{"urn:lti:role:ims/lis/Instructor", "urn:lti:role:ims/lis/Learner/NonCreditLearner",
			"urn:lti:role:ims/lis/TeachingAssistant"},
			[]string{mem + "Instructor", roleSubRoleBase + "Learner#NonCreditLearner", RoleTeachingAssistant}},
		{"T-ROLE-05 LTI 1.1 system and institution URNs", []string{"urn:lti:sysrole:ims/lis/Administrator",
			"urn:lti:sysrole:ims/lis/SysAdmin", "urn:lti:instrole:ims/lis/Faculty", "urn:lti:instrole:ims/lis/Student"},
			[]string{sys + "Administrator", sys + "SysAdmin", inst + "Faculty", inst + "Student"}},
		{"T-ROLE-05 deprecated lis/v2/person# prefers institution, else system", []string{
			"http://purl.imsglobal.org/vocab/lis/v2/person#Administrator", "http://purl.imsglobal.org/vocab/lis/v2/person#Faculty",
			"http://purl.imsglobal.org/vocab/lis/v2/person#SysAdmin", "http://purl.imsglobal.org/vocab/lis/v2/person#Wizard"},
			[]string{inst + "Administrator", inst + "Faculty", sys + "SysAdmin"}},
		{"T-ROLE-06 sub-roles kept", []string{RoleTeachingAssistant, roleSubRoleBase + "Officer#Vice-Chair"},
			[]string{RoleTeachingAssistant, roleSubRoleBase + "Officer#Vice-Chair"}},
		{"duplicates after mapping removed, order kept", []string{mem + "Learner", "urn:lti:role:ims/lis/Instructor",
			mem + "Instructor", mem + "Learner"}, []string{mem + "Learner", mem + "Instructor"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormaliseRoles(tc.in)
			if got == nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("NormaliseRoles(%q)\n got %#v\nwant %#v", tc.in, got, tc.want)
			}
			for _, r := range got {
				if _, ok := roleVocab[r]; !ok {
					t.Errorf("%q is not a §2.1 value", r)
				}
			}
		})
	}
}

func TestRolePredicates(t *testing.T) {
	ta := NormaliseRoles([]string{"http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"})
	if !IsInstructor(ta) || IsLearner(ta) || IsAdministrator(ta) {
		t.Errorf("TA %v", ta)
	}
	moodleAdmin := NormaliseRoles([]string{inst("Administrator"), RoleInstructor, RoleSystemAdministrator})
	if !IsInstructor(moodleAdmin) || !IsAdministrator(moodleAdmin) {
		t.Errorf("Moodle admin %v", moodleAdmin)
	}
	student := NormaliseRoles([]string{"Student"})
	if !IsLearner(student) || IsInstructor(student) || IsTestUser(student) {
		t.Errorf("student %v", student)
	}
	if !KnownRole("urn:lti:role:ims/lis/Mentor") || KnownRole("") || KnownRole("Wizard") {
		t.Error("KnownRole")
	}
}

func inst(r string) string { return roleInstitutionBase + r }

func TestNormaliseContextTypes(t *testing.T) {
	const course = "http://purl.imsglobal.org/vocab/lis/v2/course#"
	tests := []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{""}, []string{}},
		{[]string{"CourseSection"}, []string{"CourseSection"}},
		{[]string{course + "CourseOffering", "urn:lti:context-type:ims/lis/Group", "Course", course + "CourseOffering",
			" CourseTemplate "}, []string{course + "CourseOffering", "urn:lti:context-type:ims/lis/Group", "CourseTemplate"}},
	}
	for _, tc := range tests {
		if got := NormaliseContextTypes(tc.in); got == nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NormaliseContextTypes(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

// TestVocabulariesMatchTheSpec compares the tables with service-interface §2.1
// and §2.2 (copied into testdata/spec).
func TestVocabulariesMatchTheSpec(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "spec", "service-interface-vocabularies.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := codeBlocks(string(b))
	if len(blocks) < 2 {
		t.Fatalf("found %d code blocks in the spec", len(blocks))
	}
	for i, vocab := range []map[string]struct{}{roleVocab, contextTypeVocab} {
		var got []string
		for k := range vocab {
			got = append(got, k)
		}
		want := strings.Fields(blocks[i])
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("vocabulary %d differs from the spec:\n got %q\nwant %q", i, got, want)
		}
	}
}

func codeBlocks(md string) []string {
	var out []string
	for {
		start := strings.Index(md, "```\n")
		if start < 0 {
			return out
		}
		md = md[start+4:]
		end := strings.Index(md, "```")
		if end < 0 {
			return out
		}
		out = append(out, md[:end])
		md = md[end+3:]
	}
}

func TestMembershipRoles(t *testing.T) {
	got := MembershipRoles([]string{"Learner", "Student", "Instructor", "urn:lti:role:ims/lis/Mentor", "Teacher", RoleSystemAdministrator, "Administrator"})
	want := []string{RoleLearner, RoleInstructor, roleMembershipBase + "Mentor", RoleSystemAdministrator, RoleContextAdmin}
	if !slices.Equal(got, want) {
		t.Fatalf("MembershipRoles = %v, want %v", got, want)
	}
}
