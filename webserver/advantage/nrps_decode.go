package advantage

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The NRPS membership container is decoded by hand: a class roster is the largest body
// ltiop reads (16 MiB allowed) and encoding/json needs about 4 ms for 1,000 members on a
// small node. This decoder reads the input once, and decoded strings without escapes are
// slices of one copy of the input, so a page costs a handful of allocations.
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
type nrpsDecoder struct {
	s     string // the input; decoded strings are substrings of it where possible
	i     int
	depth int
}

const (
	maxJSONDepth = 10000
	// maxPreallocMembers bounds what a page's key count can make us allocate up front.
	maxPreallocMembers = 4096
)

var errJSONDepth = errors.New("JSON nested too deeply")

// MapMembers decodes an NRPS membership container and maps it to the integrator-facing
// shape: status defaults to Active (T-NRPS-04), roles are kept as sent (T-NRPS-05), absent
// personal data stays empty (T-NRPS-06), numeric ids become strings. Members and each
// member's Roles are never nil. Next is not set (it comes from the Link header).
func MapMembers(raw []byte) (*MembershipPage, error) {
	d := &nrpsDecoder{s: string(raw)}
	page := &MembershipPage{}
	if err := d.container(page); err != nil {
		return nil, fmt.Errorf("not an NRPS membership container: %w", err)
	}
	if page.Members == nil {
		page.Members = []Member{}
	}
	return page, nil
}

func (d *nrpsDecoder) container(page *MembershipPage) error {
	d.ws()
	if d.literal("null") {
		return d.end()
	}
	var roles []string // every member's roles, back to back; members take slices of it
	var spans [][2]int
	err := d.object(func(key string) error {
		switch key {
		case "id":
			v, err := d.scalar("id")
			page.ID = v
			return err
		case "context":
			return d.context(&page.Context)
		case "members":
			d.ws()
			if d.literal("null") {
				page.Members, roles, spans = nil, roles[:0], spans[:0]
				return nil
			}
			n := min(strings.Count(d.s[d.i:], `"user_id"`), maxPreallocMembers)
			page.Members, roles, spans = make([]Member, 0, n), make([]string, 0, 2*n), make([][2]int, 0, n)
			return d.array(func() error {
				if d.peek() != '{' {
					return d.errorf("a member is not an object")
				}
				var m Member
				start := len(roles)
				var err error
				if roles, err = d.member(&m, roles); err != nil {
					return err
				}
				page.Members = append(page.Members, m)
				spans = append(spans, [2]int{start, len(roles)})
				return nil
			})
		}
		return d.skip()
	})
	if err != nil {
		return err
	}
	if err := d.end(); err != nil {
		return err
	}
	for i := range page.Members {
		s := spans[i]
		page.Members[i].Roles = roles[s[0]:s[1]:s[1]] // capped: an append by a caller copies
	}
	return nil
}

func (d *nrpsDecoder) context(c *MembershipContext) error {
	d.ws()
	if d.peek() != '{' {
		return d.skip() // null, or a value of the wrong type: ignored
	}
	return d.object(func(key string) error {
		var err error
		switch key {
		case "id":
			c.ID, err = d.scalar("context.id")
		case "label":
			c.Label, err = d.lenient()
		case "title":
			c.Title, err = d.lenient()
		default:
			err = d.skip()
		}
		return err
	})
}

// member decodes one member object, appending its roles to roles.
func (d *nrpsDecoder) member(m *Member, roles []string) ([]string, error) {
	rolesStart := len(roles)
	err := d.object(func(key string) error {
		var err error
		switch key {
		case "user_id":
			m.UserID, err = d.scalar("user_id")
		case "roles":
			roles = roles[:rolesStart] // the last "roles" wins
			roles, err = d.roles(roles)
		case "status":
			m.Status, err = d.lenient()
		case "email":
			m.Email, err = d.lenient()
		case "name":
			m.Name, err = d.lenient()
		case "given_name":
			m.GivenName, err = d.lenient()
		case "family_name":
			m.FamilyName, err = d.lenient()
		case "middle_name":
			m.MiddleName, err = d.lenient()
		case "lis_person_sourcedid":
			m.LisPersonSourcedID, err = d.lenient()
		case "picture":
			m.Picture, err = d.lenient()
		default:
			err = d.skip()
		}
		return err
	})
	if m.Status == "" {
		m.Status = "Active"
	}
	return roles, err
}

func (d *nrpsDecoder) roles(roles []string) ([]string, error) {
	d.ws()
	switch d.peek() {
	case '"':
		s, err := d.str()
		return append(roles, s), err
	case '[':
		err := d.array(func() error {
			if d.peek() == '"' {
				s, err := d.str()
				roles = append(roles, s)
				return err
			}
			return d.skip()
		})
		return roles, err
	}
	return roles, d.skip()
}

// scalar reads a string, a number (kept as written) or null; other types are errors.
func (d *nrpsDecoder) scalar(field string) (string, error) {
	d.ws()
	switch c := d.peek(); {
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case d.literal("null"):
		return "", nil
	}
	return "", d.errorf("%s is not a string", field)
}

// lenient reads a string, or skips a value of another type ("").
func (d *nrpsDecoder) lenient() (string, error) {
	d.ws()
	if d.peek() == '"' {
		return d.str()
	}
	return "", d.skip()
}

// object calls field for each member of the object at d.i, positioned at its value.
func (d *nrpsDecoder) object(field func(key string) error) error {
	d.ws()
	if d.peek() != '{' {
		return d.errorf("expected an object")
	}
	if d.depth++; d.depth > maxJSONDepth {
		return errJSONDepth
	}
	d.i++
	d.ws()
	if d.peek() == '}' {
		d.i++
		d.depth--
		return nil
	}
	for {
		d.ws()
		key, err := d.str()
		if err != nil {
			return err
		}
		d.ws()
		if d.peek() != ':' {
			return d.errorf("expected ':'")
		}
		d.i++
		if err := field(key); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return nil
		default:
			return d.errorf("expected ',' or '}'")
		}
	}
}

// array calls elem for each element of the array at d.i, positioned at the element.
func (d *nrpsDecoder) array(elem func() error) error {
	d.ws()
	if d.peek() != '[' {
		return d.errorf("expected an array")
	}
	if d.depth++; d.depth > maxJSONDepth {
		return errJSONDepth
	}
	d.i++
	d.ws()
	if d.peek() == ']' {
		d.i++
		d.depth--
		return nil
	}
	for {
		d.ws()
		if err := elem(); err != nil {
			return err
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			return nil
		default:
			return d.errorf("expected ',' or ']'")
		}
	}
}

// skip validates and skips one value.
func (d *nrpsDecoder) skip() error {
	d.ws()
	switch c := d.peek(); {
	case c == '"':
		_, err := d.strEnd()
		return err
	case c == '{':
		return d.object(func(string) error { return d.skip() })
	case c == '[':
		return d.array(d.skip)
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.number()
		return err
	case d.literal("true"), d.literal("false"), d.literal("null"):
		return nil
	}
	return d.errorf("invalid value")
}

// str reads a string literal. Without escapes and with valid UTF-8 it is a substring of
// the input; otherwise encoding/json decodes it (same escapes, same U+FFFD replacement).
func (d *nrpsDecoder) str() (string, error) {
	if d.peek() != '"' {
		return "", d.errorf("expected a string")
	}
	start := d.i + 1
	plain := true
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			v := d.s[start:j]
			d.i = j + 1
			if !plain && !utf8.ValidString(v) {
				return d.decodeString(start-1, j+1)
			}
			return v, nil
		case c == '\\':
			end, err := d.strEnd()
			if err != nil {
				return "", err
			}
			return d.decodeString(start-1, end)
		case c < 0x20:
			d.i = j
			return "", d.errorf("control character in string")
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	d.i = len(d.s)
	return "", d.errorf("unterminated string")
}

func (d *nrpsDecoder) decodeString(from, to int) (string, error) {
	var v string
	if err := json.Unmarshal([]byte(d.s[from:to]), &v); err != nil {
		return "", err
	}
	return v, nil
}

// strEnd validates the string literal at d.i (escapes included), moves past it and
// returns its end offset.
func (d *nrpsDecoder) strEnd() (int, error) {
	if d.peek() != '"' {
		return 0, d.errorf("expected a string")
	}
	for j := d.i + 1; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return d.i, nil
		case c == '\\':
			j++
			if j >= len(d.s) {
				break
			}
			switch d.s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d.s) || !isHex(d.s[j+1]) || !isHex(d.s[j+2]) || !isHex(d.s[j+3]) || !isHex(d.s[j+4]) {
					d.i = j
					return 0, d.errorf("invalid \\u escape")
				}
				j += 4
			default:
				d.i = j
				return 0, d.errorf("invalid escape")
			}
		case c < 0x20:
			d.i = j
			return 0, d.errorf("control character in string")
		}
	}
	d.i = len(d.s)
	return 0, d.errorf("unterminated string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a JSON number and returns it as written.
func (d *nrpsDecoder) number() (string, error) {
	start := d.i
	j := d.i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	switch {
	case j < len(d.s) && d.s[j] == '0':
		j++
	case j < len(d.s) && d.s[j] >= '1' && d.s[j] <= '9':
		j = digits(d.s, j)
	default:
		d.i = j
		return "", d.errorf("invalid number")
	}
	if j < len(d.s) && d.s[j] == '.' {
		k := digits(d.s, j+1)
		if k == j+1 {
			d.i = k
			return "", d.errorf("invalid number")
		}
		j = k
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		j++
		if j < len(d.s) && (d.s[j] == '+' || d.s[j] == '-') {
			j++
		}
		k := digits(d.s, j)
		if k == j {
			d.i = k
			return "", d.errorf("invalid number")
		}
		j = k
	}
	d.i = j
	return d.s[start:j], nil
}

func digits(s string, j int) int {
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	return j
}

// literal consumes word (true, false, null) when it is next.
func (d *nrpsDecoder) literal(word string) bool {
	if strings.HasPrefix(d.s[d.i:], word) {
		d.i += len(word)
		return true
	}
	return false
}

func (d *nrpsDecoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *nrpsDecoder) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// end checks that only whitespace follows the top-level value.
func (d *nrpsDecoder) end() error {
	d.ws()
	if d.i != len(d.s) {
		return d.errorf("data after the top-level value")
	}
	return nil
}

func (d *nrpsDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", d.i, fmt.Sprintf(format, args...))
}
