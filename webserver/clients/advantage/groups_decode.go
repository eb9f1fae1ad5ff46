package advantage

import (
	"fmt"
	"slices"

	"github.com/ltiop/ltiop/internal/jsonscan"
)

// The groups containers are decoded with internal/jsonscan, as membership containers are:
// one validating pass, strings as slices of one copy of the input (encoding/json took ten
// times longer per byte). It accepts exactly RFC 8259 JSON, and tolerates what platforms
// send besides the spec's shape:
//   - ids (of the container, groups, sets and set references) are strings, or numbers kept
//     as written (Moodle's are database ids), or null ("");
//   - a group's sets come as the spec's "set_ids" array, or as "set_id", a single id
//     (Blackboard, the Moodle plugin; pylti1.3's fixtures), or both: merged in the order
//     they come, each id once; elements that are not ids are skipped;
//   - "name" and "tag" may be numbers (kept as written); other types are ignored;
//   - a group or set without an id is dropped (it cannot be referred to), and so is a null
//     entry;
//   - members the spec does not name are ignored (Sakai adds "user_id" to the container);
//     the last of duplicate keys wins;
//   - the container may be a bare array of groups (or sets), or null: an empty page.
//
// A body that is not JSON, or whose groups (sets) are not objects, is an error.

// MapGroups decodes a groups container (application/vnd.ims.lti-gs.v1.contextgroupcontainer+json)
// into the integrator-facing shape. Groups and each group's SetIDs are never nil. Next is
// not set (it comes from the Link header).
func MapGroups(raw []byte) (*GroupsPage, error) {
	s := string(raw)
	sc := jsonscan.NewScanner(s)
	page := &GroupsPage{}
	var ids []string   // every group's set ids, back to back; groups take slices of it
	var spans [][2]int // each group's span of ids
	reset := func() { page.Groups, ids, spans = page.Groups[:0], ids[:0], spans[:0] }
	item := func() error {
		var g Group
		start := len(ids)
		for sc.Object(); sc.NextMember(); {
			var err error
			switch sc.Key() {
			case "id":
				g.ID, err = scalar(sc, "a group's id")
			case "name":
				g.Name = lenientScalar(sc)
			case "tag":
				g.Tag = lenientScalar(sc)
			case "set_ids", "set_id":
				ids = appendIDs(sc, ids, start)
			}
			if err != nil {
				return err
			}
		}
		if g.ID == "" {
			ids = ids[:start]
			return sc.Err()
		}
		page.Groups = append(page.Groups, g)
		spans = append(spans, [2]int{start, len(ids)})
		return sc.Err()
	}
	err := decodeList(sc, "groups", &page.ID, reset, item)
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return nil, fmt.Errorf("not a groups container: %w", err)
	}
	if page.Groups == nil {
		page.Groups = []Group{}
	}
	for i, sp := range spans {
		page.Groups[i].SetIDs = ids[sp[0]:sp[1]:sp[1]] // capped: an append by a caller copies
		if page.Groups[i].SetIDs == nil {
			page.Groups[i].SetIDs = []string{}
		}
	}
	return page, nil
}

// MapGroupSets decodes a group sets container
// (application/vnd.ims.lti-gs.v1.contextgroupsetcontainer+json). Sets is never nil.
func MapGroupSets(raw []byte) (*GroupSetsPage, error) {
	s := string(raw)
	sc := jsonscan.NewScanner(s)
	page := &GroupSetsPage{}
	reset := func() { page.Sets = page.Sets[:0] }
	item := func() error {
		var set GroupSet
		for sc.Object(); sc.NextMember(); {
			var err error
			switch sc.Key() {
			case "id":
				set.ID, err = scalar(sc, "a set's id")
			case "name":
				set.Name = lenientScalar(sc)
			case "tag":
				set.Tag = lenientScalar(sc)
			}
			if err != nil {
				return err
			}
		}
		if set.ID != "" {
			page.Sets = append(page.Sets, set)
		}
		return sc.Err()
	}
	err := decodeList(sc, "sets", &page.ID, reset, item)
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return nil, fmt.Errorf("not a group sets container: %w", err)
	}
	if page.Sets == nil {
		page.Sets = []GroupSet{}
	}
	return page, nil
}

// decodeList walks a container {"id": …, key: [ … ]}, a bare array or null at sc. id gets
// the container's id; item is called at each object entry of the list (and must read it
// whole), reset when the list's key appears again (the last one wins).
func decodeList(sc *jsonscan.Scanner, key string, id *string, reset func(), item func() error) error {
	switch sc.Kind() {
	case jsonscan.Null:
		sc.Skip()
		return sc.Err()
	case jsonscan.Array:
		return decodeEntries(sc, key, item)
	case jsonscan.Object:
	default:
		return mappingError(sc, "the container is not an object")
	}
	for sc.Object(); sc.NextMember(); {
		switch sc.Key() {
		case "id":
			*id = lenientScalar(sc)
		case key:
			reset()
			if sc.Kind() == jsonscan.Null {
				continue // skipped by NextMember
			}
			if err := decodeEntries(sc, key, item); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

func decodeEntries(sc *jsonscan.Scanner, key string, item func() error) error {
	if sc.Kind() != jsonscan.Array {
		return mappingError(sc, key+" is not an array")
	}
	for sc.Array(); sc.NextElement(); {
		switch sc.Kind() {
		case jsonscan.Null:
			// skipped by NextElement
		case jsonscan.Object:
			if err := item(); err != nil {
				return err
			}
		default:
			return mappingError(sc, "an entry of "+key+" is not an object")
		}
	}
	return sc.Err()
}

// appendIDs appends the ids of the value at sc (an id, or an array whose id elements are
// kept) to ids, each once since start.
func appendIDs(sc *jsonscan.Scanner, ids []string, start int) []string {
	add := func(id string) {
		if id != "" && !slices.Contains(ids[start:], id) {
			ids = append(ids, id)
		}
	}
	if sc.Kind() != jsonscan.Array {
		add(lenientScalar(sc))
		return ids
	}
	for sc.Array(); sc.NextElement(); {
		add(lenientScalar(sc))
	}
	return ids
}

// lenientScalar reads a string or a number (as written); another type is left to be
// skipped ("").
func lenientScalar(sc *jsonscan.Scanner) string {
	switch sc.Kind() {
	case jsonscan.String:
		return sc.Str()
	case jsonscan.Number:
		return sc.Number()
	}
	return ""
}
