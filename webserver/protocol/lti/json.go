package lti

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ltiop/ltiop/internal/jsonscan"
)

// Claims are read with internal/jsonscan in one pass: a jsonscan.Scanner walks the
// document, validating as it goes, and each claim's decoder reads the value the scanner
// stands at (or skips it) with the helpers below. Strings are substrings of the document
// unless they need unescaping. Decoding only the members asked for means claims with
// unexpected JSON types never abort the decode (T-QUIRK-04) and unknown claims cost a
// skip, not an allocation (T-TOK-23). Every helper reads the value entirely, whatever
// its kind, so the scanner always moves on to the next member; after a syntax error
// they return zero values (the scanner's error is sticky and the caller reports it).

type jsonKind = jsonscan.Kind

// scanner is what the decoders read with: a jsonscan.Scanner, and the block the string
// lists of one document are carved from (one allocation instead of one per list).
type scanner struct {
	jsonscan.Scanner
	strs []string  // the lists carved so far; capacity left for the next
	mem  *claimMem // the slots of the Claims being decoded (nil: none)
}

// newScanner returns a scanner over doc.
func newScanner(doc string) *scanner {
	sc := &scanner{}
	sc.Reset(doc)
	return sc
}

// list returns the strings appended to sc.strs since start as a list of their own: its
// capacity ends with it, so appending to it never writes over the next one.
func (sc *scanner) list(start int) []string {
	return sc.strs[start:len(sc.strs):len(sc.strs)]
}

// listStart is where the next list begins in sc.strs (allocated on first use).
func (sc *scanner) listStart() int {
	if sc.strs == nil {
		sc.strs = make([]string, 0, 16)
	}
	return len(sc.strs)
}

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

// sharedString is b as a string without a copy. The decoded claims hold substrings of
// it, so b must never be modified afterwards: only bytes this package owns for good
// (a payload it decoded or copied, kept as Claims.Raw) or that a caller handed over
// (ParseValidatedClaims) go through here.
func sharedString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b)) //nolint:gosec // G103: audited; the callers never modify b (see above)
}

// enterObject enters the object sc stands at and reports true; a value of any other
// kind is skipped and reports false. NextMember then walks the members.
func enterObject(sc *scanner) bool {
	if sc.Kind() != kindObject {
		sc.Skip()
		return false
	}
	sc.Object()
	return true
}

// enterArray is enterObject for arrays; NextElement then walks the elements.
func enterArray(sc *scanner) bool {
	if sc.Kind() != kindArray {
		sc.Skip()
		return false
	}
	sc.Array()
	return true
}

// readString returns the decoded string and true when the value is a JSON string.
func readString(sc *scanner) (string, bool) {
	if sc.Kind() != kindString {
		sc.Skip()
		return "", false
	}
	return sc.Str(), true
}

// readOptString returns the string value, or "" for any other type.
func readOptString(sc *scanner) string {
	s, _ := readString(sc)
	return s
}

// readRequiredMember reads a member a message may require: its string, and bad when it
// is present with another type than string or null.
func readRequiredMember(sc *scanner) (s string, bad bool) {
	switch sc.Kind() {
	case kindString:
		return sc.Str(), false
	case kindNull:
		sc.Skip()
		return "", false
	}
	sc.Skip()
	return "", true
}

// maxNumericDate bounds exp/iat so time arithmetic never overflows (±2^53 s).
const maxNumericDate = 1 << 53

// readNumericDate reads a JSON number as whole unix seconds.
func readNumericDate(sc *scanner) (int64, bool) {
	if sc.Kind() != kindNumber {
		sc.Skip()
		return 0, false
	}
	return asNumericDate(sc.Number())
}

// asNumericDate reads the text of a JSON number as whole unix seconds (fractions are
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

// readInt reads a number, or a string holding a number, as an int (tolerant:
// launch_presentation width/height). Anything else gives 0, false.
func readInt(sc *scanner) (int, bool) {
	var raw string
	switch sc.Kind() {
	case kindString:
		raw = strings.TrimSpace(sc.Str())
	case kindNumber:
		raw = sc.Number()
	default:
		sc.Skip()
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

// readOptBool accepts true/false and the strings "true"/"false" (any case); anything
// else is nil.
func readOptBool(sc *scanner) *bool {
	var b bool
	switch sc.Kind() {
	case kindBool:
		b = sc.Bool()
	case kindString:
		switch s := strings.TrimSpace(sc.Str()); {
		case strings.EqualFold(s, "true"):
			b = true
		case strings.EqualFold(s, "false"):
		default:
			return nil
		}
	default:
		sc.Skip()
		return nil
	}
	return &b
}

// readStringList reads an array of strings (non-strings skipped) or a single string
// split on commas ("a,b"), as accept_* members arrive. A present value never yields
// nil.
func readStringList(sc *scanner, splitComma bool) ([]string, bool) {
	switch sc.Kind() {
	case kindArray:
		start := sc.listStart()
		for sc.Array(); sc.NextElement(); {
			if s, isStr := readString(sc); isStr {
				sc.strs = append(sc.strs, s)
			}
		}
		return sc.list(start), true
	case kindString:
		s := sc.Str()
		start := sc.listStart()
		if !splitComma {
			if s != "" {
				sc.strs = append(sc.strs, s)
			}
			return sc.list(start), true
		}
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				sc.strs = append(sc.strs, part)
			}
		}
		return sc.list(start), true
	}
	sc.Skip()
	return nil, false
}

// readScope reads a scope member: an array of strings, or one space-separated string.
func readScope(sc *scanner) []string {
	if sc.Kind() == kindString {
		return splitSpaces(sc.Str())
	}
	list, _ := readStringList(sc, false)
	return list
}

// readStringify renders any JSON value as a string, as custom parameters need: strings
// decoded, numbers and booleans as their literal text, objects and arrays as compact
// JSON. null gives false (dropped).
func readStringify(sc *scanner) (string, bool) {
	switch sc.Kind() {
	case kindString:
		return sc.Str(), true
	case kindNumber, kindBool:
		return sc.Raw(), true
	case kindObject, kindArray:
		raw := sc.Raw()
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(raw)); err != nil {
			return raw, true
		}
		return buf.String(), true
	}
	sc.Skip()
	return "", false
}

func splitSpaces(s string) []string {
	out := make([]string, 0, 4)
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return out
}
