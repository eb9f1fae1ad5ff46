package jsonscan

// A Scanner reads one JSON document from a string, validating as it goes.
//
// Walk an object with
//
//	for sc.Object(); sc.NextMember(); {
//		switch sc.Key() {
//		case "id":
//			id = sc.Str()
//		}
//	}
//	if err := sc.Err(); err != nil { … }
//
// NextMember and NextElement leave the scanner at the member's or element's value;
// read it (Str, Number, Bool, Raw, Skip, or Object/Array and a loop) or leave
// it alone: an unread value is skipped, and validated, by the next call. A value
// must be read entirely or not at all.
//
// The first error stops the scan: from then on reads return zero values, Kind
// returns Invalid, NextMember and NextElement return false, and Err and End
// report the error (a *SyntaxError). Strings and raw values are substrings of the
// input unless they need unescaping. The zero Scanner scans the empty input.
type Scanner struct {
	s       string
	i       int
	depth   int  // containers entered by Object or Array and not closed yet
	first   bool // a container was just entered: no member or element read yet
	pending int  // offset of the value NextMember or NextElement stopped at; -1: none
	key     string
	err     *SyntaxError
}

// NewScanner returns a Scanner over s.
func NewScanner(s string) *Scanner {
	return &Scanner{s: s, pending: -1}
}

// Reset makes sc scan s from the start.
func (sc *Scanner) Reset(s string) {
	*sc = Scanner{s: s, pending: -1}
}

// Err returns the first error met, or nil.
func (sc *Scanner) Err() error {
	if sc.err == nil {
		return nil
	}
	return sc.err
}

// Offset is the position of the scanner in the input: where the next value (or
// whitespace before it) starts, or where the first error was detected.
func (sc *Scanner) Offset() int {
	if sc.err != nil {
		return sc.err.Offset
	}
	return sc.i
}

func (sc *Scanner) fail(i int, e errKind) {
	if sc.err == nil {
		sc.err = newSyntaxError(sc.s, i, e)
	}
}

// Kind skips whitespace and returns the kind of the next value from its first
// byte, without reading or validating it.
func (sc *Scanner) Kind() Kind {
	if sc.err != nil {
		return Invalid
	}
	sc.i = skipWS(sc.s, sc.i)
	if sc.i >= len(sc.s) {
		return Invalid
	}
	return kindTable[sc.s[sc.i]]
}

// Raw reads the next value, of any kind, and returns its text.
func (sc *Scanner) Raw() string {
	if sc.err != nil {
		return ""
	}
	i := skipWS(sc.s, sc.i)
	end, e := scanValue(sc.s, i, sc.depth)
	if e != errNone {
		sc.fail(end, e)
		return ""
	}
	sc.i = end
	return sc.s[i:end]
}

// Skip reads the next value, of any kind, and drops it.
func (sc *Scanner) Skip() {
	sc.Raw()
}

// Str reads the next value, which must be a string, and decodes it (a substring
// of the input when it has no escapes and is valid UTF-8). It is not called
// String so that a Scanner is no fmt.Stringer: printing one must not consume it.
func (sc *Scanner) Str() string {
	if sc.err != nil {
		return ""
	}
	s := sc.s
	i := skipWS(s, sc.i)
	if i >= len(s) || s[i] != '"' {
		sc.fail(i, errNotString)
		return ""
	}
	end, flags, e := scanString(s, i)
	if e != errNone {
		sc.fail(end, e)
		return ""
	}
	sc.i = end
	return decodeBody(s[i+1:end-1], flags)
}

// Number reads the next value, which must be a number, and returns it as written.
func (sc *Scanner) Number() string {
	if sc.err != nil {
		return ""
	}
	i := skipWS(sc.s, sc.i)
	if i >= len(sc.s) || kindTable[sc.s[i]] != Number {
		sc.fail(i, errNotNumber)
		return ""
	}
	end, e := scanNumber(sc.s, i)
	if e != errNone {
		sc.fail(end, e)
		return ""
	}
	sc.i = end
	return sc.s[i:end]
}

// Bool reads the next value, which must be true or false.
func (sc *Scanner) Bool() bool {
	if sc.err != nil {
		return false
	}
	i := skipWS(sc.s, sc.i)
	if i >= len(sc.s) || kindTable[sc.s[i]] != Bool {
		sc.fail(i, errNotBool)
		return false
	}
	end, e := scanScalar(sc.s, i)
	if e != errNone {
		sc.fail(end, e)
		return false
	}
	sc.i = end
	return sc.s[i] == 't'
}

// Object enters the next value, which must be an object; NextMember then walks
// its members.
func (sc *Scanner) Object() {
	sc.enter('{', errNotObject)
}

// Array enters the next value, which must be an array; NextElement then walks
// its elements.
func (sc *Scanner) Array() {
	sc.enter('[', errNotArray)
}

func (sc *Scanner) enter(open byte, notIt errKind) {
	if sc.err != nil {
		return
	}
	i := skipWS(sc.s, sc.i)
	switch {
	case i >= len(sc.s) || sc.s[i] != open:
		sc.fail(i, notIt)
	case sc.depth >= MaxDepth:
		sc.fail(i, errDepth)
	default:
		sc.depth++
		sc.i, sc.first, sc.pending = i+1, true, -1
	}
}

// next moves past the unread value, if any, and then past the ',' before the
// next member or element of the innermost container, which closes with cl. It
// returns the offset of that member or element, or -1 at the end of the
// container (consumed) or on an error.
func (sc *Scanner) next(cl byte, notNext errKind) int {
	if sc.err != nil {
		return -1
	}
	if sc.pending == sc.i {
		if sc.Skip(); sc.err != nil {
			return -1
		}
	}
	sc.pending = -1
	s := sc.s
	i := skipWS(s, sc.i)
	switch {
	case i >= len(s):
		sc.fail(i, errEnd)
		return -1
	case s[i] == cl:
		sc.i, sc.first = i+1, false
		sc.depth--
		return -1
	case sc.first:
		sc.first = false
	case s[i] == ',':
		i = skipWS(s, i+1)
	default:
		sc.fail(i, notNext)
		return -1
	}
	return i
}

// NextMember moves to the next member of the object entered last (by Object),
// and reports whether there is one. Key then returns its name; the scanner is at
// its value. At the end of the object it consumes the '}' and returns false.
func (sc *Scanner) NextMember() bool {
	i := sc.next('}', errObjectNext)
	if i < 0 {
		return false
	}
	s := sc.s
	if i >= len(s) || s[i] != '"' {
		sc.fail(i, errKey)
		return false
	}
	end, flags, e := scanString(s, i)
	if e != errNone {
		sc.fail(end, e)
		return false
	}
	sc.key = decodeBody(s[i+1:end-1], flags)
	if i = skipWS(s, end); i >= len(s) || s[i] != ':' {
		sc.fail(i, errColon)
		return false
	}
	i = skipWS(s, i+1)
	sc.i, sc.pending = i, i
	return true
}

// Key returns the decoded name of the member NextMember moved to. Read it before
// entering the member's value: a nested object overwrites it.
func (sc *Scanner) Key() string {
	return sc.key
}

// NextElement moves to the next element of the array entered last (by Array),
// and reports whether there is one; the scanner is at the element. At the end of
// the array it consumes the ']' and returns false.
func (sc *Scanner) NextElement() bool {
	i := sc.next(']', errArrayNext)
	if i < 0 {
		return false
	}
	sc.i, sc.pending = i, i
	return true
}

// End checks that only whitespace follows, and returns Err.
func (sc *Scanner) End() error {
	if sc.err == nil {
		if i := skipWS(sc.s, sc.i); i != len(sc.s) || sc.depth != 0 {
			if i == len(sc.s) {
				sc.fail(i, errEnd)
			} else {
				sc.fail(i, errTrailing)
			}
		}
	}
	return sc.Err()
}
