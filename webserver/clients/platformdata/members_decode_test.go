package platformdata

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
)

// membersCases are answers of memberships.list: the plain shape, which the fast path
// decodes, and the odd ones, which it must leave to encoding/json.
var membersCases = []struct {
	name string
	body string
	fast bool // the fast path decodes it
}{
	{"plain", `{"context":{"id":"c1","label":"BIO","title":"Biology"},"members":[{"userId":"u1","roles":["Learner","http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"],"status":"Inactive","name":"Ada","givenName":"Ada","familyName":"Lovelace","middleName":"K","email":"ada@example.edu","picture":"https://example.edu/a.png","lisPersonSourcedId":"sis-1","lti11LegacyUserId":"old-1"}],"next":"100"}`, true},
	{"escapes and whitespace", " {\"members\" : [ {\"userId\":\"u\\u00e9\\n\",\"name\":\"A \\\"B\\\"\",\"roles\":[]} ] } ", true},
	{"nulls", `{"context":null,"members":[{"userId":"u1","roles":null,"name":null}],"next":null}`, true},
	{"null members", `{"members":null}`, true},
	{"empty", `{}`, true},
	{"unknown members skipped", `{"x":[1,{"y":2}],"members":[{"userId":"u1","extra":{"a":[true]}}],"context":{"id":"c","more":1}}`, true},
	{"invalid UTF-8 in a string", "{\"members\":[{\"userId\":\"u\xff1\"}]}", true},
	{"case-folded key", `{"members":[{"UserId":"u1"}]}`, false},
	{"case-folded page key", `{"Members":[{"userId":"u1"}]}`, false},
	{"non-ASCII key", `{"members":[{"userſd":"u1"}]}`, false},
	{"duplicate key", `{"members":[{"userId":"u1","userId":"u2"}]}`, false},
	{"duplicate context", `{"context":{"id":"a"},"context":{"title":"b"}}`, false},
	{"number for a string", `{"members":[{"userId":7}]}`, false},
	{"roles not an array", `{"members":[{"userId":"u","roles":"Learner"}]}`, false},
	{"a role not a string", `{"members":[{"userId":"u","roles":[null]}]}`, false},
	{"null member", `{"members":[null]}`, false},
	{"top-level array", `[]`, false},
	{"top-level null", `null`, false},
	{"invalid JSON", `{"members":[{"userId":"u1"}`, false},
	{"trailing data", `{"members":[]} {}`, false},
}

// TestDecodeMembersPageAgreesWithEncodingJSON: the roster's fast path decodes the plain
// shape exactly as encoding/json does, and hands everything else to it.
func TestDecodeMembersPageAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range membersCases {
		t.Run(tc.name, func(t *testing.T) {
			var fast MembersPage
			ok := decodeMembersPage([]byte(tc.body), &fast)
			if ok != tc.fast {
				t.Fatalf("fast path: %v, want %v", ok, tc.fast)
			}
			if !ok {
				return
			}
			var want MembersPage
			if err := json.Unmarshal([]byte(tc.body), &want); err != nil {
				t.Fatalf("encoding/json refused what the fast path decoded: %v", err)
			}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("fast path:\n%+v\nencoding/json:\n%+v", fast, want)
			}
		})
	}
}

// FuzzDecodeMembersPage: whatever the fast path decodes, encoding/json decodes the same.
func FuzzDecodeMembersPage(f *testing.F) {
	for _, tc := range membersCases {
		f.Add(tc.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var fast MembersPage
		if !decodeMembersPage([]byte(body), &fast) {
			return
		}
		var want MembersPage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("encoding/json refused %q: %v", body, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q:\nfast path: %+v\nencoding/json: %+v", body, fast, want)
		}
	})
}

func rosterPage(n int) []byte {
	page := MembersPage{Context: &Context{ID: "course-1", Title: "Course"}, Next: "100"}
	for i := range n {
		page.Members = append(page.Members, advantage.Member{UserID: "user-" + strconv.Itoa(i), Roles: []string{"Learner"},
			Name: "Ada Lovelace " + strconv.Itoa(i), GivenName: "Ada", FamilyName: "Lovelace", Email: "ada" + strconv.Itoa(i) + "@example.edu"})
	}
	b, _ := json.Marshal(page)
	return b
}

// BenchmarkDecodeMembersPage100 decodes a page of 100 members with the fast path, and
// with encoding/json for comparison.
func BenchmarkDecodeMembersPage100(b *testing.B) {
	body := rosterPage(100)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p MembersPage
			if !decodeMembersPage(body, &p) || len(p.Members) != 100 {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p MembersPage
			if err := json.Unmarshal(body, &p); err != nil || len(p.Members) != 100 {
				b.Fatal(err)
			}
		}
	})
	if !strings.Contains(string(body), `"userId":"user-99"`) {
		b.Fatal("the page is not the expected one")
	}
}
