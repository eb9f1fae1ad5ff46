package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// RFC 8259 §13 examples and a spread of edge cases; every entry is also checked
// against json.Valid, so the table cannot drift from encoding/json.
var validDocs = []string{
	`{
      "Image": {
          "Width":  800,
          "Height": 600,
          "Title":  "View from 15th Floor",
          "Thumbnail": {
              "Url":    "http://www.example.com/image/481989943",
              "Height": 125,
              "Width":  100
          },
          "Animated" : false,
          "IDs": [116, 943, 234, 38793]
        }
    }`,
	`[
      {
         "precision": "zip",
         "Latitude":  37.7668,
         "Longitude": -122.3959,
         "Address":   "",
         "City":      "SAN FRANCISCO",
         "State":     "CA",
         "Zip":       "94107",
         "Country":   "US"
      },
      {
         "precision": "zip",
         "Latitude":  37.371991,
         "Longitude": -122.026020,
         "Address":   "",
         "City":      "SUNNYVALE",
         "State":     "CA",
         "Zip":       "94085",
         "Country":   "US"
      }
    ]`,
	`"Hello world!"`, `42`, `true`, `false`, `null`,
	` {} `, "\t[ ]\r\n", `[[],{},[{}]]`, `{"":""}`, `{"a":1,"a":2}`,
	`0`, `-0`, `-0.0`, `0.5`, `1e5`, `1E5`, `1e+5`, `1e-5`, `-1.25E-10`, `123456789012345678901234567890`, `1e999`, `-0e0`,
	`"\"\\\/\b\f\n\r\t"`, `"\u0000"`, `"\u00e9\u00E9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`, `"\uDBFF\uDFFF"`,
	"\"\xff\"", "\"caf\xc3\xa9\"", "\"\xed\xa0\x80\"", "\"\x7f\"", `"abcdefghijklmnopqrstuvwxyz0123456789"`,
	`["a","b" , "c" ]`, `{"a" : [1 , {"b":null}] }`,
}

var invalidDocs = []string{
	``, ` `, `{`, `}`, `[`, `]`, `{]`, `[}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{"a":1,}`, `[1,]`, `[,1]`, `[1 2]`,
	`{"a":1}}`, `[1]]`, `{} {}`, `1 2`, `"a" "b"`, `nul`, `tru`, `fals`, `True`, `NULL`, `nulll`, `truex`,
	`01`, `-01`, `00`, `+1`, `.5`, `1.`, `-`, `-.5`, `1e`, `1e+`, `1E-`, `1.e5`, `0x10`, `NaN`, `Infinity`, `-Infinity`, `1_000`,
	`"abc`, `"\"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\U0041"`, `"\'"`, `"\a"`, "\"\x00\"", "\"\x1f\"", "\"a\nb\"", "\"\t\"",
	"\xef\xbb\xbf{}", "\f1", "1\x00", "\x00", "[1]\x00", "\u00a0[]", "\xff", `/* */ 1`, `[1] // x`,
	`{"a":1 "b":2}`, `{"a":1;"b":2}`, `{"a"::1}`, `{,}`, `{"a":1,,"b":2}`, `[1,,2]`,
}

func TestValidTable(t *testing.T) {
	for _, doc := range validDocs {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("table error: encoding/json rejects %q", doc)
		}
		if !Valid(doc) {
			t.Errorf("Valid(%q) = false", doc)
		}
		if err := Validate(doc); err != nil {
			t.Errorf("Validate(%q) = %v", doc, err)
		}
		checkAgainstEncodingJSON(t, []byte(doc))
	}
	for _, doc := range invalidDocs {
		if json.Valid([]byte(doc)) {
			t.Fatalf("table error: encoding/json accepts %q", doc)
		}
		if Valid(doc) {
			t.Errorf("Valid(%q) = true", doc)
		}
		var se *SyntaxError
		if err := Validate(doc); !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(doc) {
			t.Errorf("Validate(%q) = %v", doc, err)
		}
		checkAgainstEncodingJSON(t, []byte(doc))
	}
}

func TestSyntaxErrorOffsets(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		off  int
		want string
	}{
		{`{"a":1,}`, 7, "looking for an object key"},
		{`[1 2]`, 3, "want ',' or ']'"},
		{`{"a":1 "b"}`, 7, "want ',' or '}'"},
		{`{"a" 1}`, 5, "want ':'"},
		{`[01]`, 2, "want ',' or ']'"},
		{`1.x`, 2, "invalid number"},
		{"\"a\x01\"", 2, "control character"},
		{`"\q"`, 2, "invalid escape"},
		{`"\u12x4"`, 5, "invalid escape"},
		{`{"a":[1,`, 8, "unexpected end"},
		{`{} x`, 3, "data after the top-level value"},
		{`nux`, 2, "invalid literal"},
		{"\xff", 0, `invalid byte "\xff"`},
	} {
		err := Validate(tc.doc)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset != tc.off || !strings.Contains(se.Error(), tc.want) {
			t.Errorf("Validate(%q) = %v, want offset %d and %q", tc.doc, err, tc.off, tc.want)
		}
	}
}

func TestUnquote(t *testing.T) {
	for lit, want := range map[string]string{
		`""`:                      "",
		`"plain"`:                 "plain",
		`"https:\/\/x.example\/"`: "https://x.example/",
		`"\"\\\/\b\f\n\r\t"`:      "\"\\/\b\f\n\r\t",
		`"\u00e9\u4E2D"`:          "é中",
		`"\ud83d\ude00"`:          "😀",
		`"\ud83d"`:                "\ufffd",
		`"\ude00\ud83d\ude00"`:    "\ufffd😀",
		`"\ud83dx"`:               "\ufffdx",
		`"\ud83d\u0041"`:          "\ufffdA",
		`"\ud83d\ud83d\ude00"`:    "\ufffd😀",
		`"\u0000"`:                "\x00",
		"\"\xff\xfe\"":            "\ufffd\ufffd",
		"\"caf\xc3\xa9\"":         "café",
		"\"\xed\xa0\x80\"":        "\ufffd\ufffd\ufffd",
		"\"\xc3\"":                "\ufffd",
		"\"a\\n\xff\"":            "a\n\ufffd",
	} {
		var ref string
		if err := json.Unmarshal([]byte(lit), &ref); err != nil || ref != want {
			t.Fatalf("table error: encoding/json decodes %q to %q, %v", lit, ref, err)
		}
		got, ok := Unquote(lit)
		if !ok || got != want {
			t.Errorf("Unquote(%q) = %q, %v; want %q", lit, got, ok, want)
		}
		sc := NewScanner(" " + lit + " ")
		if got := sc.Str(); got != want || sc.End() != nil {
			t.Errorf("Scanner.String(%q) = %q, %v", lit, got, sc.Err())
		}
	}
	for _, bad := range []string{``, `"`, `"a`, `a"`, `"a" `, ` "a"`, `"a""`, `"\x"`, `1`, "\"\x01\""} {
		if s, ok := Unquote(bad); ok {
			t.Errorf("Unquote(%q) = %q, true", bad, s)
		}
	}
}

func TestStringWithoutEscapesIsASubstring(t *testing.T) {
	doc := `{"k":"a plain value, longer than a word","é":"caf` + "\xc3\xa9" + `"}`
	sc := NewScanner(doc)
	for sc.Object(); sc.NextMember(); {
		v := sc.Str()
		if v == "" || !within(doc, v) {
			t.Errorf("%q is a copy", v)
		}
	}
	if err := sc.End(); err != nil {
		t.Fatal(err)
	}
}

// within reports whether sub's bytes lie inside doc's (sub is not a copy).
func within(doc, sub string) bool {
	d := uintptr(unsafe.Pointer(unsafe.StringData(doc)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(sub)))
	return p >= d && p+uintptr(len(sub)) <= d+uintptr(len(doc))
}

func TestDepthLimit(t *testing.T) {
	nest := func(n int, open, cl string) string {
		return strings.Repeat(open, n) + strings.Repeat(cl, n)
	}
	objects := func(n int) string {
		return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
	}
	for _, tc := range []struct {
		doc   string
		valid bool
	}{
		{nest(MaxDepth, "[", "]"), true},
		{nest(MaxDepth+1, "[", "]"), false},
		{objects(MaxDepth), true},
		{objects(MaxDepth + 1), false},
		{`{"x":` + nest(MaxDepth-1, "[", "]") + `}`, true},
		{`{"x":` + nest(MaxDepth, "[", "]") + `}`, false},
		{nest(MaxDepth*5, "[", "]"), false},
		{strings.Repeat("[", 1<<20), false}, // a bomb: rejected without a deep stack
	} {
		if json.Valid([]byte(tc.doc)) != tc.valid {
			t.Fatalf("table error: json.Valid disagrees (len %d)", len(tc.doc))
		}
		if Valid(tc.doc) != tc.valid {
			t.Errorf("Valid(len %d) = %v", len(tc.doc), !tc.valid)
		}
		if err := Validate(tc.doc); (err == nil) != tc.valid || (!tc.valid && !strings.Contains(err.Error(), "nested deeper") && len(tc.doc) > 1<<20-1) {
			t.Errorf("Validate(len %d) = %v", len(tc.doc), err)
		}
		// The scanner counts the containers it entered: descend 3 levels, skip the rest.
		sc := NewScanner(tc.doc)
		descend(sc, 3)
		if (sc.End() == nil) != tc.valid {
			t.Errorf("Scanner(len %d): %v", len(tc.doc), sc.Err())
		}
	}
	err := Validate(nest(MaxDepth+1, "[", "]"))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != MaxDepth || !strings.Contains(err.Error(), "nested deeper than 10000") {
		t.Errorf("depth error %v", err)
	}
}

// descend enters n levels of containers with the scanner and skips what is below.
func descend(sc *Scanner, n int) {
	if n == 0 {
		sc.Skip()
		return
	}
	switch sc.Kind() {
	case Object:
		for sc.Object(); sc.NextMember(); {
			descend(sc, n-1)
		}
	case Array:
		for sc.Array(); sc.NextElement(); {
			descend(sc, n-1)
		}
	default:
		sc.Skip()
	}
}

func TestScanner(t *testing.T) {
	doc := ` {"s":"x\ty","n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,"2",{"k":[]}],"o":{"p":{}},"skip":{"deep":[[[1]]]},"last":"end"} `
	sc := NewScanner(doc)
	if sc.Kind() != Object {
		t.Fatalf("kind %v", sc.Kind())
	}
	got := map[string]any{}
	for sc.Object(); sc.NextMember(); {
		switch k := sc.Key(); k {
		case "s", "last":
			got[k] = sc.Str()
		case "n":
			got[k] = sc.Number()
		case "t", "f":
			got[k] = sc.Bool()
		case "z":
			got[k] = sc.Kind()
		case "a":
			var kinds []Kind
			for sc.Array(); sc.NextElement(); {
				kinds = append(kinds, sc.Kind())
				if sc.Kind() == String {
					sc.Str()
				} // the others: skipped by NextElement
			}
			got[k] = kinds
		case "o":
			got[k] = sc.Raw()
		}
	}
	if err := sc.End(); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"s": "x\ty", "last": "end", "n": "-1.5e3", "t": true, "f": false, "z": Null,
		"a": []Kind{Number, String, Object}, "o": `{"p":{}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}

	// Type mismatches are errors, and sticky.
	for _, tc := range []struct {
		doc  string
		read func(*Scanner)
	}{
		{`1`, func(sc *Scanner) { sc.Str() }},
		{`"1"`, func(sc *Scanner) { sc.Number() }},
		{`null`, func(sc *Scanner) { sc.Bool() }},
		{`[]`, func(sc *Scanner) { sc.Object() }},
		{`{}`, func(sc *Scanner) { sc.Array() }},
		{`{"a":1 x}`, func(sc *Scanner) { descend(sc, 5) }},
		{`{"a":01}`, func(sc *Scanner) { descend(sc, 5) }},
		{`{"a":"b"`, func(sc *Scanner) { descend(sc, 5) }},
		{`{"a":[1,]}`, func(sc *Scanner) { descend(sc, 1) }},
		{`[1,]`, func(sc *Scanner) { descend(sc, 1) }},
		{`{"a":1}`, func(sc *Scanner) { sc.Object(); sc.NextMember() }}, // End before the '}'
	} {
		sc := NewScanner(tc.doc)
		tc.read(sc)
		if sc.End() == nil {
			t.Errorf("%s: no error", tc.doc)
			continue
		}
		off := sc.Offset()
		if sc.Kind() != Invalid || sc.NextMember() || sc.NextElement() || sc.Str() != "" || sc.Raw() != "" || sc.Offset() != off {
			t.Errorf("%s: the error is not sticky", tc.doc)
		}
	}

	var zero Scanner
	if zero.Kind() != Invalid || zero.End() != nil {
		t.Errorf("zero Scanner: %v %v", zero.Kind(), zero.Err())
	}
	if zero.Skip(); zero.Err() == nil {
		t.Error("zero Scanner: Skip of nothing succeeded")
	}
	zero.Reset(`[1]`)
	if zero.Raw() != `[1]` || zero.End() != nil {
		t.Errorf("Reset: %v", zero.Err())
	}
}

func TestKind(t *testing.T) {
	for raw, want := range map[string]Kind{
		`"`: String, `{`: Object, `[`: Array, `t`: Bool, `f`: Bool, `n`: Null, `-`: Number, `0`: Number, `9`: Number,
		``: Invalid, ` 1`: Invalid, `x`: Invalid, `}`: Invalid, `+`: Invalid,
	} {
		if got := KindOf(raw); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", raw, got, want)
		}
	}
	if Object.String() != "object" || Kind(99).String() != "Kind(99)" {
		t.Error("Kind.String")
	}
}

func TestAllocations(t *testing.T) {
	doc := sampleDoc(50)
	if n := testing.AllocsPerRun(100, func() {
		if !Valid(doc) {
			t.Fatal("invalid")
		}
	}); n != 0 {
		t.Errorf("Valid: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		var sc Scanner
		sc.Reset(doc)
		walkStrings(&sc)
		if sc.End() != nil {
			t.Fatal(sc.Err())
		}
	}); n != 0 {
		t.Errorf("a scan reading every (unescaped) string: %v allocations", n)
	}
}

func walkStrings(sc *Scanner) int {
	n := 0
	switch sc.Kind() {
	case Object:
		for sc.Object(); sc.NextMember(); {
			n += len(sc.Key()) + walkStrings(sc)
		}
	case Array:
		for sc.Array(); sc.NextElement(); {
			n += walkStrings(sc)
		}
	case String:
		n += len(sc.Str())
	default:
		sc.Skip()
	}
	return n
}

// sampleDoc is an NRPS-like page of n members without escapes.
func sampleDoc(n int) string {
	var b strings.Builder
	b.WriteString(`{"id":"https://lms.example.edu/api/lti/courses/1/names_and_roles","context":{"id":"4dde05e8ca1973bcca9bffc13e1548820eee93a3","label":"CS101","title":"Intro"},"members":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"user_id":"535fa085-f5a1-4f2c-a4a5-%012d","roles":["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],"status":"Active","name":"Student Number %d","given_name":"Student","family_name":"Number %d","email":"student%d@university.example.edu","picture":"https://lms.example.edu/images/%d/avatar.png","score":%d.5,"active":true,"extra":null}`, i, i, i, i, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// checkAgainstEncodingJSON: Valid, Validate and a Scanner agree with json.Valid;
// on valid input the scanner's view (every string decoded, every object and array,
// numbers as written) equals json.Unmarshal's into any, and so do the raw values
// the scanner hands out.
func checkAgainstEncodingJSON(t *testing.T, in []byte) {
	t.Helper()
	s := string(in)
	want := json.Valid(in)
	if got := Valid(s); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid %v", in, got, want)
	}
	if err := Validate(s); (err == nil) != want {
		t.Fatalf("Validate(%q) = %v, json.Valid %v", in, err, want)
	}
	var ref any
	if want {
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&ref); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
	}
	for mode := range 3 {
		sc := NewScanner(s)
		got := toAny(t, sc, mode)
		if err := sc.End(); (err == nil) != want {
			t.Fatalf("mode %d: Scanner on %q: %v, json.Valid %v", mode, in, err, want)
		}
		if want && mode != 2 && !reflect.DeepEqual(got, ref) {
			t.Fatalf("mode %d: %q:\nscanner       %#v\nencoding/json %#v", mode, in, got, ref)
		}
	}
}

// toAny builds what json.Unmarshal into any (with UseNumber) builds. mode 0 reads
// every value through the Scanner; mode 1 reads every other member or element as
// Raw and decodes that with encoding/json; mode 2 leaves those unread (skipped).
func toAny(t *testing.T, sc *Scanner, mode int) any {
	switch sc.Kind() {
	case Object:
		m := map[string]any{}
		n := 0
		for sc.Object(); sc.NextMember(); n++ {
			k := sc.Key()
			if mode != 0 && n%2 == 1 {
				m[k] = rawValue(t, sc, mode)
			} else {
				m[k] = toAny(t, sc, mode)
			}
		}
		return m
	case Array:
		a := []any{}
		for sc.Array(); sc.NextElement(); {
			if mode != 0 && len(a)%2 == 1 {
				a = append(a, rawValue(t, sc, mode))
			} else {
				a = append(a, toAny(t, sc, mode))
			}
		}
		return a
	case String:
		return sc.Str()
	case Number:
		return json.Number(sc.Number())
	case Bool:
		return sc.Bool()
	case Null:
		sc.Skip()
		return nil
	}
	sc.Skip() // not a value: records the error
	return nil
}

type skipped struct{}

func rawValue(t *testing.T, sc *Scanner, mode int) any {
	if mode == 2 {
		return skipped{} // left unread: not compared
	}
	raw := sc.Raw()
	if sc.Err() != nil {
		return nil
	}
	if KindOf(raw) == Invalid || strings.TrimSpace(raw) != raw {
		t.Fatalf("Raw() = %q", raw)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("Raw() = %q: %v", raw, err)
	}
	return v
}
