// Package jsonscan is a small, strict JSON scanner over a string. It is the one
// JSON reader behind ltiop's hand-decoded hot paths (id_token claims, NRPS pages).
//
// It accepts exactly what encoding/json accepts (RFC 8259, nesting at most
// MaxDepth levels, no data after the top-level value) and decodes strings as
// encoding/json does: escapes resolved, invalid UTF-8 and lone surrogates
// replaced by U+FFFD (invalid UTF-8 inside strings is accepted, as json.Valid
// accepts it). Values are handed out as substrings of the input where possible,
// so a scan allocates only for strings that need unescaping.
//
// Two ways in:
//   - Valid and Validate check a whole document;
//   - a Scanner walks one document, validating as it goes: Kind peeks at the
//     next value, Object/NextMember and Array/NextElement walk containers,
//     Str, Number, Bool and Raw read a value, Skip skips one, End checks
//     that nothing follows. Errors are sticky and reported by Err and End.
package jsonscan

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays accepted (encoding/json's limit).
const MaxDepth = 10000

// Kind is the type of a JSON value, as told by its first byte.
type Kind uint8

// The kinds of JSON values.
const (
	Invalid Kind = iota // no value starts here (or the input is exhausted)
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"invalid", "null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

var kindTable = [256]Kind{
	'"': String, '{': Object, '[': Array, 't': Bool, 'f': Bool, 'n': Null, '-': Number,
	'0': Number, '1': Number, '2': Number, '3': Number, '4': Number,
	'5': Number, '6': Number, '7': Number, '8': Number, '9': Number,
}

// KindOf returns the kind of the value raw starts with, from its first byte only: it
// neither skips whitespace nor validates. Use it on substrings a Scanner handed out.
func KindOf(raw string) Kind {
	if raw == "" {
		return Invalid
	}
	return kindTable[raw[0]]
}

// A SyntaxError describes invalid JSON and where it was detected.
type SyntaxError struct {
	Offset int // byte offset in the input
	msg    string
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.msg
}

type errKind uint8

const (
	errNone errKind = iota
	errEnd
	errValue
	errControl
	errEscape
	errNumber
	errLiteral
	errKey
	errColon
	errObjectNext
	errArrayNext
	errDepth
	errTrailing
	errNotString
	errNotNumber
	errNotBool
	errNotObject
	errNotArray
)

var errMessages = [...]string{
	errEnd:        "unexpected end of input",
	errValue:      "looking for the beginning of a value",
	errControl:    "control character in string",
	errEscape:     "invalid escape in string",
	errNumber:     "invalid number",
	errLiteral:    "invalid literal (want true, false or null)",
	errKey:        "looking for an object key (a string)",
	errColon:      "want ':' after an object key",
	errObjectNext: "want ',' or '}' after an object member",
	errArrayNext:  "want ',' or ']' after an array element",
	errDepth:      "nested deeper than " + strconv.Itoa(MaxDepth) + " levels",
	errTrailing:   "data after the top-level value",
	errNotString:  "want a string",
	errNotNumber:  "want a number",
	errNotBool:    "want true or false",
	errNotObject:  "want an object",
	errNotArray:   "want an array",
}

func newSyntaxError(s string, i int, e errKind) *SyntaxError {
	msg := errMessages[e]
	if i < len(s) && e != errEnd && e != errDepth {
		msg = "invalid character " + strconv.QuoteRune(rune(s[i])) + ": " + msg
		if s[i] >= utf8.RuneSelf {
			msg = "invalid byte " + strconv.Quote(s[i:i+1]) + ": " + errMessages[e]
		}
	}
	return &SyntaxError{Offset: i, msg: msg}
}

// Valid reports whether s is one JSON value, optionally surrounded by whitespace,
// exactly as json.Valid does.
func Valid(s string) bool {
	end, e := scanValue(s, skipWS(s, 0), 0)
	return e == errNone && skipWS(s, end) == len(s)
}

// Validate is Valid with the reason: nil, or a *SyntaxError.
func Validate(s string) error {
	end, e := scanValue(s, skipWS(s, 0), 0)
	if e == errNone {
		if end = skipWS(s, end); end != len(s) {
			e = errTrailing
		}
	}
	if e != errNone {
		return newSyntaxError(s, end, e)
	}
	return nil
}

// Unquote decodes the JSON string literal raw (quotes included, no surrounding
// whitespace) as encoding/json does. Without escapes and with valid UTF-8 the
// result is a substring of raw. ok is false when raw is not exactly one string.
func Unquote(raw string) (s string, ok bool) {
	if raw == "" || raw[0] != '"' {
		return "", false
	}
	end, flags, e := scanString(raw, 0)
	if e != 0 || end != len(raw) {
		return "", false
	}
	return decodeBody(raw[1:end-1], flags), true
}

const wsMask = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r'

func skipWS(s string, i int) int {
	for i < len(s) && s[i] <= ' ' && wsMask&(uint64(1)<<s[i]) != 0 {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c-'0' <= 9 }

func isHex(c byte) bool {
	return c-'0' <= 9 || (c|0x20)-'a' <= 5
}

// scanValue validates the value that starts at s[i] (whitespace skipped) inside
// depth open containers and returns the offset just past it, or the offset of the
// error and its kind.
func scanValue(s string, i, depth int) (int, errKind) {
	if i < len(s) && (s[i] == '{' || s[i] == '[') {
		return scanContainer(s, i, depth)
	}
	return scanScalar(s, i)
}

// scanScalar validates a string, number or literal at s[i].
func scanScalar(s string, i int) (int, errKind) {
	if i >= len(s) {
		return i, errEnd
	}
	switch c := s[i]; c {
	case '"':
		end, _, e := scanString(s, i)
		return end, e
	case 't':
		return scanLiteral(s, i, "true")
	case 'f':
		return scanLiteral(s, i, "false")
	case 'n':
		return scanLiteral(s, i, "null")
	default:
		if c == '-' || isDigit(c) {
			return scanNumber(s, i)
		}
		return i, errValue
	}
}

func scanLiteral(s string, i int, word string) (int, errKind) {
	if strings.HasPrefix(s[i:], word) {
		return i + len(word), errNone
	}
	for j := 1; j < len(word); j++ {
		if i+j >= len(s) {
			return i + j, errEnd
		}
		if s[i+j] != word[j] {
			return i + j, errLiteral
		}
	}
	return i, errLiteral
}

// scanNumber validates the RFC 8259 number at s[i] ('-' or a digit).
func scanNumber(s string, i int) (int, errKind) {
	if s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s):
		return i, errEnd
	case s[i] == '0':
		i++
	case isDigit(s[i]):
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	default:
		return i, errNumber
	}
	if i < len(s) && s[i] == '.' {
		if i++; i >= len(s) {
			return i, errEnd
		}
		if !isDigit(s[i]) {
			return i, errNumber
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) {
			return i, errEnd
		}
		if !isDigit(s[i]) {
			return i, errNumber
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	return i, errNone
}

// scanKey validates an object key and the ':' after it; it returns the offset of
// the member's value (whitespace skipped).
func scanKey(s string, i int) (int, errKind) {
	if i >= len(s) {
		return i, errEnd
	}
	if s[i] != '"' {
		return i, errKey
	}
	i, _, e := scanString(s, i)
	if e != errNone {
		return i, e
	}
	if i = skipWS(s, i); i >= len(s) {
		return i, errEnd
	}
	if s[i] != ':' {
		return i, errColon
	}
	return skipWS(s, i+1), errNone
}

// scanContainer validates the object or array at s[i] without recursion. The
// closing bytes of the open containers are kept on a small stack that stays in
// this frame up to 64 levels.
func scanContainer(s string, i, depth int) (int, errKind) {
	var buf [64]byte
	open := buf[:0]
	var e errKind
	for {
		// A value starts at s[i].
		if i < len(s) && (s[i] == '{' || s[i] == '[') {
			if depth+len(open) >= MaxDepth {
				return i, errDepth
			}
			c := s[i]
			cl := c + 2 // '{'+2 == '}', '['+2 == ']'
			if i = skipWS(s, i+1); i < len(s) && s[i] == cl {
				i++ // empty: a complete value
			} else {
				open = append(open, cl)
				if c == '{' {
					if i, e = scanKey(s, i); e != errNone {
						return i, e
					}
				}
				continue
			}
		} else if i, e = scanScalar(s, i); e != errNone {
			return i, e
		}
		// After a value: a comma, or the end of one or more containers.
		for {
			if len(open) == 0 {
				return i, errNone
			}
			if i = skipWS(s, i); i >= len(s) {
				return i, errEnd
			}
			cl := open[len(open)-1]
			if s[i] == ',' {
				i = skipWS(s, i+1)
				if cl == '}' {
					if i, e = scanKey(s, i); e != errNone {
						return i, e
					}
				}
				break
			}
			if s[i] != cl {
				if cl == '}' {
					return i, errObjectNext
				}
				return i, errArrayNext
			}
			i++
			open = open[:len(open)-1]
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// String flags.
const (
	hasEscape   = 1 << iota // a backslash escape
	hasNonASCII             // a byte >= 0x80 (maybe invalid UTF-8)
)

// load64 reads s[i:i+8] as a little-endian word (compiled to one load).
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// scanString validates the string literal at s[i] == '"' and returns the offset
// just past its closing quote and whether it has escapes or non-ASCII bytes.
// Plain runs are checked eight bytes at a time.
func scanString(s string, i int) (int, uint8, errKind) {
	var flags uint8
	var acc uint64 // OR of the words the fast loop passed
	i++
	for {
		for i+8 <= len(s) {
			w := load64(s, i)
			q := w ^ (lsb * '"')
			b := w ^ (lsb * '\\')
			// The bytes of w that are '"', '\\' or < 0x20. Borrows cannot hide one, and
			// only flag bytes above a true one: the lowest flagged byte is the first.
			if m := ((q-lsb)&^q | (b-lsb)&^b | (w-lsb*0x20)&^w) & msb; m != 0 {
				n := bits.TrailingZeros64(m) >> 3 // plain bytes before it
				acc |= w & (1<<(n*8) - 1)
				i += n // the byte loop below stops at once
				break
			}
			acc |= w
			i += 8
		}
		for ; i < len(s); i++ {
			c := s[i]
			if c < 0x20 || c == '"' || c == '\\' {
				break
			}
			if c >= utf8.RuneSelf {
				flags |= hasNonASCII
			}
		}
		if acc&msb != 0 {
			flags |= hasNonASCII
		}
		if i >= len(s) {
			return i, flags, errEnd
		}
		switch s[i] {
		case '"':
			return i + 1, flags, errNone
		case '\\':
			flags |= hasEscape
			if i+1 >= len(s) {
				return i + 1, flags, errEnd
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(s) {
						return j, flags, errEnd
					}
					if !isHex(s[j]) {
						return j, flags, errEscape
					}
				}
				i += 6
			default:
				return i + 1, flags, errEscape
			}
		default:
			return i, flags, errControl
		}
	}
}

// decodeBody decodes the inside of a valid string literal.
func decodeBody(body string, flags uint8) string {
	if flags&hasEscape == 0 && (flags&hasNonASCII == 0 || utf8.ValidString(body)) {
		return body
	}
	return unescape(body)
}

// unescape decodes the inside of a valid string literal as encoding/json does.
func unescape(body string) string {
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); {
		j := i
		for j < len(body) && body[j] != '\\' && body[j] < utf8.RuneSelf {
			j++
		}
		b.WriteString(body[i:j])
		if i = j; i >= len(body) {
			break
		}
		if c := body[i]; c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(body[i:])
			b.WriteRune(r) // RuneError for each invalid byte, as encoding/json
			i += size
			continue
		}
		if i+1 >= len(body) {
			break // not a valid literal
		}
		switch c := body[i+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
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
				return b.String() // not a valid literal
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, hex4(body, i)); dec != utf8.RuneError {
					b.WriteRune(dec)
					i += 6
					continue
				}
				r = utf8.RuneError // a lone surrogate
			}
			b.WriteRune(r)
			continue
		}
		i += 2
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
		case c-'0' <= 9:
			c -= '0'
		case (c|0x20)-'a' <= 5:
			c = (c | 0x20) - 'a' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
