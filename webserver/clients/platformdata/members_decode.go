package platformdata

import (
	"strings"

	"github.com/ltiop/ltiop/internal/jsonscan"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
)

// A members page is the largest answer ltiop reads on a tool's request (a roster page of up
// to 1,000 members), and encoding/json spent over half the server CPU of serving one
// (BenchmarkRosterPage100). decodeMembersPage reads the page's plain shape in one pass
// with internal/jsonscan, taking strings without escapes as slices of one copy of the
// answer.
//
// It is only a fast path: for anything but the plain shape — a member of the wrong type,
// a null element, a duplicate key, a key encoding/json would match case-insensitively
// ("UserId"), invalid JSON — it reports false and Call decodes the answer with
// encoding/json, so the result and the errors are encoding/json's in every case.

// decodeMembersPage decodes answer into *page, which it may have filled partly when it
// reports false.
func decodeMembersPage(answer []byte, page *MembersPage) bool {
	s := string(answer)
	sc := jsonscan.NewScanner(s)
	if sc.Kind() != jsonscan.Object {
		return false
	}
	var seen fieldSet
	for sc.Object(); sc.NextMember(); {
		var ok bool
		switch k := sc.Key(); k {
		case "context":
			ok = seen.first(0) && decodePageContext(sc, page)
		case "members":
			ok = seen.first(1) && decodeMembers(sc, s, page)
		case "next":
			ok = seen.first(2) && optString(sc, &page.Next)
		default:
			ok = !foldsTo(k, "context", "members", "next")
		}
		if !ok {
			return false
		}
	}
	return sc.End() == nil
}

func decodePageContext(sc *jsonscan.Scanner, page *MembersPage) bool {
	switch sc.Kind() {
	case jsonscan.Null:
		sc.Skip()
		page.Context = nil
		return true
	case jsonscan.Object:
	default:
		return false
	}
	c := &Context{}
	var seen fieldSet
	for sc.Object(); sc.NextMember(); {
		var ok bool
		switch k := sc.Key(); k {
		case "id":
			ok = seen.first(0) && optString(sc, &c.ID)
		case "label":
			ok = seen.first(1) && optString(sc, &c.Label)
		case "title":
			ok = seen.first(2) && optString(sc, &c.Title)
		default:
			ok = !foldsTo(k, "id", "label", "title")
		}
		if !ok {
			return false
		}
	}
	page.Context = c
	return sc.Err() == nil
}

// memberFields are advantage.Member's JSON names, in the order of the fieldSet bits.
var memberFields = []string{"userId", "roles", "status", "email", "name", "givenName", "familyName", "middleName",
	"lisPersonSourcedId", "picture", "lti11LegacyUserId"}

// maxPreallocMembers bounds what a page's text can make us allocate up front.
const maxPreallocMembers = 4096

func decodeMembers(sc *jsonscan.Scanner, s string, page *MembersPage) bool {
	switch sc.Kind() {
	case jsonscan.Null:
		sc.Skip()
		page.Members = nil
		return true
	case jsonscan.Array:
	default:
		return false
	}
	n := min(strings.Count(s[sc.Offset():], `"userId"`), maxPreallocMembers)
	page.Members = make([]advantage.Member, 0, n)
	roles := make([]string, 0, 2*n) // every member's roles back to back; members take capped slices
	for sc.Array(); sc.NextElement(); {
		if sc.Kind() != jsonscan.Object {
			return false
		}
		page.Members = append(page.Members, advantage.Member{})
		var ok bool
		if roles, ok = decodeMember(sc, &page.Members[len(page.Members)-1], roles); !ok {
			return false
		}
	}
	return sc.Err() == nil
}

func decodeMember(sc *jsonscan.Scanner, m *advantage.Member, roles []string) ([]string, bool) {
	var seen fieldSet
	for sc.Object(); sc.NextMember(); {
		k := sc.Key()
		var dst *string
		var bit int
		switch k {
		case "userId":
			bit, dst = 0, &m.UserID
		case "roles":
			var ok bool
			if !seen.first(1) {
				return roles, false
			}
			if roles, ok = decodeRoles(sc, m, roles); !ok {
				return roles, false
			}
			continue
		case "status":
			bit, dst = 2, &m.Status
		case "email":
			bit, dst = 3, &m.Email
		case "name":
			bit, dst = 4, &m.Name
		case "givenName":
			bit, dst = 5, &m.GivenName
		case "familyName":
			bit, dst = 6, &m.FamilyName
		case "middleName":
			bit, dst = 7, &m.MiddleName
		case "lisPersonSourcedId":
			bit, dst = 8, &m.LisPersonSourcedID
		case "picture":
			bit, dst = 9, &m.Picture
		case "lti11LegacyUserId":
			bit, dst = 10, &m.LTI11LegacyUserID
		default:
			if foldsTo(k, memberFields...) {
				return roles, false
			}
			continue
		}
		if !seen.first(bit) || !optString(sc, dst) {
			return roles, false
		}
	}
	return roles, sc.Err() == nil
}

// decodeRoles appends a member's roles to roles and gives the member a capped slice of
// them (an append by a caller copies).
func decodeRoles(sc *jsonscan.Scanner, m *advantage.Member, roles []string) ([]string, bool) {
	switch sc.Kind() {
	case jsonscan.Null:
		sc.Skip()
		return roles, true
	case jsonscan.Array:
	default:
		return roles, false
	}
	start := len(roles)
	for sc.Array(); sc.NextElement(); {
		if sc.Kind() != jsonscan.String {
			return roles, false
		}
		roles = append(roles, sc.Str())
	}
	m.Roles = roles[start:len(roles):len(roles)]
	return roles, sc.Err() == nil
}

// optString reads a string into *dst; null leaves it as it is (as encoding/json does).
// Another type is not the plain shape.
func optString(sc *jsonscan.Scanner, dst *string) bool {
	switch sc.Kind() {
	case jsonscan.String:
		*dst = sc.Str()
		return true
	case jsonscan.Null:
		sc.Skip()
		return true
	}
	return false
}

// foldsTo reports whether encoding/json might match key to one of names although it is
// none of them exactly: it matches names case-insensitively (and folds a few non-ASCII
// letters, hence any non-ASCII key).
func foldsTo(key string, names ...string) bool {
	for i := range len(key) {
		if key[i] >= 0x80 {
			return true
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// fieldSet records the members of an object seen so far.
type fieldSet uint16

// first marks field bit as seen and reports whether it was not seen before: a duplicate
// key is not the plain shape (encoding/json merges a duplicate object into the first).
func (s *fieldSet) first(bit int) bool {
	m := fieldSet(1) << bit
	if *s&m != 0 {
		return false
	}
	*s |= m
	return true
}
