package lmssim

import (
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ltiop/ltiop/internal/oauth1"
	"github.com/ltiop/ltiop/internal/pox"
)

// LTI 1.1: after EnableLTI11 the platform also launches over LTI 1.1 (Launch11, and
// GET Start11Path in a browser), serves Basic Outcomes at OutcomesPath (OAuth 1.0a and
// oauth_body_hash checked, nonces used once), and adds the lti1p1 migration claim, signed
// with oauth_consumer_key_sign, to its 1.3 launches.

// Paths of the LTI 1.1 endpoints.
const (
	OutcomesPath = "/outcomes"
	Start11Path  = "/start11"
)

// maxLTI11Nonces bounds the nonces the outcomes endpoint remembers.
const maxLTI11Nonces = 100_000

type lti11State struct {
	consumerKey, secret string
	nonces              map[string]time.Time
	outcomes            map[string]string // sourcedid -> score as sent
	requests            int
}

// EnableLTI11 gives the platform LTI 1.1 credentials.
func (l *LMS) EnableLTI11(consumerKey, secret string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l11 = &lti11State{consumerKey: consumerKey, secret: secret, nonces: map[string]time.Time{}, outcomes: map[string]string{}}
}

func (l *LMS) lti11Creds() (key, secret string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.l11 == nil {
		return "", "", false
	}
	return l.l11.consumerKey, l.l11.secret, true
}

// SourcedID is the lis_result_sourcedid of user's result on the simulator's one resource link.
func SourcedID(user string) string { return "resource-link-1:" + user }

// Launch11 returns the form of an LTI 1.1 basic launch of user to launchURL, signed with
// HMAC-SHA1 now. extra parameters are added (or replace defaults) before signing.
func (l *LMS) Launch11(launchURL, user string, extra url.Values) url.Values {
	key, secret, _ := l.lti11Creds()
	form := url.Values{
		"lti_message_type": {"basic-lti-launch-request"}, "lti_version": {"LTI-1p0"},
		"resource_link_id": {"resource-link-1"}, "resource_link_title": {"Week 1 quiz"},
		"user_id": {user}, "roles": {"Instructor,urn:lti:instrole:ims/lis/Faculty"},
		"lis_person_name_full": {"Ada Lovelace"}, "lis_person_name_given": {"Ada"}, "lis_person_name_family": {"Lovelace"},
		"lis_person_contact_email_primary": {"ada@example.edu"},
		"context_id":                       {"course-42"}, "context_label": {"CS101"}, "context_title": {"Introduction to Programming"},
		"context_type":                        {"CourseOffering"},
		"launch_presentation_document_target": {"iframe"}, "launch_presentation_locale": {"en"},
		"launch_presentation_return_url":         {l.Issuer + "/return"},
		"tool_consumer_info_product_family_code": {"lmssim"}, "tool_consumer_instance_guid": {"lmssim-" + l.ClientID},
		"custom_chapter":          {"1"},
		"lis_outcome_service_url": {l.Issuer + OutcomesPath}, "lis_result_sourcedid": {SourcedID(user)},
	}
	for k, v := range extra {
		form[k] = v
	}
	ps := oauth1.Params{}.FromValues(form)
	oauth, _ := oauth1.Sign(http.MethodPost, launchURL, ps, key, secret, oauth1.MethodHMACSHA1, randomHex(12),
		strconv.FormatInt(time.Now().Unix(), 10), "")
	for _, p := range oauth {
		form.Set(p.Name, p.Value)
	}
	return form
}

// Outcome returns the score the tool last sent for sourcedID, as sent.
func (l *LMS) Outcome(sourcedID string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.l11 == nil {
		return "", false
	}
	s, ok := l.l11.outcomes[sourcedID]
	return s, ok
}

func (l *LMS) lti11Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+OutcomesPath, l.outcomes)
	mux.HandleFunc("GET "+Start11Path, l.start11)
}

// start11 answers a browser with an auto-submitting LTI 1.1 launch to the tool's launch URL.
func (l *LMS) start11(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := l.lti11Creds(); !ok {
		http.NotFound(w, r)
		return
	}
	user := r.URL.Query().Get("user")
	if user == "" {
		user = defaultSub
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = autoSubmit11.Execute(w, map[string]any{"Action": l.ToolRedirectURI, "Form": l.Launch11(l.ToolRedirectURI, user, nil)})
}

var autoSubmit11 = template.Must(template.New("form11").Parse(`<!doctype html>
<html><body onload="document.forms[0].submit()">
<form method="post" action="{{.Action}}">
{{range $k, $vs := .Form}}{{range $vs}}<input type="hidden" name="{{$k}}" value="{{.}}">
{{end}}{{end}}<noscript><button type="submit">Continue</button></noscript>
</form></body></html>`))

// outcomes is the Basic Outcomes service: a POX request signed with OAuth 1.0a in the
// Authorization header, with oauth_body_hash. Refusals are POX failures, as LMSs answer.
func (l *LMS) outcomes(w http.ResponseWriter, r *http.Request) {
	key, secret, ok := l.lti11Creds()
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	info, perr := pox.ParseRequest(body)
	op, msgID := "unknown", ""
	if perr == nil {
		op, msgID = info.Op, info.MessageID
	}
	fail := func(status int, description string) {
		w.Header().Set("Content-Type", pox.ContentType)
		w.WriteHeader(status)
		_, _ = w.Write(pox.ResponseBody(op, "lmssim-"+randomHex(4), msgID, "failure", description, "")) //nolint:gosec // G705: XML with every value escaped, served as application/xml
	}
	oauth, ok := oauth1.ParseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		fail(http.StatusUnauthorized, "OAuth Authorization header required")
		return
	}
	ps := oauth.FromValues(r.URL.Query())
	if e := oauth1.Missing(ps); len(e) > 0 {
		fail(http.StatusUnauthorized, "missing OAuth parameters: "+strings.Join(e, ", "))
		return
	}
	if ps.Get("oauth_consumer_key") != key {
		fail(http.StatusUnauthorized, "unknown oauth_consumer_key")
		return
	}
	signedURL := l.Issuer + OutcomesPath
	if r.URL.RawQuery != "" {
		signedURL += "?" + r.URL.RawQuery
	}
	now := time.Now()
	if e := oauth1.Check(oauth1.Request{Method: r.Method, URL: signedURL, Params: ps, Body: body, BodyHashed: true}, secret, now); e != nil {
		fail(http.StatusUnauthorized, e.Error())
		return
	}
	if perr != nil {
		fail(http.StatusBadRequest, "not an imsx_POXEnvelopeRequest")
		return
	}
	l.mu.Lock()
	st := l.l11
	st.requests++
	nonce := oauth1.NonceKey(ps)
	_, seen := st.nonces[nonce]
	if !seen {
		if len(st.nonces) >= maxLTI11Nonces {
			for k, at := range st.nonces {
				if now.Sub(at) > oauth1.NonceTTL {
					delete(st.nonces, k)
				}
			}
		}
		st.nonces[nonce] = now
	}
	l.mu.Unlock()
	if seen {
		fail(http.StatusUnauthorized, "oauth_nonce already used")
		return
	}
	if !strings.HasPrefix(info.SourcedID, "resource-link-1:") {
		fail(http.StatusOK, "unknown lis_result_sourcedid")
		return
	}
	score := ""
	l.mu.Lock()
	switch info.Op {
	case pox.OpReplace:
		v, err := strconv.ParseFloat(info.Score, 64)
		if err != nil || !pox.ValidScore(v) {
			l.mu.Unlock()
			fail(http.StatusOK, "the score must be a decimal from 0.0 to 1.0")
			return
		}
		st.outcomes[info.SourcedID] = info.Score
	case pox.OpRead:
		score = st.outcomes[info.SourcedID]
	case pox.OpDelete:
		delete(st.outcomes, info.SourcedID)
	default:
		l.mu.Unlock()
		w.Header().Set("Content-Type", pox.ContentType)
		_, _ = w.Write(pox.ResponseBody(op, "lmssim-"+randomHex(4), msgID, "unsupported", op+" is not supported", ""))
		return
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", pox.ContentType)
	_, _ = w.Write(pox.ResponseBody(info.Op, "lmssim-"+randomHex(4), msgID, "success", info.Op+" done", score))
}

// addLTI1p1 gives a 1.3 launch the lti1p1 migration claim, with oauth_consumer_key_sign
// computed over the final claims, when the platform has 1.1 credentials and the claims
// carry none already (a test may forge its own).
func (l *LMS) addLTI1p1(claims map[string]any) {
	key, secret, ok := l.lti11Creds()
	if !ok {
		return
	}
	if _, has := claims[claimLTI1p1]; has {
		return
	}
	str := func(k string) string { s, _ := claims[k].(string); return s }
	var exp int64
	switch v := claims["exp"].(type) {
	case int64:
		exp = v
	case float64:
		exp = int64(v)
	case int:
		exp = int64(v)
	}
	aud := str("aud")
	if aud == "" {
		aud = l.ClientID
	}
	sub := str("sub")
	claims[claimLTI1p1] = map[string]any{
		"user_id": "legacy-" + sub, "oauth_consumer_key": key, "resource_link_id": "resource-link-1", "context_id": "course-42",
		"oauth_consumer_key_sign": oauth1.ConsumerKeySign(key, str("https://purl.imsglobal.org/spec/lti/claim/deployment_id"),
			str("iss"), aud, exp, str("nonce"), secret),
	}
}

const claimLTI1p1 = "https://purl.imsglobal.org/spec/lti/claim/lti1p1"
