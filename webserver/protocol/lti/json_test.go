package lti

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// ParseClaims validates the payload in the same pass that decodes it (no
// json.Valid first): whatever encoding/json rejects is refused as not a JSON
// object, wherever the fault is, including in claims the decoder ignores.
func TestParseClaimsRejectsWhatEncodingJSONRejects(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for _, payload := range []string{
		`{"iss":"x"} {}`, `{"iss":"x"}x`, `{"iss":"x"`, `{"iss":"x",}`, `{"iss" "x"}`,
		`{"unknown":[1,2,}`, `{"unknown":{"a":01}}`, `{"unknown":"\q"}`, "{\"unknown\":\"a\x01\"}",
		`{"unknown":tru}`, `{"unknown":` + deep + `}`, `{"iss":"x","unknown":1.}`,
		`{"https://purl.imsglobal.org/spec/lti/claim/custom":{"a":[1 2]}}`,
		"\xef\xbb\xbf{}", `[]`, `"x"`, ``,
	} {
		if json.Valid([]byte(payload)) && strings.HasPrefix(payload, "{") {
			t.Fatalf("table error: %q is a JSON object", payload)
		}
		c, err := ParseClaims([]byte(payload))
		var e *apierr.Error
		if c != nil || !errors.As(err, &e) || e.Code != CodeInvalidToken || e.Rule != "T-TOK-03" {
			t.Errorf("ParseClaims(%.40q) = %v, %v", payload, c, err)
		}
		if c, err := ParseValidatedClaims([]byte(payload)); c != nil || err == nil {
			t.Errorf("ParseValidatedClaims(%.40q) = %v, %v", payload, c, err)
		}
	}
	// 10,000 levels are JSON (encoding/json's limit): accepted, ignored.
	deepOK := `{"iss":"x","unknown":` + deep[1:len(deep)-1] + `}`
	if c, err := ParseClaims([]byte(deepOK)); err != nil || c.Issuer != "x" {
		t.Errorf("10000 levels: %v, %v", c, err)
	}
}

// ParseValidatedClaims and ParseClaims share the decoder; on a valid object they
// decode the same claims.
func TestParseValidatedClaimsMatchesParseClaims(t *testing.T) {
	for _, m := range []map[string]any{rlrClaims(), dlClaims(), canvasLikeClaims()} {
		payload, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		payload = append(append([]byte(" \n"), payload...), '\t')
		a, err := ParseClaims(payload)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseValidatedClaims(payload)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("ParseClaims and ParseValidatedClaims differ:\n%#v\n%#v", a, b)
		}
	}
}
