package toolmode

import (
	"strconv"
	"testing"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
)

// BenchmarkNormaliseMembers: the roles of a 1,000-member page, as /api/memberships
// normalises them on every call.
func BenchmarkNormaliseMembers(b *testing.B) {
	page := &advantage.MembershipPage{Members: make([]advantage.Member, 1000)}
	for i := range page.Members {
		page.Members[i] = advantage.Member{UserID: "user-" + strconv.Itoa(i), Status: "Active",
			Roles: []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner", "urn:lti:role:ims/lis/Learner"}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := normaliseMembers(page); len(out.Members[999].Roles) != 1 {
			b.Fatal(out.Members[999].Roles)
		}
	}
}
