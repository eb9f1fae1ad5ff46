package lti

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A small, allocation-light reader for JSON that encoding/json has already
// validated (json.Valid). It walks the text once, hands out values as
// substrings of the document and decodes only the members it is asked for, so
// claims with unexpected JSON types never abort the decode (T-QUIRK-04) and
// unknown claims cost a skip, not an allocation (T-TOK-23).
//
// Every function here assumes its input is a valid JSON value; on invalid
// input they never panic or loop, but their results are unspecified.

type jsonKind uint8

const (
	kindNone jsonKind = iota // absent or not JSON
	kindString
	kindNumber
	kindObject
	kindArray
	kindBool
	kindNull
)

func kindOf(raw string) jsonKind {
	if raw == "" {
		return kindNone
	}
	switch c := raw[0]; {
	case c == '"':
		return kindString
	case c == '{':
		return kindObject
	case c == '[':
		return kindArray
	case c == 't' || c == 'f':
		return kindBool
	case c == 'n':
		return kindNull
	case c == '-' || (c >= '0' && c <= '9'):
		return kindNumber
	}
	return kindNone
}

func skipWS(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string that starts at s[i] == '"'.
func stringEnd(s string, i int) int {
	i++
	for i < len(s) {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return len(s)
		}
		if strings.IndexByte(s[i:i+q], '\\') < 0 {
			return i + q + 1
		}
		// An escape before the next quote: step through it byte by byte.
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case '"':
				return i + 1
			}
			i++
		}
	}
	return len(s)
}

// valueEnd returns the index just past the value that starts at s[i].
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = stringEnd(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(s)
	default:
		for i < len(s) {
			switch s[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return len(s)
	}
}

// objectIter walks the members of a JSON object.
type objectIter struct {
	s string
	i int
}

func newObjectIter(raw string) objectIter {
	if kindOf(raw) != kindObject {
		return objectIter{}
	}
	return objectIter{s: raw, i: skipWS(raw, 1)}
}

// next returns the decoded key and the raw value of the next member.
func (it *objectIter) next() (key, val string, ok bool) {
	s, i := it.s, it.i
	if i >= len(s) || s[i] != '"' {
		it.i = len(s)
		return "", "", false
	}
	ke := stringEnd(s, i)
	key = decodeString(s[i:ke])
	i = skipWS(s, ke)
	if i < len(s) && s[i] == ':' {
		i++
	}
	i = skipWS(s, i)
	ve := valueEnd(s, i)
	val = s[i:ve]
	i = skipWS(s, ve)
	if i < len(s) && s[i] == ',' {
		i = skipWS(s, i+1)
	}
	it.i = i
	return key, val, true
}

// arrayIter walks the elements of a JSON array.
type arrayIter struct {
	s string
	i int
}

func newArrayIter(raw string) arrayIter {
	if kindOf(raw) != kindArray {
		return arrayIter{}
	}
	return arrayIter{s: raw, i: skipWS(raw, 1)}
}

func (it *arrayIter) next() (val string, ok bool) {
	s, i := it.s, it.i
	if i >= len(s) || s[i] == ']' {
		it.i = len(s)
		return "", false
	}
	ve := valueEnd(s, i)
	if ve <= i {
		it.i = len(s)
		return "", false
	}
	val = s[i:ve]
	i = skipWS(s, ve)
	if i < len(s) && s[i] == ',' {
		i = skipWS(s, i+1)
	}
	it.i = i
	return val, true
}

// decodeString decodes a raw JSON string (quotes included) exactly as
// encoding/json does: escapes resolved, invalid UTF-8 and lone surrogates
// replaced by U+FFFD. Strings without escapes are returned without copying.
func decodeString(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, '\\') < 0 && utf8.ValidString(body) {
		return body
	}
	return unescape(body)
}

func unescape(body string) string {
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return b.String()
			}
			switch body[i+1] {
			case '"', '\\', '/':
				b.WriteByte(body[i+1])
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(body, i)
				if r < 0 {
					return b.String()
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, hex4(body, i)); dec != utf8.RuneError {
						b.WriteRune(dec)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
				continue
			default:
				return b.String()
			}
			i += 2
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(body[i:])
			b.WriteRune(r) // RuneError for invalid UTF-8, like encoding/json
			i += size
		}
	}
	return b.String()
}

// hex4 reads the \uXXXX escape at s[i:]; -1 if there is none.
func hex4(s string, i int) rune {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i+2 : i+6]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
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
