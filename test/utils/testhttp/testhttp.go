// Package testhttp is the client side of the handler tests: requests with a JSON body, the
// response read in full, and the checks of ltiop's refusals (the error envelope and the
// HTML error page). It decodes the envelope from its wire format on its own, so a change
// of that format fails the tests.
package testhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NewRequest makes a request for target. A string body is sent as it is, any other non-nil
// body as JSON; a request with a body says Content-Type: application/json. header is pairs
// of name and value, set last (so they may replace the Content-Type).
func NewRequest(tb testing.TB, method, target string, body any, header ...string) *http.Request {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// NoRedirects returns a client that follows no redirect, so that every hop is the test's to
// check, with jar (nil: none) as its cookie jar.
func NoRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Reply is a response read in full.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends req with client and reads the response.
func Do(tb testing.TB, client *http.Client, req *http.Request) Reply {
	tb.Helper()
	res, err := client.Do(req)
	return Read(tb, res, err)
}

// Read reads res, the answer of a client call that returned err, in full.
func Read(tb testing.TB, res *http.Response, err error) Reply {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return Reply{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}

// JSON decodes the body as a JSON object.
func (r Reply) JSON(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		tb.Fatalf("%d %q: %v", r.Status, r.Body, err)
	}
	return m
}

// Location returns the redirect target, failing the test when there is none.
func (r Reply) Location(tb testing.TB) *url.URL {
	tb.Helper()
	u, err := url.Parse(r.Header.Get("Location"))
	if err != nil || r.Header.Get("Location") == "" {
		tb.Fatalf("no Location in %d %s", r.Status, r.Body)
	}
	return u
}

// envelope is ltiop's error body:
// {"status":N,"error":"<status text>","details":{"message":"<CODE>","description":"…"}}.
type envelope struct {
	Status  int    `json:"status"`
	Error   string `json:"error"`
	Details struct {
		Message     string `json:"message"`
		Description string `json:"description"`
		Reason      string `json:"reason"`
	} `json:"details"`
}

func decode(tb testing.TB, r Reply) envelope {
	tb.Helper()
	var env envelope
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil {
		tb.Fatalf("%d, not an error envelope: %s", r.Status, r.Body)
	}
	return env
}

// WantError checks that r is the error envelope with status and code (in the status line
// and the body) and a description, and returns the description. A 401 must also carry
// WWW-Authenticate.
func WantError(tb testing.TB, r Reply, status int, code string) string {
	tb.Helper()
	env := decode(tb, r)
	if r.Status != status || env.Status != status || env.Error != http.StatusText(status) ||
		env.Details.Message != code || env.Details.Description == "" {
		tb.Fatalf("%d %s, want %d %s", r.Status, r.Body, status, code)
	}
	if status == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") == "" {
		tb.Fatalf("401 without WWW-Authenticate: %s", r.Body)
	}
	return env.Details.Description
}

var pageCode = regexp.MustCompile(`Error <code>([A-Z_]+)</code> \(HTTP (\d+)\)`)

// WantRefusal checks a refusal a browser may receive: status, no redirect, and either the
// HTML error page naming code and status, or the error envelope (see WantError). It returns
// the envelope's description, "" for the page.
func WantRefusal(tb testing.TB, r Reply, status int, code string) string {
	tb.Helper()
	if r.Status != status {
		tb.Fatalf("status %d, want %d (%s): %s", r.Status, status, code, r.Body)
	}
	if loc := r.Header.Get("Location"); loc != "" {
		tb.Fatalf("a refusal redirects to %s", loc)
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		m := pageCode.FindStringSubmatch(r.Body)
		if m == nil || m[1] != code || m[2] != strconv.Itoa(status) {
			tb.Fatalf("error page without code %s (HTTP %d): %s", code, status, r.Body)
		}
		return ""
	}
	return WantError(tb, r, status, code)
}

// RefusalCode is the error code of r, read as WantRefusal reads it: from the HTML error
// page or the error envelope; "" when r is neither (a success, or no answer of ltiop's).
func RefusalCode(r Reply) string {
	if m := pageCode.FindStringSubmatch(r.Body); m != nil {
		return m[1]
	}
	var env envelope
	if json.Unmarshal([]byte(r.Body), &env) == nil && env.Status == r.Status {
		return env.Details.Message
	}
	return ""
}

// WantReason checks that r is the error envelope with status and code (see WantError)
// and the more precise code reason in details.reason ("": none).
func WantReason(tb testing.TB, r Reply, status int, code, reason string) {
	tb.Helper()
	WantError(tb, r, status, code)
	if got := decode(tb, r).Details.Reason; got != reason {
		tb.Fatalf("details.reason %q, want %q: %s", got, reason, r.Body)
	}
}

// Description returns details.description of the error envelope r.
func Description(tb testing.TB, r Reply) string {
	tb.Helper()
	return decode(tb, r).Details.Description
}
