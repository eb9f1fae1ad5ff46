package outbound

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCheck(t *testing.T) {
	prod := Policy{}
	dev := Policy{AllowHTTP: true, AllowLoopback: true}
	onPrem := Policy{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}

	tests := []struct {
		name   string
		policy Policy
		url    string
		want   string // "" accepted, else a substring of the Reason
	}{
		{"https", prod, "https://lms.example.com/.well-known/openid-configuration", ""},
		{"https with port and query", prod, "https://lms.example.com:8443/mod/lti/openid-configuration.php?id=3", ""},
		{"https public IP", prod, "https://93.184.215.14/x", ""},
		{"https public IPv6", prod, "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/x", ""},
		{"scheme case", prod, "HTTPS://lms.example.com/", ""},
		{"http refused", prod, "http://lms.example.com/", "https required"},
		{"http dev", dev, "http://lms.example.com/", ""},
		{"http dev loopback", dev, "http://127.0.0.1:8080/", ""},
		{"ftp", dev, "ftp://lms.example.com/", "unsupported scheme"},
		{"file", dev, "file:///etc/passwd", "unsupported scheme"},
		{"javascript", prod, "javascript:alert(1)", "unsupported scheme"},
		{"gopher", prod, "gopher://127.0.0.1:6379/_INFO", "unsupported scheme"},
		{"relative", prod, "/openid-configuration", "not an absolute URL"},
		{"scheme-relative", prod, "//lms.example.com/x", "not an absolute URL"},
		{"empty", prod, "", "not an absolute URL"},
		{"opaque", prod, "https:lms.example.com", "not a hierarchical URL"},
		{"userinfo", prod, "https://user:pass@lms.example.com/", "user information"},
		{"userinfo user only", prod, "https://user@lms.example.com/", "user information"},
		{"no host", prod, "https:///path", "no host"},
		{"port only", prod, "https://:443/path", "no host"},
		{"bad port", prod, "https://lms.example.com:0/", "invalid port"},
		{"port too large", prod, "https://lms.example.com:70000/", "invalid port"},
		{"unparsable", prod, "https://lms.example.com/%zz", "not a valid URL"},
		{"control character", prod, "https://lms.example.com/\x00", "not a valid URL"},
		{"loopback literal", prod, "https://127.0.0.1/", "blocked address 127.0.0.1 (loopback)"},
		{"loopback v6 literal", prod, "https://[::1]/", "loopback"},
		{"mapped loopback literal", prod, "https://[::ffff:127.0.0.1]/", "loopback"},
		{"private literal", prod, "https://10.0.0.5/", "blocked address 10.0.0.5 (private)"},
		{"private literal allowed", onPrem, "https://10.0.0.5/", ""},
		{"metadata literal", onPrem, "https://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"link-local zone literal", prod, "https://[fe80::1%25eth0]/", "link-local"},
		{"unspecified literal", dev, "http://0.0.0.0:8080/", "unspecified"},
		{"host name not resolved here", prod, "https://localhost/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Check(tt.url)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Check(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check(%q) = %v (%T), want *Error", tt.url, err, err)
			}
			if !strings.Contains(e.Reason, tt.want) {
				t.Errorf("Check(%q) reason %q, want it to contain %q", tt.url, e.Reason, tt.want)
			}
		})
	}
}

func TestErrorHidesSecrets(t *testing.T) {
	err := Policy{}.Check("http://admin:hunter2@lms.example.com/cfg?registration_token=s3cret#frag")
	msg := err.Error()
	for _, secret := range []string{"hunter2", "admin", "s3cret", "registration_token", "frag"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q contains %q", msg, secret)
		}
	}
	if !strings.Contains(msg, "lms.example.com/cfg") {
		t.Errorf("error %q does not name the URL", msg)
	}
	// An Error built with a raw URL is redacted too.
	e := &Error{URL: "https://lms.example.com/x?token=s3cret", Reason: "test"}
	if strings.Contains(e.Error(), "s3cret") {
		t.Errorf("Error() = %q", e.Error())
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://lms.example.com/a/b?x=1#f", "https://lms.example.com/a/b"},
		{"https://u:p@lms.example.com/a", "https://lms.example.com/a"},
		{"https://lms.example.com/a?", "https://lms.example.com/a"},
		{"https://u:p@lms.example.com/%zz?token=1", "https://lms.example.com/%zz"}, // unparsable
		{"https://lms.example.com/" + strings.Repeat("a", 300), "https://lms.example.com/" + strings.Repeat("a", 200-len("https://lms.example.com/")) + "…"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "https://lms.example.com/x?token=s3cret", Err: io.ErrUnexpectedEOF}
	for _, err := range []error{ue, fmt.Errorf("fetching: %w", ue)} {
		got := Redact(err)
		if strings.Contains(got.Error(), "s3cret") || !strings.Contains(got.Error(), "lms.example.com/x") {
			t.Errorf("Redact(%v) = %v", err, got)
		}
		if !errors.Is(got, io.ErrUnexpectedEOF) {
			t.Errorf("Redact(%v) lost the cause", err)
		}
	}
	if Redact(nil) != nil {
		t.Error("Redact(nil) != nil")
	}
	if Redact(io.EOF) != io.EOF { //nolint:errorlint // identity on purpose: Redact must return the very same error
		t.Error("Redact changed an error without URL")
	}
}

func TestReadLimited(t *testing.T) {
	tests := []struct {
		body    string
		max     int64
		tooLong bool
	}{
		{"", 0, false},
		{"", 10, false},
		{"hello", 5, false},
		{"hello", 6, false},
		{"hello", 4, true},
		{"x", 0, true},
		{"x", -1, true},
		{strings.Repeat("a", 1<<20), 1 << 20, false},
		{strings.Repeat("a", 1<<20+1), 1 << 20, true},
		{"hello", 1<<63 - 1, false},
	}
	for _, tt := range tests {
		b, err := ReadLimited(strings.NewReader(tt.body), tt.max)
		if tt.tooLong {
			if !errors.Is(err, ErrTooLarge) || b != nil {
				t.Errorf("ReadLimited(%d bytes, %d) = %d bytes, %v; want ErrTooLarge", len(tt.body), tt.max, len(b), err)
			}
			continue
		}
		if err != nil || string(b) != tt.body {
			t.Errorf("ReadLimited(%d bytes, %d) = %d bytes, %v", len(tt.body), tt.max, len(b), err)
		}
	}

	// A read error is returned as it is.
	if _, err := ReadLimited(iotest.ErrReader(io.ErrUnexpectedEOF), 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error: got %v", err)
	}
	// Only max+1 bytes are consumed from an endless reader.
	if _, err := ReadLimited(endless{}, 1000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("endless reader: got %v", err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
