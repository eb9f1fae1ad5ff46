package httpapi

import "net/http"

// Redirect answers code (302 or 303) with Location: location and no body. For absolute
// URLs ltiop built itself (url.URL.String, so ASCII and escaped): http.Redirect would parse
// the URL again and, for a GET, write an HTML copy of it that no browser reads. Login and
// launch URLs carry kilobytes of state and ltik.
func Redirect(w http.ResponseWriter, location string, code int) {
	w.Header().Set("Location", location)
	w.WriteHeader(code)
}
