package advantage

import (
	"fmt"
	"strings"

	"github.com/ltiop/ltiop/internal/jsonscan"
)

// The NRPS membership container is decoded by hand: a class roster is the largest body
// ltiop reads (16 MiB allowed) and encoding/json needs about 4 ms for 1,000 members on a
// small node. internal/jsonscan reads the input once, validating it, and decoded strings
// without escapes are slices of one copy of the input, so a page costs a handful of
// allocations.
//
// It accepts exactly RFC 8259 JSON (anything else is an error) with these mapping rules:
//   - the top level is an object (or null: an empty page);
//   - "id", "context"."id" and a member's "user_id" are strings, or numbers kept as
//     written, or null ("");
//   - "members" is an array of objects, or null;
//   - a member's "roles" is an array whose string elements are kept (others skipped), a
//     single string, or null;
//   - the other known fields are strings; a value of another type is ignored;
//   - member keys match exactly (as NRPS spells them); unknown members are skipped;
//     the last of duplicate keys wins.

// maxPreallocMembers bounds what a page's key count can make us allocate up front.
const maxPreallocMembers = 4096

// MapMembers decodes an NRPS membership container and maps it to the integrator-facing
// shape: status defaults to Active (T-NRPS-04), roles are kept as sent (T-NRPS-05), absent
// personal data stays empty (T-NRPS-06), numeric ids become strings. Members and each
// member's Roles are never nil. Next is not set (it comes from the Link header).
func MapMembers(raw []byte) (*MembershipPage, error) {
	s := string(raw)
	sc := jsonscan.NewScanner(s)
	page := &MembershipPage{}
	err := decodeContainer(sc, s, page)
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return nil, fmt.Errorf("not an NRPS membership container: %w", err)
	}
	if page.Members == nil {
		page.Members = []Member{}
	}
	return page, nil
}

// decodeContainer decodes the container at sc; s is the whole input.
func decodeContainer(sc *jsonscan.Scanner, s string, page *MembershipPage) error {
	if sc.Kind() == jsonscan.Null {
		sc.Skip()
		return nil
	}
	var roles []string // every member's roles, back to back; members take slices of it
	var spans [][2]int
	for sc.Object(); sc.NextMember(); {
		var err error
		switch sc.Key() {
		case "id":
			page.ID, err = scalar(sc, "id")
		case "context":
			err = decodeContext(sc, &page.Context)
		case "members":
			if sc.Kind() == jsonscan.Null {
				sc.Skip()
				page.Members, roles, spans = nil, roles[:0], spans[:0]
				continue
			}
			n := min(strings.Count(s[sc.Offset():], `"user_id"`), maxPreallocMembers)
			page.Members, roles, spans = make([]Member, 0, n), make([]string, 0, 2*n), make([][2]int, 0, n)
			for sc.Array(); sc.NextElement(); {
				if sc.Kind() != jsonscan.Object {
					return mappingError(sc, "a member is not an object")
				}
				var m Member
				start := len(roles)
				if roles, err = decodeMember(sc, &m, roles); err != nil {
					return err
				}
				page.Members = append(page.Members, m)
				spans = append(spans, [2]int{start, len(roles)})
			}
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for i := range page.Members {
		s := spans[i]
		page.Members[i].Roles = roles[s[0]:s[1]:s[1]] // capped: an append by a caller copies
	}
	return nil
}

func decodeContext(sc *jsonscan.Scanner, c *MembershipContext) error {
	if sc.Kind() != jsonscan.Object {
		return nil // null, or a value of the wrong type: ignored (skipped by the caller's loop)
	}
	for sc.Object(); sc.NextMember(); {
		switch sc.Key() {
		case "id":
			var err error
			if c.ID, err = scalar(sc, "context.id"); err != nil {
				return err
			}
		case "label":
			c.Label = lenient(sc)
		case "title":
			c.Title = lenient(sc)
		}
	}
	return nil
}

// decodeMember decodes one member object, appending its roles to roles.
func decodeMember(sc *jsonscan.Scanner, m *Member, roles []string) ([]string, error) {
	rolesStart := len(roles)
	for sc.Object(); sc.NextMember(); {
		switch sc.Key() {
		case "user_id":
			var err error
			if m.UserID, err = scalar(sc, "user_id"); err != nil {
				return roles, err
			}
		case "roles":
			roles = roles[:rolesStart] // the last "roles" wins
			switch sc.Kind() {
			case jsonscan.String:
				roles = append(roles, sc.Str())
			case jsonscan.Array:
				for sc.Array(); sc.NextElement(); {
					if sc.Kind() == jsonscan.String {
						roles = append(roles, sc.Str())
					} // other elements are skipped
				}
			} // null or another type: skipped
		case "status":
			m.Status = lenient(sc)
		case "email":
			m.Email = lenient(sc)
		case "name":
			m.Name = lenient(sc)
		case "given_name":
			m.GivenName = lenient(sc)
		case "family_name":
			m.FamilyName = lenient(sc)
		case "middle_name":
			m.MiddleName = lenient(sc)
		case "lis_person_sourcedid":
			m.LisPersonSourcedID = lenient(sc)
		case "picture":
			m.Picture = lenient(sc)
		case "lti11_legacy_user_id": // a string, or a number kept as written
			if sc.Kind() == jsonscan.Number {
				m.LTI11LegacyUserID = sc.Number()
			} else {
				m.LTI11LegacyUserID = lenient(sc)
			}
		}
	}
	if m.Status == "" {
		m.Status = "Active"
	}
	return roles, nil
}

// scalar reads a string, a number (kept as written) or null; other types are errors.
func scalar(sc *jsonscan.Scanner, field string) (string, error) {
	switch sc.Kind() {
	case jsonscan.String:
		return sc.Str(), nil
	case jsonscan.Number:
		return sc.Number(), nil
	case jsonscan.Null:
		sc.Skip()
		return "", nil
	}
	return "", mappingError(sc, field+" is not a string")
}

// lenient reads a string; a value of another type is left to be skipped ("").
func lenient(sc *jsonscan.Scanner) string {
	if sc.Kind() == jsonscan.String {
		return sc.Str()
	}
	return ""
}

// mappingError is a valid-JSON-but-wrong-shape error at the scanner's position, or
// the JSON error met there first.
func mappingError(sc *jsonscan.Scanner, msg string) error {
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("offset %d: %s", sc.Offset(), msg)
}
