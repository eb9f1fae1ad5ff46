package advantage

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// primedClient is a client holding a token for cred and scopes.
func primedClient(tb testing.TB, scopes []string) (*Client, Credentials) {
	tb.Helper()
	ts := newTokenServer(tb)
	c := newTestClient(nil)
	cred := ts.cred()
	if _, err := c.Token(context.Background(), cred, scopes); err != nil {
		tb.Fatal(err)
	}
	return c, cred
}

// The cache hit allocates nothing, in any scope order (the zero-allocation contract).
func TestTokenCacheHitAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c, cred := primedClient(t, []string{ltiwire.ScopeScore, ltiwire.ScopeLineItem, ltiwire.ScopeResultReadOnly})
	ctx := context.Background()
	for _, scopes := range [][]string{
		{ltiwire.ScopeScore, ltiwire.ScopeLineItem, ltiwire.ScopeResultReadOnly},
		{ltiwire.ScopeLineItem, ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore},
		{ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore, ltiwire.ScopeLineItem, ltiwire.ScopeScore},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := c.Token(ctx, cred, scopes); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("cache hit for %d scopes: %v allocations", len(scopes), allocs)
		}
	}
	// Credentials and the scope slice built at the call site cost nothing either.
	platformID, clientID, tokenURL, deploymentID := cred.PlatformID, cred.ClientID, cred.TokenURL, cred.DeploymentID
	allocs := testing.AllocsPerRun(1000, func() {
		creds := Credentials{PlatformID: platformID, ClientID: clientID, TokenURL: tokenURL, DeploymentID: deploymentID, KID: testKID, Key: toolKey}
		if _, err := c.Token(ctx, creds, []string{ltiwire.ScopeLineItem, ltiwire.ScopeScore, ltiwire.ScopeResultReadOnly}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("cache hit with call-site literals: %v allocations", allocs)
	}
}

func BenchmarkTokenCacheHit(b *testing.B) {
	scopes := []string{ltiwire.ScopeLineItem, ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore}
	c, cred := primedClient(b, scopes)
	ctx := context.Background()
	b.Run("sorted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Token(ctx, cred, scopes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unsorted-with-duplicate", func(b *testing.B) {
		unsorted := []string{ltiwire.ScopeScore, ltiwire.ScopeLineItem, ltiwire.ScopeScore, ltiwire.ScopeResultReadOnly}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Token(ctx, cred, unsorted); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Token(ctx, cred, scopes); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// membersPage is a realistic NRPS page: n members with full URIs, names, emails, pictures.
func membersPage(n int) []byte {
	members := make([]map[string]any, n)
	for i := range members {
		members[i] = map[string]any{
			"user_id":              fmt.Sprintf("535fa085-f5a1-4f2c-a4a5-%012d", i),
			"lti11_legacy_user_id": fmt.Sprintf("8f5d8e6b7b0c4f1e9a2d%020d", i),
			"roles":                []string{roleLearner, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"},
			"status":               "Active",
			"name":                 fmt.Sprintf("Student Number %d", i),
			"given_name":           "Student",
			"family_name":          fmt.Sprintf("Number %d", i),
			"email":                fmt.Sprintf("student%d@university.example.edu", i),
			"lis_person_sourcedid": fmt.Sprintf("SIS-%08d", i),
			"picture":              fmt.Sprintf("https://canvas.example.edu/images/thumbnails/%d/avatar.png", i),
		}
	}
	raw, _ := json.Marshal(map[string]any{
		"id":      "https://canvas.example.edu/api/lti/courses/1/names_and_roles",
		"context": map[string]any{"id": "4dde05e8ca1973bcca9bffc13e1548820eee93a3", "label": "CS101", "title": "Intro"},
		"members": members,
	})
	return raw
}

func BenchmarkMapMembers1000(b *testing.B) {
	raw := membersPage(1000)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		page, err := MapMembers(raw)
		if err != nil || len(page.Members) != 1000 {
			b.Fatal(err)
		}
	}
}

func BenchmarkClientAssertion(b *testing.B) {
	cred := Credentials{ClientID: testClientID, TokenURL: "https://sso.canvaslms.com/login/oauth2/token", DeploymentID: testDeploy, KID: testKID, Key: toolKey}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ClientAssertion(cred, now); err != nil {
			b.Fatal(err)
		}
	}
}
