package httpapi_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// ParseForm answers exactly what r.ParseForm answers: values, the query merged into Form,
// and errors, for every body shape, including the ones it hands over to r.ParseForm.
func TestParseFormMatchesNetHTTP(t *testing.T) {
	long := "id_token=" + strings.Repeat("a", 70<<10) + "&state=s"
	cases := []struct {
		name, target, contentType, body string
		chunked                         bool
	}{
		{"launch", "/lti/launch", "application/x-www-form-urlencoded", "id_token=eyJ.a.b&state=xyz", false},
		{"escapes and repeats", "/lti/launch?q=1&state=query", "application/x-www-form-urlencoded; charset=utf-8", "a=%20b+c&a=2&state=body", false},
		{"bad escape", "/lti/launch", "application/x-www-form-urlencoded", "id_token=%zz&state=s", false},
		{"semicolon", "/lti/launch", "application/x-www-form-urlencoded", "a=1;b=2&c=3", false},
		{"chunked", "/lti/launch", "application/x-www-form-urlencoded", "id_token=t&state=s", true},
		{"larger than the presized bound", "/lti/launch", "application/x-www-form-urlencoded", long, false},
		{"not urlencoded", "/lti/launch?x=1", "application/json", `{"a":1}`, false},
		{"upper-case media type", "/lti/launch", "Application/X-WWW-Form-Urlencoded", "a=1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mk := func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, c.target, strings.NewReader(c.body))
				r.Header.Set("Content-Type", c.contentType)
				if c.chunked {
					r.ContentLength = -1
				}
				return r
			}
			want, got := mk(), mk()
			werr, gerr := want.ParseForm(), httpapi.ParseForm(got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("error %v, net/http says %v", gerr, werr)
			}
			if !reflect.DeepEqual(got.PostForm, want.PostForm) || !reflect.DeepEqual(got.Form, want.Form) {
				t.Fatalf("PostForm %v Form %v, net/http says %v %v", got.PostForm, got.Form, want.PostForm, want.Form)
			}
		})
	}
}

// A body cut short of its announced length is an error, not a half-read form.
func TestParseFormShortBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/lti/launch", io.LimitReader(strings.NewReader("id_token=abcdef&state=s"), 10))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.ContentLength = 23
	if err := httpapi.ParseForm(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short body: %v", err)
	}
}
