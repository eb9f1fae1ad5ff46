package onboarding

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"

	"github.com/ltiop/ltiop/webserver/clients/dynreg"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// fail answers the LMS's registration frame: JSON when asked for, else a small page.
func (o *Onboarding) fail(w http.ResponseWriter, r *http.Request, e *httpapi.Error) {
	httpapi.WriteErrorPage(w, r, e, "ltiop could not be registered")
}

// closingPage ends the registration in the LMS's frame (T-DR-07).
func (o *Onboarding) closingPage(w http.ResponseWriter, message string) {
	nonceBytes := make([]byte, 16)
	_, _ = rand.Read(nonceBytes)
	nonce := base64.RawURLEncoding.EncodeToString(nonceBytes)
	page, err := dynreg.ClosingPage(message, nonce)
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The closing page could not be built."))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer") // the registration URL may carry the token
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-"+nonce+"'")
	_, _ = w.Write([]byte(page)) //nolint:gosec // G705: the page is built by html/template (dynreg.ClosingPage)
}
