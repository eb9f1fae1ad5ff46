package httpapi

import (
	"html/template"
	"net/http"
	"strings"
)

// errorPage is the one HTML error page of the browser-facing endpoints (launches,
// registration, OAuth2). html/template escapes everything: platform error texts end up in
// the description.
var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}
h1{font-size:1.3rem}code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px}
.muted{color:#666;font-size:.9rem}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Description}}</p>
<p class="muted">Error <code>{{.Code}}</code> (HTTP {{.Status}}){{if .RequestID}}, request <code>{{.RequestID}}</code>{{end}}. Give these to your administrator if the problem persists.</p>
</body>
</html>
`))

// WriteErrorPage answers a browser-facing endpoint's failure: the §7 envelope when the
// client asks for JSON, else a small HTML page titled title, with a strict
// Content-Security-Policy (no script, no form).
func WriteErrorPage(w http.ResponseWriter, r *http.Request, e *Error, title string) {
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		WriteError(w, e)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'")
	w.WriteHeader(e.Status)
	_ = errorPage.Execute(w, map[string]any{
		"Title": title, "Status": e.Status, "Code": e.Code, "Description": e.Description,
		"RequestID": h.Get("X-Request-Id"),
	})
}
