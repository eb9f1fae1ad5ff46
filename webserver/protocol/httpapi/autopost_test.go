package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAutoPostFormExact pins the fragment byte for byte: integrators and tools see it
// (openapi.json shows it), and the id is how they submit it when a CSP blocks the script.
func TestAutoPostFormExact(t *testing.T) {
	fields := []Field{{Name: "id_token", Value: `a.b"<c>&`}, {Name: "state", Value: "st-1"}}
	const tail = `<input type="hidden" name="id_token" value="a.b&#34;&lt;c&gt;&amp;">` +
		`<input type="hidden" name="state" value="st-1">` +
		`<noscript><button type="submit">Continue</button></noscript></form>`
	for _, tc := range []struct {
		name string
		form func() (string, error)
		want string
	}{
		{"AutoPostForm", func() (string, error) { return AutoPostForm("https://tool.example/launch?a=1&b=2", fields) },
			`<form id="ltiop-autopost" action="https://tool.example/launch?a=1&amp;b=2" method="post">` + tail +
				`<script>document.getElementById('ltiop-autopost').submit()</script>`},
		{"NewAutoPost", func() (string, error) {
			return NewAutoPost("ltiop-deep-linking-response").Form("https://tool.example/launch?a=1&b=2", fields)
		},
			`<form id="ltiop-deep-linking-response" action="https://tool.example/launch?a=1&amp;b=2" method="post">` + tail +
				`<script>document.getElementById('ltiop-deep-linking-response').submit()</script>`},
		{"NewAutoPostWithAlias", func() (string, error) {
			return NewAutoPostWithAlias("ltiop-deep-linking-response", "ltiaas_dl").Form("https://tool.example/launch?a=1&b=2", fields)
		},
			`<form id="ltiop-deep-linking-response" action="https://tool.example/launch?a=1&amp;b=2" method="post">` + tail +
				`<script>document.getElementById('ltiop-deep-linking-response').submit()</script>` +
				`<form id="ltiaas_dl" action="https://tool.example/launch?a=1&amp;b=2" method="post" hidden>` +
				`<input type="hidden" name="id_token" value="a.b&#34;&lt;c&gt;&amp;"><input type="hidden" name="state" value="st-1"></form>`},
	} {
		got, err := tc.form()
		if err != nil || got != tc.want {
			t.Errorf("%s = %v\n%s\nwant\n%s", tc.name, err, got, tc.want)
		}
	}
	for _, bad := range []string{"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
		"//lms.example/x", "/x", "", "https://", "ftp://lms.example/x"} {
		if form, err := AutoPostForm(bad, fields); err == nil {
			t.Errorf("action %q accepted: %s", bad, form)
		}
	}
}

func TestWriteAutoPostPage(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := WriteAutoPostPage(rec, http.StatusOK, "https://tool.example/launch", []Field{{Name: "state", Value: "s"}}); err != nil {
		t.Fatal(err)
	}
	body, csp := rec.Body.String(), rec.Header().Get("Content-Security-Policy")
	_, nonce, _ := strings.Cut(csp, "'nonce-")
	nonce, _, _ = strings.Cut(nonce, "'")
	want := "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Continuing…</title></head>\n<body>" +
		`<form id="ltiop-autopost" action="https://tool.example/launch" method="post"><input type="hidden" name="state" value="s">` +
		`<noscript><button type="submit">Continue</button></noscript></form>` +
		`<script nonce="` + nonce + `">document.getElementById('ltiop-autopost').submit()</script></body></html>` + "\n"
	if nonce == "" || body != want {
		t.Errorf("page (CSP %q)\n%s\nwant\n%s", csp, body, want)
	}
	if !strings.Contains(csp, "form-action https://tool.example;") {
		t.Errorf("CSP %q", csp)
	}
}

func TestNewAutoPostRefusesAnIDThatNeedsEscaping(t *testing.T) {
	for _, id := range []string{"", "a b", `x"y`, "x')+alert(1)+('"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewAutoPost(%q) did not panic", id)
				}
			}()
			NewAutoPost(id)
		}()
	}
}

func TestNewAutoPostWithAliasRefusesABadAlias(t *testing.T) {
	for _, alias := range []string{"", "a b", `x"y`, "x')+alert(1)+('", "ltiop-form"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewAutoPostWithAlias(ltiop-form, %q) did not panic", alias)
				}
			}()
			NewAutoPostWithAlias("ltiop-form", alias)
		}()
	}
}
