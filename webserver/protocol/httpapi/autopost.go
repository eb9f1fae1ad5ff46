package httpapi

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Field is one hidden input of an auto-submitting form.
type Field struct{ Name, Value string }

// AutoPost makes auto-submitting forms whose element id is fixed when the AutoPost is
// made: the id is part of the template, not escaped again on every form.
type AutoPost struct{ tmpl *template.Template }

// NewAutoPost returns an AutoPost for forms with element id id (ASCII letters, digits,
// '-' and '_'), for a form whose id is documented: integrators whose
// Content-Security-Policy blocks the inline script submit it by that id.
func NewAutoPost(id string) *AutoPost {
	return &AutoPost{tmpl: template.Must(template.New(id).Parse(autoPostSource(id)))}
}

// autoPostSource is the template of an auto-submitting form with element id id.
func autoPostSource(id string) string {
	if id == "" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		panic("httpapi: auto-post form id " + strconv.Quote(id) + " is not a plain name")
	}
	return `<form id="` + id + `" action="{{.Action}}" method="post">` +
		`{{range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}` +
		`<noscript><button type="submit">Continue</button></noscript>` +
		`</form>` +
		`<script{{if .Nonce}} nonce="{{.Nonce}}"{{end}}>document.getElementById('` + id + `').submit()</script>`
}

// NewAutoPostWithAlias is NewAutoPost whose fragment also carries a hidden copy of the
// form under the element id alias, after the script: scripts written for another service
// that submit the form by that service's id keep working. Only the first form is
// submitted by the inline script.
func NewAutoPostWithAlias(id, alias string) *AutoPost {
	src := autoPostSource(id)
	_ = autoPostSource(alias) // panics unless alias is a plain name too
	if alias == id {
		panic("httpapi: auto-post form alias " + strconv.Quote(alias) + " is its id")
	}
	src += `<form id="` + alias + `" action="{{.Action}}" method="post" hidden>` +
		`{{range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}</form>`
	return &AutoPost{tmpl: template.Must(template.New(id).Parse(src))}
}

// defaultAutoPost makes the forms of AutoPostForm and WriteAutoPostPage.
var defaultAutoPost = NewAutoPost("ltiop-autopost")

var autoPostPage = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Continuing…</title></head>
<body>{{.}}</body></html>
`))

// AutoPostForm returns an HTML fragment: a form that POSTs fields to action, submitted by
// an inline script (a button inside <noscript> otherwise). html/template escapes every
// value; action must be an absolute http(s) URL (never javascript:).
func AutoPostForm(action string, fields []Field) (string, error) {
	return defaultAutoPost.form(action, fields, "")
}

// Form is AutoPostForm with a's element id.
func (a *AutoPost) Form(action string, fields []Field) (string, error) {
	return a.form(action, fields, "")
}

func (a *AutoPost) form(action string, fields []Field, nonce string) (string, error) {
	u, err := url.Parse(action)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("httpapi: auto-post form: the action must be an absolute http(s) URL")
	}
	var b strings.Builder
	n := len(action) + len(nonce) + 250 // the markup around them
	for _, f := range fields {
		n += len(f.Name) + len(f.Value) + 40
	}
	b.Grow(n) // values (a JWT of a few KB) rarely need escaping: one allocation
	err = a.tmpl.Execute(&b, struct {
		Action string
		Fields []Field
		Nonce  string
	}{action, fields, nonce})
	return b.String(), err
}

// WriteAutoPostPage answers with a whole page that POSTs fields to action at once (an
// OIDC form_post response). Only the page's own script runs, and the form may only go to
// action's origin.
func WriteAutoPostPage(w http.ResponseWriter, status int, action string, fields []Field) error {
	nonce := RandomToken(16)
	form, err := defaultAutoPost.form(action, fields, nonce)
	if err != nil {
		return err
	}
	u, _ := url.Parse(action)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; form-action "+u.Scheme+"://"+u.Host+"; base-uri 'none'")
	w.WriteHeader(status)
	return autoPostPage.Execute(w, template.HTML(form)) // #nosec: form was built by html/template
}
