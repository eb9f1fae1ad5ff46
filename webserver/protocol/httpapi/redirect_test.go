package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRedirect(t *testing.T) {
	location := "https://lms.example.edu/auth?state=" + strings.Repeat("a", 2000) + "&nonce=n%20x"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Redirect(w, location, http.StatusFound)
	}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != location || len(body) != 0 {
		t.Errorf("got %d, Location %q, body %q", res.StatusCode, res.Header.Get("Location"), body)
	}
}

// BenchmarkRedirect against BenchmarkHTTPRedirect: a login's redirect to the platform.
func BenchmarkRedirect(b *testing.B) {
	benchRedirect(b, func(w http.ResponseWriter, r *http.Request, u string) { Redirect(w, u, 302) })
}

func BenchmarkHTTPRedirect(b *testing.B) {
	benchRedirect(b, func(w http.ResponseWriter, r *http.Request, u string) { http.Redirect(w, r, u, http.StatusFound) })
}

func benchRedirect(b *testing.B, redirect func(http.ResponseWriter, *http.Request, string)) {
	u := "https://lms.example.edu/auth?client_id=c&state=" + strings.Repeat("x", 600) + "&nonce=" + strings.Repeat("n", 22)
	r := httptest.NewRequest("GET", "/lti/login", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		redirect(w, r, u)
	}
}
