package ltiplatform

import (
	"testing"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// BenchmarkIDTokenClaims is the platform-mode hot path before the signature: checking the
// integrator's launch data and encoding the id_token claims.
func BenchmarkIDTokenClaims(b *testing.B) {
	mp := MintParams{
		Issuer: "https://lti.example.com", Now: time.Unix(1_800_000_000, 0), Lifetime: 5 * time.Minute,
		Launch: LaunchOf{MessageHint: MessageHint{ToolID: "t", ClientID: "client", DeploymentID: "1", User: "user-1",
			MessageType: MessageResourceLink, TargetLinkURI: "https://tool.example/launch", ResourceLink: &ResourceLink{ID: "rl-1"}},
			RedirectURI: "https://tool.example/launch", State: "state", Nonce: "nonce"},
		AllowedScopes: []string{ltiwire.ScopeMembershipReadOnly, scopeAGS + "score"},
	}
	d := &LaunchData{
		User: &User{Roles: []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}, Name: "Ada Lovelace",
			GivenName: "Ada", FamilyName: "Lovelace", Email: "ada@example.edu"},
		Context: &Context{ID: "c-1", Label: "MATH", Title: "Maths", Type: []string{"CourseOffering"}},
		Custom:  map[string]string{"a": "1", "b": "2"},
		Services: &Services{NamesAndRoles: &NamesAndRoles{ContextMembershipsURL: "https://lms.example/c-1/members"},
			AssignmentAndGrades: &AssignmentAndGrades{LineItemsURL: "https://lms.example/c-1/lineitems"}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, e := IDTokenClaims(mp, d); e != nil {
			b.Fatal(e)
		}
	}
}
