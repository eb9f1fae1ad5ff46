package advantage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ltiop/ltiop/internal/jsonscan"
)

// flexString decodes a JSON string, or a number kept as written (platforms have sent
// numeric ids), or null as "". Objects, arrays and booleans are errors (T-QUIRK-04 spirit:
// tolerate the wrong scalar type, not garbage).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0:
		return nil
	case b[0] == '"':
		s, ok := jsonscan.Unquote(string(b))
		if !ok {
			return fmt.Errorf("invalid JSON string %.20s", b)
		}
		*f = flexString(s)
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		*f = flexString(b)
	case string(b) == "null":
	default:
		return fmt.Errorf("expected a string, got %.20s", b)
	}
	return nil
}

// flexFloat decodes a JSON number, or a numeric string, or null as 0 (see ParseNumber).
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	v, err := ParseNumber(b)
	if err != nil {
		return err
	}
	*f = flexFloat(v)
	return nil
}

// ParseNumber reads the JSON value b as a number: a JSON number, or a number written as a
// JSON string with or without spaces around it ("85.00000": Moodle's grade sync writes
// scores so, and platforms have sent a line item's scoreMaximum so), or null as 0. It is
// the one reading of such numbers, for line items read here and for the scores platform
// mode is sent.
func ParseNumber(b []byte) (float64, error) {
	s := string(b)
	if s == "null" {
		return 0, nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
		s = strings.TrimSpace(s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a number, got %.20s", b)
	}
	return v, nil
}

// isExtensionKey: extension members are named by fully-qualified URLs (AGS §3.1.2), e.g.
// https://canvas.instructure.com/lti/submission_type.
func isExtensionKey(k string) bool {
	return strings.Contains(k, "://")
}

// extensionMembers returns the members of the JSON object data that keep returns true for.
func extensionMembers(data []byte, keep func(string) bool) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var ext map[string]json.RawMessage
	for k, v := range all {
		if keep(k) {
			if ext == nil {
				ext = map[string]json.RawMessage{}
			}
			ext[k] = v
		}
	}
	return ext, nil
}

// appendMembers adds ext's members (sorted by key, skipping reserved ones) to the JSON
// object obj, which must be non-empty ("{…}" with at least one member).
func appendMembers(obj []byte, ext map[string]json.RawMessage, reserved func(string) bool) ([]byte, error) {
	if len(ext) == 0 {
		return obj, nil
	}
	out := bytes.NewBuffer(obj[: len(obj)-1 : len(obj)-1])
	for _, k := range slices.Sorted(maps.Keys(ext)) {
		if reserved(k) {
			continue
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out.WriteByte(',')
		out.Write(key)
		out.WriteByte(':')
		v := ext[k]
		if len(bytes.TrimSpace(v)) == 0 {
			v = json.RawMessage("null")
		}
		if err := json.Compact(out, v); err != nil {
			return nil, fmt.Errorf("extension %s: %w", k, err)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
