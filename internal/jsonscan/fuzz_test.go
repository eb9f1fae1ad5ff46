package jsonscan

import (
	"encoding/json"
	"testing"
)

// FuzzAgainstEncodingJSON: for any input, Valid, Validate and a Scanner walk agree
// with json.Valid, and on valid input every decoded string, number text, object
// and array agrees with json.Unmarshal into any (UseNumber).
func FuzzAgainstEncodingJSON(f *testing.F) {
	for _, s := range validDocs {
		f.Add([]byte(s))
	}
	for _, s := range invalidDocs {
		f.Add([]byte(s))
	}
	f.Add([]byte(sampleDoc(2)))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstEncodingJSON(t, in)
	})
}

// FuzzUnquote: a string literal decodes byte for byte as encoding/json decodes it.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a\/b"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\udc00\ud800\udc00"`, "\"\xff\"", `"\u00e9"`, `"\"`, "\"a\x01\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var want string
		err := json.Unmarshal([]byte(lit), &want)
		isLit := err == nil && KindOf(lit) == String && lit[len(lit)-1] == '"'
		got, ok := Unquote(lit)
		if ok != isLit || got != want && ok {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q, %v", lit, got, ok, want, err)
		}
	})
}
