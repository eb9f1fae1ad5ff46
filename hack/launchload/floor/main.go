// Command floor is the HTTP floor under hack/launchload's numbers: a server that answers
// the driver's login and launch with responses of the same shape and size as ltiop's
// (a 302 to the LMS with a sealed-state-sized state and a binding cookie; a form POST
// read in full, then a 303 with an ltik-sized token) and does no LTI work at all: no
// sealing, no signature check, no Kubernetes. Its CPU per login + launch is what Go's
// net/http and the loopback TCP stack cost for this traffic, the part of ltiop's figure
// that no change to ltiop's own code can remove. Run it as one of launchload's binaries:
//
//	go build -o /tmp/floor ./hack/launchload/floor
//	go run ./hack/launchload -bin /tmp/ltiop,/tmp/floor -n 3000 -rounds 5
//
// It reads LTIOP_LISTEN and LTIOP_PUBLIC_URL as ltiop does, and nothing else.
package main

import (
	"log"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// The sizes of ltiop's tokens for launchload's claims (BenchmarkSealState, BenchmarkSealLTIK).
const (
	stateBytes = 588
	ltikBytes  = 2475
)

func main() {
	listen := os.Getenv("LTIOP_LISTEN")
	launchURL := os.Getenv("LTIOP_LAUNCH_URL")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /lti/login", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		auth := url.Values{
			"scope": {"openid"}, "response_type": {"id_token"}, "response_mode": {"form_post"},
			"prompt": {"none"}, "client_id": {q.Get("client_id")}, "redirect_uri": {q.Get("target_link_uri")},
			"login_hint": {q.Get("login_hint")}, "lti_message_hint": {q.Get("lti_message_hint")},
			"nonce": {token(22)}, "state": {token(stateBytes)},
		}
		// G124: SameSite=None, as ltiop's binding cookie (the LMS posts the launch cross-site).
		// G710: a measuring tool's redirect to whatever issuer the driver names, on loopback.
		http.SetCookie(w, &http.Cookie{Name: "ltiop_state_" + token(8), Value: token(22), Path: "/lti/", //nolint:gosec // G124: see above
			MaxAge: 600, Secure: true, HttpOnly: true, SameSite: http.SameSiteNoneMode})
		http.Redirect(w, r, q.Get("iss")+"/auth?"+auth.Encode(), http.StatusFound) //nolint:gosec // G710: see above
	})
	mux.HandleFunc("POST /lti/launch", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("id_token") == "" || r.PostForm.Get("state") == "" {
			http.Error(w, "bad launch", http.StatusBadRequest)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "ltiop_state_x", Path: "/lti/", MaxAge: -1}) //nolint:gosec // G124: deletes the cookie
		http.Redirect(w, r, launchURL+"?ltik="+token(ltikBytes), http.StatusSeeOther)
	})
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// token is n characters of base64url, as a sealed token's.
func token(n int) string { return httpapi.RandomToken(n)[:n] }
