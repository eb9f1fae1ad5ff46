package lmssim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Platform Notification Service (LTI PNS 1.0), as Canvas serves it: a notice-handler
// endpoint per deployment (GET the catalog, PUT one handler; an empty handler removes it),
// the platformnotificationservice claim in launches, and signed notices posted in batches
// to the registered handlers. Enabled by EnablePNS, after EnableServices.
const (
	ScopeNoticeHandlers = "https://purl.imsglobal.org/spec/lti/scope/noticehandlers"
	// PNSPath is the notice-handler endpoint; a deployment's is PNSPath+"/"+deployment id.
	PNSPath = "/api/lti/notice-handlers"

	ClaimPNS     = "https://purl.imsglobal.org/spec/lti/claim/platformnotificationservice"
	ClaimNotice  = "https://purl.imsglobal.org/spec/lti/claim/notice"
	claimContext = "https://purl.imsglobal.org/spec/lti/claim/context"

	NoticeHelloWorld               = "LtiHelloWorldNotice"
	NoticeContextCopy              = "LtiContextCopyNotice"
	NoticeAssetProcessorSubmission = "LtiAssetProcessorSubmissionNotice"
)

// NoticeTypes are the notice types the simulator supports (notice_types_supported).
func NoticeTypes() []string {
	return []string{NoticeHelloWorld, NoticeContextCopy, NoticeAssetProcessorSubmission}
}

// NoticeDelivery is one batch the simulator posted to a tool's handler.
type NoticeDelivery struct {
	Handler string
	Types   []string
	Status  int    // 0 when no answer came
	Body    string // the tool's answer, at most 4 KB
	Err     string
}

type pnsState struct {
	mu         sync.Mutex
	handlers   map[string]map[string]string // deployment → notice type → handler URL
	deliveries []NoticeDelivery
	client     *http.Client
}

// EnablePNS makes the simulator offer the Platform Notification Service: its launches carry
// the platformnotificationservice claim, its token endpoint grants the noticehandlers
// scope, and PNSPath serves the deployment's handlers. client posts the notices (nil: a
// client with a 10 s timeout).
func (l *LMS) EnablePNS(client *http.Client) {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pns = &pnsState{handlers: map[string]map[string]string{}, client: client}
}

func (l *LMS) pnsState() *pnsState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pns
}

// defaultScopes are the scopes the token endpoint grants when GrantableScopes is nil.
func (l *LMS) defaultScopes() []string {
	if l.pnsState() == nil {
		return AllScopes()
	}
	return append(AllScopes(), ScopeNoticeHandlers)
}

// PNSURL is the notice-handler endpoint of the simulator's deployment.
func (l *LMS) PNSURL() string { return l.Issuer + PNSPath + "/" + url.PathEscape(l.DeploymentID) }

// addPNSClaim adds the platformnotificationservice claim to launch claims when PNS is on.
func (l *LMS) addPNSClaim(claims map[string]any) {
	if l.pnsState() == nil {
		return
	}
	claims[ClaimPNS] = map[string]any{
		"service_versions": []string{"1.0"}, "platform_notification_service_url": l.PNSURL(),
		"scope": []string{ScopeNoticeHandlers}, "notice_types_supported": NoticeTypes(),
	}
}

func (l *LMS) pnsRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+PNSPath+"/{deployment}", l.getNoticeHandlers)
	mux.HandleFunc("PUT "+PNSPath+"/{deployment}", l.putNoticeHandler)
}

// pnsRequest admits a request to the notice-handler endpoint: PNS on, the simulator's
// deployment, an access token with the noticehandlers scope.
func (l *LMS) pnsRequest(w http.ResponseWriter, r *http.Request) (*pnsState, bool) {
	p := l.pnsState()
	if p == nil || l.state() == nil || r.PathValue("deployment") != l.DeploymentID {
		http.NotFound(w, r)
		return nil, false
	}
	return p, l.bearer(w, r, ScopeNoticeHandlers)
}

type noticeHandler struct {
	NoticeType string `json:"notice_type"`
	Handler    string `json:"handler"`
}

func (l *LMS) getNoticeHandlers(w http.ResponseWriter, r *http.Request) {
	p, ok := l.pnsRequest(w, r)
	if !ok {
		return
	}
	p.mu.Lock()
	list := make([]noticeHandler, 0, len(NoticeTypes()))
	for _, t := range NoticeTypes() {
		list = append(list, noticeHandler{NoticeType: t, Handler: p.handlers[l.DeploymentID][t]})
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	// client_id as a number, as Canvas sends it.
	_ = json.NewEncoder(w).Encode(map[string]any{"client_id": json.Number("10000000000068"), "deployment_id": l.DeploymentID, "notice_handlers": list})
}

// putNoticeHandler sets (or, with "", removes) the handler of a notice type. As Canvas, it
// refuses a handler off the tool's host. Registering LtiHelloWorldNotice is answered with
// a hello-world notice.
func (l *LMS) putNoticeHandler(w http.ResponseWriter, r *http.Request) {
	p, ok := l.pnsRequest(w, r)
	if !ok {
		return
	}
	var h noticeHandler
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if !hasContentType(r, "application/json") || dec.Decode(&h) != nil {
		http.Error(w, "the body must be JSON {notice_type, handler}", http.StatusBadRequest)
		return
	}
	if !slices.Contains(NoticeTypes(), h.NoticeType) {
		http.Error(w, "unsupported notice_type", http.StatusBadRequest)
		return
	}
	if h.Handler != "" && !sameHost(h.Handler, l.ToolLoginURL) {
		http.Error(w, "the handler must be on the tool's domain", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	if p.handlers[l.DeploymentID] == nil {
		p.handlers[l.DeploymentID] = map[string]string{}
	}
	if h.Handler == "" {
		delete(p.handlers[l.DeploymentID], h.NoticeType)
	} else {
		p.handlers[l.DeploymentID][h.NoticeType] = h.Handler
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(h)
	if h.NoticeType == NoticeHelloWorld && h.Handler != "" {
		go func() { _, _ = l.SendNotices(context.Background(), NoticeHelloWorld, l.NoticeClaims(NoticeHelloWorld)) }()
	}
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// NoticeHandler is the handler registered for a notice type of the simulator's
// deployment, "" when none.
func (l *LMS) NoticeHandler(noticeType string) string {
	p := l.pnsState()
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handlers[l.DeploymentID][noticeType]
}

// NoticeClaims returns the claims of a fresh notice of noticeType for the simulator's
// deployment (new id, now, an hour of validity), as Canvas builds them. An
// LtiAssetProcessorSubmissionNotice carries the demo submission (SubmissionClaims: every
// asset the Asset Service serves, and the report service); an LtiContextCopyNotice a
// course copied from course-42.
func (l *LMS) NoticeClaims(noticeType string) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": l.Issuer, "aud": l.ClientID, "azp": l.ClientID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"nonce":           randomHex(8),
		claimVersion:      "1.3.0",
		claimDeploymentID: l.DeploymentID,
		ClaimNotice: map[string]any{
			"id": randomHex(16), "timestamp": now.UTC().Format(time.RFC3339), "type": noticeType,
		},
		claimContext: map[string]any{"id": "course-42", "label": "CS101", "title": "Introduction to Programming"},
	}
	switch noticeType {
	case NoticeContextCopy:
		c[claimContext] = map[string]any{"id": "course-43", "label": "CS101-2", "title": "Introduction to Programming (copy)"}
		c["https://purl.imsglobal.org/spec/lti/claim/origin_contexts"] = []string{"course-42"}
	case NoticeAssetProcessorSubmission:
		// The Asset Processor simulator's own submission, so that the notice key opens its
		// Asset Service and Asset Report Service.
		maps.Copy(c, l.SubmissionClaims())
	case NoticeHelloWorld:
		c["https://www.example.edu/hello_world"] = map[string]any{"title": "Hello World!", "message": "You are subscribed to LtiHelloWorldNotice."}
	}
	return c
}

// ErrNoHandler means no handler is registered for the notice type.
var ErrNoHandler = errors.New("lmssim: no notice handler is registered for this notice type")

// SendNotices signs each of claims as a notice and posts them in one batch to the handler
// registered for noticeType; it returns what the tool answered (also in Deliveries).
func (l *LMS) SendNotices(ctx context.Context, noticeType string, claims ...map[string]any) (NoticeDelivery, error) {
	handler := l.NoticeHandler(noticeType)
	if handler == "" {
		return NoticeDelivery{}, ErrNoHandler
	}
	jwts := make([]string, 0, len(claims))
	for _, c := range claims {
		tok, err := l.Sign(c, nil)
		if err != nil {
			return NoticeDelivery{}, err
		}
		jwts = append(jwts, tok)
	}
	return l.PostNotices(ctx, handler, noticeType, jwts...)
}

// PostNotices posts already signed (or forged) notice JWTs in one batch to handler.
func (l *LMS) PostNotices(ctx context.Context, handler, noticeType string, jwts ...string) (NoticeDelivery, error) {
	p := l.pnsState()
	if p == nil {
		return NoticeDelivery{}, errors.New("lmssim: PNS is not enabled")
	}
	batch := struct {
		Notices []map[string]string `json:"notices"`
	}{}
	for _, j := range jwts {
		batch.Notices = append(batch.Notices, map[string]string{"jwt": j})
	}
	body, _ := json.Marshal(batch)
	d := NoticeDelivery{Handler: handler, Types: []string{noticeType}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, handler, bytes.NewReader(body))
	if err != nil {
		return d, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := p.client.Do(req)
	if err != nil {
		d.Err = err.Error()
	} else {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		_ = res.Body.Close()
		d.Status, d.Body = res.StatusCode, string(b)
	}
	p.mu.Lock()
	p.deliveries = append(p.deliveries, d)
	if len(p.deliveries) > maxIssuedLog {
		p.deliveries = slices.Delete(p.deliveries, 0, len(p.deliveries)-maxIssuedLog)
	}
	p.mu.Unlock()
	return d, err
}

// Deliveries returns the notice batches posted so far (the last 1,000), oldest first.
func (l *LMS) Deliveries() []NoticeDelivery {
	p := l.pnsState()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deliveries)
}
