package advantage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// The groups containers are small (a course has tens of groups, rarely a few thousand, and a
// page is at most 4 MiB), so encoding/json decodes them, into wire types that tolerate what
// platforms send besides the spec's shape:
//   - ids (of the container, groups, sets and set references) are strings, or numbers kept
//     as written (Moodle's are database ids), or null ("");
//   - a group's sets come as the spec's "set_ids" array, or as "set_id", a single id
//     (Blackboard, the Moodle plugin; pylti1.3's fixtures), or both (merged, in order, once);
//   - "name" and "tag" of another type than string are ignored, and a group or set
//     without an id is dropped (it cannot be referred to);
//   - members the spec does not name are ignored (Sakai adds "user_id" to the container);
//   - the container may be a bare array of groups (or sets), or null: an empty page.
//
// A body that is not JSON, or whose groups (sets) are not objects, is an error.

// lenientString decodes a string, or a number kept as written; another type is ignored.
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var f flexString
	if f.UnmarshalJSON(b) == nil {
		*s = lenientString(f)
	}
	return nil
}

// idList decodes an array of ids (strings or numbers; other elements skipped) or a single
// id; null and other types are no ids.
type idList []string

func (l *idList) UnmarshalJSON(b []byte) error {
	*l = nil
	if len(b) > 0 && b[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(b, &elems); err != nil {
			return err
		}
		for _, e := range elems {
			l.add(e)
		}
		return nil
	}
	l.add(b)
	return nil
}

func (l *idList) add(raw []byte) {
	var f flexString
	if f.UnmarshalJSON(raw) == nil && f != "" && !slices.Contains(*l, string(f)) {
		*l = append(*l, string(f))
	}
}

type groupWire struct {
	ID     flexString    `json:"id"`
	Name   lenientString `json:"name"`
	Tag    lenientString `json:"tag"`
	SetIDs idList        `json:"set_ids"`
	SetID  idList        `json:"set_id"`
}

type groupSetWire struct {
	ID   flexString    `json:"id"`
	Name lenientString `json:"name"`
	Tag  lenientString `json:"tag"`
}

// MapGroups decodes a groups container (application/vnd.ims.lti-gs.v1.contextgroupcontainer+json)
// into the integrator-facing shape. Groups and each group's SetIDs are never nil. Next is
// not set (it comes from the Link header).
func MapGroups(raw []byte) (*GroupsPage, error) {
	var w struct {
		ID     lenientString `json:"id"`
		Groups []groupWire   `json:"groups"`
	}
	if err := decodeContainerOrArray(raw, &w, &w.Groups); err != nil {
		return nil, fmt.Errorf("not a groups container: %w", err)
	}
	page := &GroupsPage{ID: string(w.ID), Groups: make([]Group, 0, len(w.Groups))}
	for _, g := range w.Groups {
		if g.ID == "" {
			continue
		}
		sets := slices.Clone(g.SetIDs)
		for _, id := range g.SetID {
			if !slices.Contains(sets, id) {
				sets = append(sets, id)
			}
		}
		if sets == nil {
			sets = []string{}
		}
		page.Groups = append(page.Groups, Group{ID: string(g.ID), Name: string(g.Name), Tag: string(g.Tag), SetIDs: sets})
	}
	return page, nil
}

// MapGroupSets decodes a group sets container
// (application/vnd.ims.lti-gs.v1.contextgroupsetcontainer+json). Sets is never nil.
func MapGroupSets(raw []byte) (*GroupSetsPage, error) {
	var w struct {
		ID   lenientString  `json:"id"`
		Sets []groupSetWire `json:"sets"`
	}
	if err := decodeContainerOrArray(raw, &w, &w.Sets); err != nil {
		return nil, fmt.Errorf("not a group sets container: %w", err)
	}
	page := &GroupSetsPage{ID: string(w.ID), Sets: make([]GroupSet, 0, len(w.Sets))}
	for _, s := range w.Sets {
		if s.ID != "" {
			page.Sets = append(page.Sets, GroupSet{ID: string(s.ID), Name: string(s.Name), Tag: string(s.Tag)})
		}
	}
	return page, nil
}

// decodeContainerOrArray decodes raw into container, or, when raw is a JSON array, into
// list (a field of container).
func decodeContainerOrArray(raw []byte, container, list any) error {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return json.Unmarshal(raw, list)
	}
	return json.Unmarshal(raw, container)
}
