package lti

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/ltiop/ltiop/internal/jsonscan"
)

// Claims are read with internal/jsonscan, which validates as it walks and hands
// out values as substrings of the document; decoding only the members asked for
// means claims with unexpected JSON types never abort the decode (T-QUIRK-04)
// and unknown claims cost a skip, not an allocation (T-TOK-23). The helpers
// below work on such raw values; on anything else they report nothing (a
// shorter iteration, kindNone, ""), never a panic.

type jsonKind = jsonscan.Kind

const (
	kindNone   = jsonscan.Invalid // absent or not JSON
	kindString = jsonscan.String
	kindNumber = jsonscan.Number
	kindObject = jsonscan.Object
	kindArray  = jsonscan.Array
	kindBool   = jsonscan.Bool
	kindNull   = jsonscan.Null
)

func kindOf(raw string) jsonKind { return jsonscan.KindOf(raw) }

// decodeString decodes a raw JSON string exactly as encoding/json does.
func decodeString(raw string) string {
	s, _ := jsonscan.Unquote(raw)
	return s
}

// objectIter walks the members of a JSON object, validating them.
type objectIter struct {
	sc     jsonscan.Scanner
	object bool
}

// newObjectIter walks obj, which may be surrounded by whitespace; a value of
// another kind has no members.
func newObjectIter(obj string) objectIter {
	var it objectIter
	if it.sc.Reset(obj); it.sc.Kind() == kindObject {
		it.sc.Object()
		it.object = true
	}
	return it
}

// eachMember calls f with the decoded key and the raw value of every member of val, and
// reports whether val is an object at all (the claim decoders' common loop).
func eachMember(val string, f func(key, val string)) bool {
	if kindOf(val) != kindObject {
		return false
	}
	for it := newObjectIter(val); ; {
		k, v, ok := it.next()
		if !ok {
			return true
		}
		f(k, v)
	}
}

// next returns the decoded key and the raw value of the next member.
func (it *objectIter) next() (key, val string, ok bool) {
	if !it.object || !it.sc.NextMember() {
		return "", "", false
	}
	key, val = it.sc.Key(), it.sc.Raw()
	return key, val, it.sc.Err() == nil
}

// valid reports, once next returned false, whether the input was one valid JSON
// object (whitespace around it allowed).
func (it *objectIter) valid() bool { return it.object && it.sc.End() == nil }

// arrayIter walks the elements of a JSON array.
type arrayIter struct {
	sc    jsonscan.Scanner
	array bool
}

func newArrayIter(raw string) arrayIter {
	var it arrayIter
	if kindOf(raw) == kindArray {
		it.sc.Reset(raw)
		it.sc.Array()
		it.array = true
	}
	return it
}

func (it *arrayIter) next() (val string, ok bool) {
	if !it.array || !it.sc.NextElement() {
		return "", false
	}
	val = it.sc.Raw()
	return val, it.sc.Err() == nil
}

// asString returns the decoded string and true when raw is a JSON string.
func asString(raw string) (string, bool) {
	if kindOf(raw) != kindString {
		return "", false
	}
	return decodeString(raw), true
}

// optString returns the string value of raw, or "" for any other type.
func optString(raw string) string {
	s, _ := asString(raw)
	return s
}

// maxNumericDate bounds exp/iat so time arithmetic never overflows (±2^53 s).
const maxNumericDate = 1 << 53

// asNumericDate reads a JSON number as whole unix seconds (fractions are
// truncated toward negative infinity).
func asNumericDate(raw string) (int64, bool) {
	if kindOf(raw) != kindNumber {
		return 0, false
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		if n > maxNumericDate || n < -maxNumericDate {
			return 0, false
		}
		return n, true
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || f > maxNumericDate || f < -maxNumericDate {
		return 0, false
	}
	return int64(math.Floor(f)), true
}

// asInt reads a number, or a string holding a number, as an int (tolerant:
// launch_presentation width/height). Anything else gives 0, false.
func asInt(raw string) (int, bool) {
	switch kindOf(raw) {
	case kindString:
		raw = strings.TrimSpace(decodeString(raw))
	case kindNumber:
	default:
		return 0, false
	}
	if n, err := strconv.Atoi(raw); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return 0, false
	}
	return int(f), true
}

// asBool accepts true/false and the strings "true"/"false" (any case).
func asBool(raw string) (bool, bool) {
	switch kindOf(raw) {
	case kindBool:
		return raw[0] == 't', true
	case kindString:
		s := strings.TrimSpace(decodeString(raw))
		switch {
		case strings.EqualFold(s, "true"):
			return true, true
		case strings.EqualFold(s, "false"):
			return false, true
		}
	}
	return false, false
}

// stringList reads an array of strings (non-strings skipped) or a single
// string split on commas ("a,b"), as accept_* members arrive. A present
// value never yields nil.
func stringList(raw string, splitComma bool) ([]string, bool) {
	switch kindOf(raw) {
	case kindArray:
		out := make([]string, 0, 4)
		for it := newArrayIter(raw); ; {
			v, ok := it.next()
			if !ok {
				break
			}
			if s, isStr := asString(v); isStr {
				out = append(out, s)
			}
		}
		return out, true
	case kindString:
		s := decodeString(raw)
		if !splitComma {
			if s == "" {
				return []string{}, true
			}
			return []string{s}, true
		}
		out := make([]string, 0, 4)
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		return out, true
	}
	return nil, false
}

// stringify renders any JSON value as a string, as custom parameters need:
// strings decoded, numbers and booleans as their literal text, objects and
// arrays as compact JSON. null gives false (dropped).
func stringify(raw string) (string, bool) {
	switch kindOf(raw) {
	case kindString:
		return decodeString(raw), true
	case kindNumber, kindBool:
		return raw, true
	case kindObject, kindArray:
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(raw)); err != nil {
			return raw, true
		}
		return buf.String(), true
	}
	return "", false
}
