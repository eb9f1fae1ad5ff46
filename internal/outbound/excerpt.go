package outbound

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of an ErrorExcerpt.
const (
	maxExcerptField = 200 // bytes of one field's text
	maxExcerptInput = 64 << 10
)

// excerpt is what ErrorExcerpt keeps of an upstream error body, in this order.
type excerpt struct {
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
	Message          string `json:"message,omitempty"`
}

// ErrorExcerpt returns the part of an upstream error body that may be passed on to a
// caller: the JSON error fields "error", "error_description" and "message" (or the first
// of an "errors" array's messages, Canvas's form) when they are strings, each reduced to
// printable text of at most 200 bytes, as a compact JSON object. Anything else, HTML, plain
// text, other JSON members, a body that is not a JSON object, gives "": a body from a
// host inside the network is never echoed.
func ErrorExcerpt(body []byte) string {
	if len(body) > maxExcerptInput {
		return "" // cut JSON does not parse; a longer error body is not an error document
	}
	var doc struct {
		Error            any `json:"error"`
		ErrorDescription any `json:"error_description"`
		Message          any `json:"message"`
		Errors           []struct {
			Message any `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	e := excerpt{Error: printable(doc.Error), ErrorDescription: printable(doc.ErrorDescription), Message: printable(doc.Message)}
	if e.Message == "" && len(doc.Errors) > 0 {
		e.Message = printable(doc.Errors[0].Message)
	}
	if e == (excerpt{}) {
		return ""
	}
	b, _ := json.Marshal(e) // strings only: cannot fail
	return string(b)
}

// printable is v's text when v is a string: control, format and other unprintable
// characters dropped, runs of spaces collapsed, clipped to maxExcerptField bytes.
func printable(v any) string {
	s, ok := v.(string)
	if !ok {
		return ""
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			continue
		}
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			if b.Len()+1 > maxExcerptField {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > maxExcerptField {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
