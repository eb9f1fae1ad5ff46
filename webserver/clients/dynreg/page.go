package dynreg

import (
	"html/template"
	"strings"
)

// CloseSubject is the postMessage subject that tells the LMS the registration is over.
const CloseSubject = "org.imsglobal.lti.close"

var closingPage = template.Must(template.New("close").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Registration</title>
</head>
<body>
<p>{{.Message}}</p>
<script{{with .Nonce}} nonce="{{.}}"{{end}}>
(window.opener || window.parent).postMessage({subject: 'org.imsglobal.lti.close'}, '*');
</script>
</body>
</html>
`))

// ClosingPage is the HTML page that ends the registration in the LMS's iframe or popup
// (T-DR-07): it shows message (escaped) and runs an inline script posting
// {subject: 'org.imsglobal.lti.close'} to window.opener, or else window.parent. The script
// carries scriptNonce (when not empty) for a Content-Security-Policy
// "script-src 'nonce-<scriptNonce>'"; serve the page with Content-Type text/html and
// Cache-Control no-store, and without a frame-ancestors restriction that excludes the LMS.
func ClosingPage(message, scriptNonce string) (string, error) {
	var b strings.Builder
	err := closingPage.Execute(&b, struct{ Message, Nonce string }{message, scriptNonce})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}
