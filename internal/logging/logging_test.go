package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestCheckAcceptsTheDocumentedValuesOnly(t *testing.T) {
	for _, l := range []string{"debug", "info", "error"} {
		for _, f := range []string{"json", "console"} {
			if err := Check(l, f); err != nil {
				t.Errorf("Check(%q, %q): %v", l, f, err)
			}
		}
	}
	for _, tc := range []struct{ level, format, want string }{
		{"warn", "json", `log level "warn": must be debug, info or error`},
		{"DEBUG", "json", `log level "DEBUG"`},
		{"", "json", `log level ""`},
		{"info", "text", `log format "text": must be json or console`},
		{"info", "", `log format ""`},
	} {
		err := Check(tc.level, tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q, %q) = %v, want an error containing %q", tc.level, tc.format, err, tc.want)
		}
		if _, err := New(tc.level, tc.format, &bytes.Buffer{}); err == nil {
			t.Errorf("New(%q, %q) accepted", tc.level, tc.format)
		}
	}
}

func TestLevelsFilter(t *testing.T) {
	for _, tc := range []struct {
		level             string
		debug, info, fail bool
	}{
		{"debug", true, true, true},
		{"info", false, true, true},
		{"error", false, false, true},
	} {
		var buf bytes.Buffer
		log, err := New(tc.level, "json", &buf)
		if err != nil {
			t.Fatal(err)
		}
		log.V(1).Info("debug line")
		log.Info("info line")
		log.Error(errors.New("boom"), "error line")
		out := buf.String()
		for msg, want := range map[string]bool{"debug line": tc.debug, "info line": tc.info, "error line": tc.fail} {
			if strings.Contains(out, msg) != want {
				t.Errorf("level %s: %q logged = %v, want %v\n%s", tc.level, msg, !want, want, out)
			}
		}
	}
}

func TestFormats(t *testing.T) {
	var buf bytes.Buffer
	log, _ := New("info", "json", &buf)
	log.Info("hello", "requestId", "abc")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("json format wrote %q: %v", buf.String(), err)
	}
	if line["msg"] != "hello" || line["requestId"] != "abc" {
		t.Errorf("json line = %v", line)
	}

	buf.Reset()
	log, _ = New("info", "console", &buf)
	log.Info("hello", "requestId", "abc")
	out := buf.String()
	if json.Valid(bytes.TrimSpace(buf.Bytes())) || !strings.Contains(out, "\thello\t") || !strings.Contains(out, `"requestId": "abc"`) {
		t.Errorf("console line = %q, want tab-separated text", out)
	}
}

// Debug keeps every line (one per request); info samples a repeated message.
func TestSamplingOnlyAboveDebug(t *testing.T) {
	count := func(level string, logIt func(l logr.Logger)) int {
		var buf bytes.Buffer
		l, _ := New(level, "json", &buf)
		for range 500 {
			logIt(l)
		}
		return strings.Count(buf.String(), "\n")
	}
	if n := count("debug", func(l logr.Logger) { l.V(1).Info("request") }); n != 500 {
		t.Errorf("debug kept %d of 500 request lines", n)
	}
	if n := count("info", func(l logr.Logger) { l.Info("launch refused") }); n >= 500 || n < 100 {
		t.Errorf("info kept %d of 500 identical lines, want them sampled (100 a second, then 1 in 100)", n)
	}
}
