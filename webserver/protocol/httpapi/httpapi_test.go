package httpapi

// The APIKey informer path (Attach/update) needs a Kubernetes cache and is covered by
// the envtest suite; these tests use Set only.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// response is what a test needs of an HTTP response, read fully.
type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return response{status: res.StatusCode, header: res.Header, body: body}
}

// envelope decodes an error body strictly: exactly the members of the documented envelope.
func envelope(t *testing.T, r response) Envelope {
	t.Helper()
	if mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type")); err != nil || mt != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", r.header.Get("Content-Type"))
	}
	var generic map[string]any
	if err := json.Unmarshal(r.body, &generic); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %s", err, r.body)
	}
	if keys := sortedKeys(generic); !slices.Equal(keys, []string{"details", "error", "status"}) {
		t.Errorf("envelope members = %v, want [details error status]: %s", keys, r.body)
	}
	if details, ok := generic["details"].(map[string]any); !ok {
		t.Errorf("details is not an object: %s", r.body)
	} else if keys := sortedKeys(details); !slices.Equal(keys, []string{"description", "message"}) {
		t.Errorf("details members = %v, want [description message]: %s", keys, r.body)
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("decoding the envelope: %v: %s", err, r.body)
	}
	if env.Status != r.status {
		t.Errorf("envelope status %d differs from HTTP status %d", env.Status, r.status)
	}
	if env.Error != http.StatusText(r.status) {
		t.Errorf("envelope error = %q, want %q", env.Error, http.StatusText(r.status))
	}
	if env.Details.Description == "" {
		t.Errorf("envelope has no description: %s", r.body)
	}
	if got := r.header.Get("WWW-Authenticate"); (r.status == http.StatusUnauthorized) != (got != "") {
		t.Errorf("status %d with WWW-Authenticate %q", r.status, got)
	}
	return env
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestWriteErrorEnvelope(t *testing.T) {
	tests := []struct {
		status      int
		code        string
		description string
		wantBody    string
	}{
		{
			status: http.StatusUnauthorized, code: CodeInvalidAPIKey, description: "The API key is not valid.",
			wantBody: `{"status":401,"error":"Unauthorized","details":{"message":"INVALID_API_KEY","description":"The API key is not valid."}}`,
		},
		{
			status: http.StatusNotFound, code: CodePlatformNotFound, description: "No such platform.",
			wantBody: `{"status":404,"error":"Not Found","details":{"message":"PLATFORM_NOT_FOUND","description":"No such platform."}}`,
		},
		{
			status: http.StatusRequestEntityTooLarge, code: CodePayloadTooLarge, description: "Too big.",
			wantBody: `{"status":413,"error":"Request Entity Too Large","details":{"message":"PAYLOAD_TOO_LARGE","description":"Too big."}}`,
		},
		{
			status: http.StatusServiceUnavailable, code: CodeAPIKeyNotConfigured, description: `quote " and unicode é`,
			wantBody: `{"status":503,"error":"Service Unavailable","details":{"message":"API_KEY_NOT_CONFIGURED","description":"quote \" and unicode é"}}`,
		},
		{
			status: http.StatusInternalServerError, code: CodeInternal, description: "Oops.",
			wantBody: `{"status":500,"error":"Internal Server Error","details":{"message":"INTERNAL_SERVER_ERROR","description":"Oops."}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				WriteError(w, Errorf(tt.status, tt.code, tt.description))
			}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			r := do(t, req)
			if r.status != tt.status {
				t.Errorf("status = %d, want %d", r.status, tt.status)
			}
			if string(r.body) != tt.wantBody {
				t.Errorf("body =\n %s\nwant\n %s", r.body, tt.wantBody)
			}
			env := envelope(t, r)
			if env.Details.Message != tt.code {
				t.Errorf("details.message = %q, want %q", env.Details.Message, tt.code)
			}
			if tt.status == http.StatusUnauthorized {
				if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
				}
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
		})
	}
}

// TestWriteErrorProtocolError: an error from the protocol packages (rule, OAuth value and
// cause set) goes out exactly as the status, code and description alone would: the JSON
// envelope and the HTML page, byte for byte.
func TestWriteErrorProtocolError(t *testing.T) {
	full := &Error{Status: http.StatusUnauthorized, Code: "UNKNOWN_KID", Rule: "T-TOK-08", OAuth: "invalid_client",
		Description: "The platform's key set has no key with the id_token's kid.", Cause: errors.New("jwks: kid k9 not found")}
	plain := Errorf(full.Status, full.Code, full.Description)
	for _, accept := range []string{"application/json", "text/html"} {
		write := func(e *Error) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/lti/launch", nil)
			req.Header.Set("Accept", accept)
			WriteErrorPage(rec, req, e, "The launch could not be completed")
			return rec
		}
		got, want := write(full), write(plain)
		if got.Code != want.Code || got.Body.String() != want.Body.String() || !maps.EqualFunc(got.Header(), want.Header(), slices.Equal) {
			t.Errorf("%s: got %d %v %s\nwant %d %v %s", accept, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
		if strings.Contains(got.Body.String(), "T-TOK-08") || strings.Contains(got.Body.String(), "k9") {
			t.Errorf("%s: the rule or the cause reached the response: %s", accept, got.Body)
		}
	}
	if got := full.Error(); got != "UNKNOWN_KID: The platform's key set has no key with the id_token's kid. [T-TOK-08]: jwks: kid k9 not found" {
		t.Errorf("Error() = %q", got)
	}
}

func TestWriteJSONUnencodable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"ch": make(chan int)})
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	r := do(t, req)
	if r.status != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", r.status)
	}
	if env := envelope(t, r); env.Details.Message != CodeInternal {
		t.Errorf("details.message = %q, want %q", env.Details.Message, CodeInternal)
	}
}

func TestErrorError(t *testing.T) {
	if got := Errorf(http.StatusBadRequest, CodeInvalidBody, "bad").Error(); got != "INVALID_REQUEST_BODY: bad" {
		t.Errorf("Error() = %q", got)
	}
}

// payload is the value the DecodeJSON tests decode into.
type payload struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
	Inner struct {
		On bool `json:"on"`
	} `json:"inner"`
}

const bodyLimit = 1024

// decodeHandler decodes every request body into a payload and echoes it back, behind
// LimitBody(bodyLimit).
func decodeHandler() http.Handler {
	return LimitBody(bodyLimit)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p payload
		if err := DecodeJSON(r, &p); err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, p)
	}))
}

func decodeServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(decodeHandler())
	t.Cleanup(srv.Close)
	return srv
}

// padded returns a valid JSON body of exactly n bytes (n ≥ 15).
func padded(n int) string {
	const head = `{"name":"`
	const tail = `"}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// trailingSpaces returns a valid JSON body followed by whitespace up to n bytes.
func trailingSpaces(n int) string {
	const v = `{"name":"ok"}`
	return v + strings.Repeat(" ", n-len(v))
}

func TestDecodeJSON(t *testing.T) {
	srv := decodeServer(t)
	tests := []struct {
		name        string
		contentType string // "-" for none
		body        string
		wantStatus  int
		wantCode    string
		wantMention string // the description must contain it
		want        *payload
	}{
		{name: "valid", contentType: "application/json", body: `{"name":"a","count":2,"tags":["x"],"inner":{"on":true}}`,
			wantStatus: 200, want: &payload{Name: "a", Count: 2, Tags: []string{"x"}, Inner: struct {
				On bool `json:"on"`
			}{On: true}}},
		{name: "valid with charset", contentType: "application/json; charset=utf-8", body: `{"name":"a"}`, wantStatus: 200, want: &payload{Name: "a"}},
		{name: "upper-case media type", contentType: "Application/JSON", body: `{"name":"a"}`, wantStatus: 200, want: &payload{Name: "a"}},
		{name: "merge-patch+json", contentType: "application/merge-patch+json", body: `{"name":"a"}`, wantStatus: 200, want: &payload{Name: "a"}},
		{name: "surrounding whitespace", contentType: "application/json", body: "\n {\"name\":\"a\"} \n\t", wantStatus: 200, want: &payload{Name: "a"}},
		{name: "exactly at the limit", contentType: "application/json", body: padded(bodyLimit), wantStatus: 200},
		{name: "no content type", contentType: "-", body: `{"name":"a"}`, wantStatus: 415, wantCode: CodeUnsupportedMedia},
		{name: "text/plain", contentType: "text/plain", body: `{"name":"a"}`, wantStatus: 415, wantCode: CodeUnsupportedMedia},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: `name=a`, wantStatus: 415, wantCode: CodeUnsupportedMedia},
		{name: "jsonx", contentType: "application/jsonx", body: `{"name":"a"}`, wantStatus: 415, wantCode: CodeUnsupportedMedia},
		{name: "malformed content type", contentType: "application/json; =", body: `{"name":"a"}`, wantStatus: 415, wantCode: CodeUnsupportedMedia},
		{name: "empty body", contentType: "application/json", body: "", wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "whitespace only", contentType: "application/json", body: "  \n", wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "syntax error", contentType: "application/json", body: `{name:"a"}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "truncated", contentType: "application/json", body: `{"name":"a"`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing empty object", contentType: "application/json", body: `{"name":"a"} {}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing garbage", contentType: "application/json", body: `{"name":"a"} x`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing comma", contentType: "application/json", body: `{"name":"a"},`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing array", contentType: "application/json", body: `{"name":"a"}[]`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing array status", contentType: "application/json", body: `{"name":"a"}[]`, wantStatus: 400},
		{name: "trailing second object", contentType: "application/json", body: `{"name":"a"} {"name":"b"}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing number", contentType: "application/json", body: `{"name":"a"} 1`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "trailing second object status", contentType: "application/json", body: `{"name":"a"} {"name":"b"}`, wantStatus: 400},
		{name: "trailing number status", contentType: "application/json", body: `{"name":"a"} 1`, wantStatus: 400},
		{name: "unknown field", contentType: "application/json", body: `{"name":"a","colour":"red"}`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "colour"},
		{name: "unknown nested field", contentType: "application/json", body: `{"inner":{"off":true}}`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "off"},
		{name: "wrong type number", contentType: "application/json", body: `{"count":"two"}`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "count"},
		{name: "wrong type string", contentType: "application/json", body: `{"name":5}`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "name: must be a JSON string"},
		{name: "wrong type array", contentType: "application/json", body: `{"tags":"x"}`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "tags: must be a JSON array"},
		{name: "wrong type nested", contentType: "application/json", body: `{"inner":{"on":"yes"}}`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "inner.on: must be a JSON boolean"},
		{name: "not an object", contentType: "application/json", body: `[1,2]`, wantStatus: 400, wantCode: CodeInvalidParameters, wantMention: "body: must be a JSON object"},
		{name: "over the limit", contentType: "application/json", body: padded(bodyLimit + 1), wantStatus: 413, wantCode: CodePayloadTooLarge, wantMention: "1024"},
		{name: "far over the limit", contentType: "application/json", body: padded(64 * 1024), wantStatus: 413, wantCode: CodePayloadTooLarge},
		{name: "over the limit, wrong content type", contentType: "text/plain", body: padded(2 * bodyLimit), wantStatus: 413, wantCode: CodePayloadTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if req.ContentLength != int64(len(tt.body)) {
				t.Fatalf("request has Content-Length %d, want %d", req.ContentLength, len(tt.body))
			}
			if tt.contentType != "-" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			r := do(t, req)
			checkDecodeResponse(t, r, tt.wantStatus, tt.wantCode, tt.wantMention, tt.want)
		})
	}
}

func checkDecodeResponse(t *testing.T, r response, wantStatus int, wantCode, wantMention string, want *payload) {
	t.Helper()
	if r.status != wantStatus {
		t.Fatalf("status = %d, want %d: %s", r.status, wantStatus, r.body)
	}
	if wantStatus == http.StatusOK {
		if want != nil {
			var got payload
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Errorf("decoded %s, want %s", gotJSON, wantJSON)
			}
		}
		return
	}
	env := envelope(t, r)
	if wantCode != "" && env.Details.Message != wantCode {
		t.Errorf("details.message = %q, want %q (%s)", env.Details.Message, wantCode, env.Details.Description)
	}
	if wantMention != "" && !strings.Contains(env.Details.Description, wantMention) {
		t.Errorf("description %q does not mention %q", env.Details.Description, wantMention)
	}
}

// TestDecodeJSONChunked sends bodies without a Content-Length (chunked transfer coding):
// the limit must hold while reading, not only on the declared length.
func TestDecodeJSONChunked(t *testing.T) {
	var sawLength atomic.Int64
	var sawChunked atomic.Bool
	limited := decodeHandler()
	// A front handler records how the request arrived, then hands it to the same stack.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawLength.Store(r.ContentLength)
		sawChunked.Store(slices.Contains(r.TransferEncoding, "chunked"))
		limited.ServeHTTP(w, r)
	}))
	defer srv.Close()

	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
	}{
		{name: "small valid", body: `{"name":"chunked"}`, wantStatus: 200},
		{name: "exactly at the limit", body: padded(bodyLimit), wantStatus: 200},
		{name: "over the limit inside the value", body: padded(bodyLimit + 1), wantStatus: 413, wantCode: CodePayloadTooLarge},
		{name: "far over the limit", body: padded(16 * bodyLimit), wantStatus: 413, wantCode: CodePayloadTooLarge},
		{name: "valid value then padding past the limit", body: trailingSpaces(4 * bodyLimit), wantStatus: 413, wantCode: CodePayloadTooLarge},
		{name: "syntax error under the limit", body: `{"name":`, wantStatus: 400, wantCode: CodeInvalidBody},
	}
	for _, tt := range tests {
		for _, via := range []string{"pipe", "reader"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				var body io.Reader
				switch via {
				case "pipe":
					pr, pw := io.Pipe()
					go func() {
						// Write in small pieces so the server sees several chunks.
						data := []byte(tt.body)
						for len(data) > 0 {
							n := min(len(data), 100)
							if _, err := pw.Write(data[:n]); err != nil {
								pw.CloseWithError(err)
								return
							}
							data = data[n:]
						}
						pw.Close()
					}()
					body = pr
				case "reader":
					// A reader http.NewRequest cannot size.
					body = io.MultiReader(strings.NewReader(tt.body))
				}
				req, err := http.NewRequest(http.MethodPost, srv.URL, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				if req.ContentLength != 0 {
					t.Fatalf("request has a Content-Length %d; the test needs none", req.ContentLength)
				}
				r := do(t, req)
				if got := sawLength.Load(); got != -1 {
					t.Errorf("server saw Content-Length %d, want -1 (unknown)", got)
				}
				if !sawChunked.Load() {
					t.Error("server did not see a chunked request")
				}
				checkDecodeResponse(t, r, tt.wantStatus, tt.wantCode, "", nil)
			})
		}
	}
}

func randomKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// bearerServer serves a handler behind k.RequireBearer and counts the requests it admits.
func bearerServer(t *testing.T, k *APIKey) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var admitted atomic.Int64
	srv := httptest.NewServer(k.RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		admitted.Add(1)
		WriteJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
	})))
	t.Cleanup(srv.Close)
	return srv, &admitted
}

// authDo sends a GET with the given Authorization header ("" for none) and checks that no
// secret leaks into the response.
func authDo(t *testing.T, url, authorization string, secrets ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	r := do(t, req)
	for _, s := range secrets {
		if len(s) < 8 {
			continue // too short to mean anything if found
		}
		if bytes.Contains(r.body, []byte(s)) {
			t.Errorf("response body contains a key: %s", r.body)
		}
		for name, values := range r.header {
			for _, v := range values {
				if strings.Contains(v, s) {
					t.Errorf("response header %s contains a key: %q", name, v)
				}
			}
		}
	}
	return r
}

func TestRequireBearerNotConfigured(t *testing.T) {
	k := NewAPIKey("ltiop-api-key", "apiKey")
	srv, admitted := bearerServer(t, k)
	presented := randomKey(t)

	r := authDo(t, srv.URL, "Bearer "+presented, presented)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status = %d, want 503: %s", r.status, r.body)
	}
	env := envelope(t, r)
	if env.Details.Message != CodeAPIKeyNotConfigured {
		t.Errorf("details.message = %q, want %q", env.Details.Message, CodeAPIKeyNotConfigured)
	}
	if !strings.Contains(env.Details.Description, "ltiop-api-key") || !strings.Contains(env.Details.Description, "apiKey") {
		t.Errorf("description %q does not name the Secret and its key", env.Details.Description)
	}

	// Header problems are still reported as such.
	r = authDo(t, srv.URL, "")
	if r.status != http.StatusUnauthorized || envelope(t, r).Details.Message != CodeMissingAuthorization {
		t.Errorf("no header, no key configured: %d %s", r.status, r.body)
	}
	r = authDo(t, srv.URL, "Basic "+presented, presented)
	if r.status != http.StatusUnauthorized || envelope(t, r).Details.Message != CodeInvalidAuthScheme {
		t.Errorf("Basic, no key configured: %d %s", r.status, r.body)
	}
	if n := admitted.Load(); n != 0 {
		t.Errorf("handler ran %d times without a configured key", n)
	}
}

func TestRequireBearer(t *testing.T) {
	k := NewAPIKey("ltiop-api-key", "apiKey")
	key := randomKey(t)
	k.Set(key)
	srv, admitted := bearerServer(t, k)

	tests := []struct {
		name          string
		authorization string
		wantCode      string // "" means admitted
	}{
		{name: "right key", authorization: "Bearer " + key},
		{name: "lower-case scheme", authorization: "bearer " + key},
		{name: "upper-case scheme", authorization: "BEARER " + key},
		{name: "mixed-case scheme", authorization: "bEaReR " + key},
		{name: "extra spaces before the key", authorization: "Bearer   " + key},
		{name: "missing header", authorization: "", wantCode: CodeMissingAuthorization},
		{name: "Basic", authorization: "Basic x", wantCode: CodeInvalidAuthScheme},
		{name: "Basic with the key", authorization: "Basic " + key, wantCode: CodeInvalidAuthScheme},
		{name: "Token scheme", authorization: "Token " + key, wantCode: CodeInvalidAuthScheme},
		{name: "key without scheme", authorization: key, wantCode: CodeInvalidAuthScheme},
		{name: "scheme glued to the key", authorization: "Bearer" + key, wantCode: CodeInvalidAuthScheme},
		{name: "Bearer without a key", authorization: "Bearer", wantCode: CodeInvalidAPIKey},
		{name: "Bearer and spaces", authorization: "Bearer    ", wantCode: CodeInvalidAPIKey},
		{name: "wrong key", authorization: "Bearer " + randomKey(t), wantCode: CodeInvalidAPIKey},
		{name: "prefix of the key", authorization: "Bearer " + key[:len(key)-1], wantCode: CodeInvalidAPIKey},
		{name: "half of the key", authorization: "Bearer " + key[:len(key)/2], wantCode: CodeInvalidAPIKey},
		{name: "key plus a suffix", authorization: "Bearer " + key + "x", wantCode: CodeInvalidAPIKey},
		{name: "key twice", authorization: "Bearer " + key + " " + key, wantCode: CodeInvalidAPIKey},
		{name: "upper-cased key", authorization: "Bearer " + strings.ToUpper(key), wantCode: CodeInvalidAPIKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := admitted.Load()
			r := authDo(t, srv.URL, tt.authorization, key, strings.TrimPrefix(tt.authorization, "Bearer "))
			ran := admitted.Load() - before
			if tt.wantCode == "" {
				if r.status != http.StatusOK || ran != 1 {
					t.Fatalf("status = %d, handler ran %d times; want 200 and once: %s", r.status, ran, r.body)
				}
				return
			}
			if ran != 0 {
				t.Errorf("handler ran for a refused request")
			}
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401: %s", r.status, r.body)
			}
			env := envelope(t, r)
			if env.Details.Message != tt.wantCode {
				t.Errorf("details.message = %q, want %q", env.Details.Message, tt.wantCode)
			}
			if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
			}
		})
	}
}

func TestRequireBearerRotation(t *testing.T) {
	k := NewAPIKey("ltiop-api-key", "apiKey")
	oldKey, newKey := randomKey(t), randomKey(t)
	k.Set(oldKey)
	srv, _ := bearerServer(t, k)

	if r := authDo(t, srv.URL, "Bearer "+oldKey, oldKey, newKey); r.status != http.StatusOK {
		t.Fatalf("old key before rotation: %d %s", r.status, r.body)
	}
	k.Set(newKey)
	r := authDo(t, srv.URL, "Bearer "+oldKey, oldKey, newKey)
	if r.status != http.StatusUnauthorized || envelope(t, r).Details.Message != CodeInvalidAPIKey {
		t.Errorf("old key after rotation: %d %s", r.status, r.body)
	}
	if r := authDo(t, srv.URL, "Bearer "+newKey, oldKey, newKey); r.status != http.StatusOK {
		t.Errorf("new key after rotation: %d %s", r.status, r.body)
	}
}

// TestRequireBearerConcurrentRotation lets the race detector watch Set against requests.
func TestRequireBearerConcurrentRotation(t *testing.T) {
	k := NewAPIKey("ltiop-api-key", "apiKey")
	keyA, keyB := randomKey(t), randomKey(t)
	k.Set(keyA)
	srv, _ := bearerServer(t, k)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				k.Set(keyB)
			} else {
				k.Set(keyA)
			}
		}
	}()
	for i := range 50 {
		key := keyA
		if i%2 == 1 {
			key = keyB
		}
		r := authDo(t, srv.URL, "Bearer "+key, keyA, keyB)
		if r.status != http.StatusOK && r.status != http.StatusUnauthorized {
			t.Errorf("status = %d during rotation: %s", r.status, r.body)
		}
	}
	close(stop)
	wg.Wait()
	k.Set(keyA)
	if r := authDo(t, srv.URL, "Bearer "+keyA, keyA, keyB); r.status != http.StatusOK {
		t.Errorf("after rotation settled on key A: %d %s", r.status, r.body)
	}
}
