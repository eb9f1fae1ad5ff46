package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// ReadJSON answers DecodeJSON's error in the envelope and says so; a good body is read and
// nothing is written.
func TestReadJSON(t *testing.T) {
	type body struct {
		Name string `json:"name"`
	}
	read := func(contentType, payload string) (*httptest.ResponseRecorder, body, bool) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(payload))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		var b body
		ok := httpapi.ReadJSON(w, r, &b)
		return w, b, ok
	}
	w, b, ok := read("application/json", `{"name":"x"}`)
	if !ok || b.Name != "x" || w.Body.Len() != 0 {
		t.Fatalf("good body: ok=%v body=%+v answer=%q", ok, b, w.Body.String())
	}
	for _, tc := range []struct{ contentType, payload, code string }{
		{"text/plain", `{"name":"x"}`, httpapi.CodeUnsupportedMedia},
		{"application/json", `{"name":"x","other":1}`, httpapi.CodeInvalidParameters},
		{"application/json", `{"name":`, httpapi.CodeInvalidBody},
	} {
		w, _, ok := read(tc.contentType, tc.payload)
		var env struct {
			Details struct{ Message string } `json:"details"` // the code
		}
		if err := json.Unmarshal(w.Body.Bytes(), &env); ok || err != nil || env.Details.Message != tc.code {
			t.Errorf("%s %s: ok=%v answer %d %q, want code %s", tc.contentType, tc.payload, ok, w.Code, w.Body.String(), tc.code)
		}
	}
}
