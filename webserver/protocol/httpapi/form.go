package httpapi

import (
	"io"
	"net/http"
	"net/url"
	"strings"
)

// presizedFormMax bounds the bodies ParseForm reads into one buffer of the announced size;
// larger ones go through r.ParseForm, which reads only as much as arrives.
const presizedFormMax = 64 << 10

// ParseForm is r.ParseForm for the urlencoded forms an LMS posts (a launch carries a
// 2–8 KB id_token): a body whose length is announced is read into one buffer of that size,
// where r.ParseForm's io.ReadAll grows and copies five. The result is the same: r.PostForm
// holds the body's values, r.Form those and the URL query's. Other bodies (chunked,
// another content type, larger) go to r.ParseForm unchanged.
func ParseForm(r *http.Request) error {
	if r.PostForm != nil || r.Method != http.MethodPost || r.ContentLength <= 0 ||
		r.ContentLength > presizedFormMax || !urlencoded(r.Header.Get("Content-Type")) {
		return r.ParseForm()
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return err
	}
	vs, err := url.ParseQuery(string(buf))
	r.PostForm = vs
	if ferr := r.ParseForm(); err == nil { // with PostForm set it reads only the URL query
		err = ferr
	}
	return err
}

func urlencoded(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}
