package webserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/internal/logging"
	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// logs receives every log line of this package's tests, at debug level, in JSON.
var logs syncBuffer

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// requestLines are the request log lines with requestId id. The line is written once
// the response has gone, so it waits (up to 10s) for one to appear.
func (b *syncBuffer) requestLines(t *testing.T, id string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines := b.linesNow(t, id)
		if len(lines) > 0 || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *syncBuffer) linesNow(t *testing.T, id string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if line["requestId"] == id && line["msg"] == "request" {
			out = append(out, line)
		}
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return out
}

func (b *syncBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Contains(b.buf.String(), s)
}

func TestMain(m *testing.M) {
	logger, err := logging.New("debug", "json", &logs)
	if err != nil {
		panic(err)
	}
	log.SetLogger(logger)
	os.Exit(m.Run())
}

var emptyKeySet = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"keys":[]}`)) })

// startServer serves a server with no real handlers over loopback HTTP.
func startServer(t *testing.T) string {
	t.Helper()
	srv := webserver.New(webserver.Options{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20, ShutdownTimeout: 5e9},
		webserver.Handlers{APIKey: httpapi.NewAPIKey("s", "k"), Keys: emptyKeySet, KeySet: emptyKeySet})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	addr, err := srv.Addr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// get sends a GET with the given headers (name, value pairs; a name may repeat) and
// returns the response's X-Request-Id values.
func get(t *testing.T, url string, header ...string) []string {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.Header.Values("X-Request-Id")
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRequestIDHonouredBoundedEchoedGenerated(t *testing.T) {
	base := startServer(t)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	validTP := "00-" + trace + "-00f067aa0ba902b7-01"
	tests := []struct {
		name   string
		header []string
		want   string // "" means a newly generated id
	}{
		{"none sent: generated", nil, ""},
		{"X-Request-Id honoured", []string{"X-Request-Id", "req-42.abc:DEF/+="}, "req-42.abc:DEF/+="},
		{"128 characters honoured", []string{"X-Request-Id", strings.Repeat("a", 128)}, strings.Repeat("a", 128)},
		{"traceparent: its trace id", []string{"Traceparent", validTP}, trace},
		{"X-Request-Id wins over traceparent", []string{"X-Request-Id", "mine", "Traceparent", validTP}, "mine"},
		{"future traceparent version with more fields", []string{"Traceparent", "cc-" + trace + "-00f067aa0ba902b7-01-extra"}, trace},
		// Hostile or broken values are replaced, never echoed or logged.
		{"129 characters replaced", []string{"X-Request-Id", strings.Repeat("a", 129)}, ""},
		{"5000 characters replaced", []string{"X-Request-Id", strings.Repeat("b", 5000)}, ""},
		{"space replaced", []string{"X-Request-Id", "two words"}, ""},
		{"tab replaced", []string{"X-Request-Id", "a\tb"}, ""},
		{"non-ASCII replaced", []string{"X-Request-Id", "caf\u00e9"}, ""},
		{"obs-text replaced", []string{"X-Request-Id", "a\xff\xfeb"}, ""},
		{"two X-Request-Id replaced", []string{"X-Request-Id", "one", "X-Request-Id", "two"}, ""},
		{"hostile X-Request-Id falls back to traceparent", []string{"X-Request-Id", "a b", "Traceparent", validTP}, trace},
		{"traceparent all-zero trace id", []string{"Traceparent", "00-" + strings.Repeat("0", 32) + "-00f067aa0ba902b7-01"}, ""},
		{"traceparent all-zero parent id", []string{"Traceparent", "00-" + trace + "-0000000000000000-01"}, ""},
		{"traceparent version ff", []string{"Traceparent", "ff-" + trace + "-00f067aa0ba902b7-01"}, ""},
		{"traceparent upper-case hex", []string{"Traceparent", "00-" + strings.ToUpper(trace) + "-00f067aa0ba902b7-01"}, ""},
		{"traceparent version 00 with a tail", []string{"Traceparent", validTP + "-x"}, ""},
		{"traceparent truncated", []string{"Traceparent", validTP[:50]}, ""},
		{"traceparent bad separator", []string{"Traceparent", "00_" + trace + "-00f067aa0ba902b7-01"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids := get(t, base+"/healthz", tc.header...)
			if len(ids) != 1 {
				t.Fatalf("X-Request-Id values in the response: %q, want one", ids)
			}
			got := ids[0]
			switch {
			case tc.want != "" && got != tc.want:
				t.Errorf("X-Request-Id = %q, want %q", got, tc.want)
			case tc.want == "" && !generatedID.MatchString(got):
				t.Errorf("X-Request-Id = %q, want a generated id of 32 hex digits", got)
			}
			if len(logs.requestLines(t, got)) == 0 {
				logs.mu.Lock()
				t.Errorf("no request log line with requestId %q in\n%s", got, logs.buf.String())
				logs.mu.Unlock()
			}
			for i := 1; i < len(tc.header); i += 2 {
				if v := tc.header[i]; got != v && !strings.Contains(v, got) && logs.contains(v) {
					t.Errorf("the refused value %q reached the log", v)
				}
			}
		})
	}
	// Control characters are refused by net/http itself, before ltiop: nothing is echoed
	// or logged.
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: evil\x1b[31m\x00injected\r\nConnection: close\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || strings.Contains(res.Header.Get("X-Request-Id"), "evil") || logs.contains("injected") {
		t.Errorf("control characters: %d, X-Request-Id %q", res.StatusCode, res.Header.Get("X-Request-Id"))
	}

	// Generated ids differ.
	a, b := get(t, base+"/healthz"), get(t, base+"/healthz")
	if a[0] == b[0] {
		t.Errorf("two requests got the same generated id %q", a[0])
	}
}

// At debug level each request is logged with route, status, duration, platform id and
// request id, and never with its query string or Authorization header (they carry tokens).
func TestRequestLogLine(t *testing.T) {
	base := startServer(t)
	const secret = "ltik-SECRET-never-logged"
	get(t, base+"/lti/keys?ltik="+secret, "X-Request-Id", "log-line-1", "Authorization", "LTIK-AUTH-V2 key:"+secret)
	lines := logs.requestLines(t, "log-line-1")
	if len(lines) != 1 {
		t.Fatalf("request log lines: %v", lines)
	}
	l := lines[0]
	if l["route"] != "GET /lti/keys" || l["status"] != float64(200) || l["path"] != "/lti/keys" || l["method"] != "GET" {
		t.Errorf("line = %v", l)
	}
	if d, _ := l["duration"].(string); d == "" {
		t.Errorf("no duration in %v", l)
	}
	if logs.contains(secret) {
		t.Error("a token from the query string or the Authorization header reached the log")
	}

	// A platform route names its platform, even when the request is refused before the
	// handler (here: no API key is loaded).
	get(t, base+"/api/platforms/canvas-prod", "X-Request-Id", "log-line-2", "Authorization", "Bearer "+secret)
	lines = logs.requestLines(t, "log-line-2")
	if len(lines) != 1 || lines[0]["platformId"] != "canvas-prod" || lines[0]["route"] != "GET /api/platforms/{id}" {
		t.Errorf("platform request line = %v, want platformId canvas-prod", lines)
	}
	get(t, base+"/oauth/start/moodle-1", "X-Request-Id", "log-line-3")
	if lines = logs.requestLines(t, "log-line-3"); len(lines) != 1 || lines[0]["platformId"] != "moodle-1" {
		t.Errorf("oauth start line = %v, want platformId moodle-1", lines)
	}
	get(t, base+"/no/such/path", "X-Request-Id", "log-line-4")
	if lines = logs.requestLines(t, "log-line-4"); len(lines) != 1 || lines[0]["route"] != "unmatched" || lines[0]["status"] != float64(404) {
		t.Errorf("unmatched line = %v", lines)
	}
	if logs.contains(secret) {
		t.Error("the Bearer token reached the log")
	}
}
