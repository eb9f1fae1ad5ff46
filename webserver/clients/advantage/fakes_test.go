package advantage

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

const (
	testKID      = "tool-key-2026"
	testClientID = "10000000000003"
	testDeploy   = "12:8865aa05b4b79b64a91a86042e43af5ea8ae79eb"
)

var (
	toolKey  = testkeys.MustRSAKey(0) // the tool key the platform trusts
	otherKey = testkeys.MustRSAKey(1) // a key it does not
)

// fakeClock is a settable clock shared by a Client and the fakes.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// tokenServer is a platform token endpoint. It verifies the client assertion with the
// tool's public key and checks every T-CC rule (a violation fails the test and is
// answered 400 invalid_client), counts requests, and can revoke the tokens it issued.
type tokenServer struct {
	t   testing.TB
	srv *httptest.Server

	pub          *rsa.PublicKey
	clientID     string
	aud          string // the audience the assertion must carry (T-CC-01)
	deploymentID string // the deployment_id claim expected; "" = must be absent (T-CC-05)
	now          func() time.Time

	// Answer shape.
	tokenType string                               // default "Bearer"
	expiresIn any                                  // default 3600
	grant     func(requested []string) (any, bool) // the response's scope; false: no scope member
	status    int                                  // non-zero: answer this with an RFC 6749 error body
	errorCode string

	gate    chan struct{} // when set, requests wait for it to close
	entered chan struct{} // when set, gets a value for every request (non-blocking)

	requests atomic.Int64
	mu       sync.Mutex
	jtis     map[string]bool
	issued   map[string][]string // token → granted scopes
	revoked  map[string]bool
	forms    []url.Values
}

func newTokenServer(t testing.TB) *tokenServer {
	ts := &tokenServer{
		t: t, pub: &toolKey.PublicKey, clientID: testClientID, deploymentID: testDeploy, now: time.Now,
		tokenType: "Bearer", expiresIn: 3600,
		jtis: map[string]bool{}, issued: map[string][]string{}, revoked: map[string]bool{},
	}
	ts.srv = httptest.NewServer(ts)
	ts.aud = ts.srv.URL + "/login/oauth2/token"
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) URL() string { return ts.srv.URL + "/login/oauth2/token" }

func (ts *tokenServer) cred() Credentials {
	return Credentials{
		PlatformID: "canvas-test", ClientID: testClientID, TokenURL: ts.URL(),
		DeploymentID: testDeploy, KID: testKID, Key: toolKey,
	}
}

// valid reports whether token was issued, is not revoked, and carries one of scopes.
func (ts *tokenServer) valid(token string, scopes ...string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	granted, ok := ts.issued[token]
	if !ok || ts.revoked[token] {
		return false
	}
	for _, s := range scopes {
		if slices.Contains(granted, s) {
			return true
		}
	}
	return len(scopes) == 0
}

func (ts *tokenServer) revokeAll() {
	ts.mu.Lock()
	for tok := range ts.issued {
		ts.revoked[tok] = true
	}
	ts.mu.Unlock()
}

func (ts *tokenServer) lastForm() url.Values {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.forms) == 0 {
		return nil
	}
	return ts.forms[len(ts.forms)-1]
}

func (ts *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ts.requests.Add(1)
	if ts.entered != nil {
		select {
		case ts.entered <- struct{}{}:
		default:
		}
	}
	if ts.gate != nil {
		select {
		case <-ts.gate:
		case <-r.Context().Done():
			return
		}
	}
	fail := func(rule, format string, args ...any) {
		msg := rule + ": " + fmt.Sprintf(format, args...)
		ts.t.Errorf("token endpoint: %s", msg)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": msg})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/login/oauth2/token" {
		fail("SEC 4.1.1", "%s %s", r.Method, r.URL.Path)
		return
	}
	if got := r.Header.Get("User-Agent"); got != version.UserAgent() {
		fail("ARCH", "User-Agent %q", got)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		fail("SEC 4.1.1", "Content-Type %q", ct)
		return
	}
	if err := r.ParseForm(); err != nil {
		fail("SEC 4.1.1", "form: %v", err)
		return
	}
	ts.mu.Lock()
	ts.forms = append(ts.forms, r.PostForm)
	ts.mu.Unlock()
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		fail("SEC 4.1.1", "grant_type %q", g)
		return
	}
	if at := r.PostForm.Get("client_assertion_type"); at != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		fail("SEC 4.1.1", "client_assertion_type %q", at)
		return
	}
	requested := strings.Fields(r.PostForm.Get("scope"))
	if len(requested) == 0 {
		fail("SEC 4.1.1", "no scope")
		return
	}
	if rule, err := ts.checkAssertion(r.PostForm.Get("client_assertion")); err != nil {
		fail(rule, "%v", err)
		return
	}
	if ts.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ts.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": ts.errorCode, "error_description": "refused by the test"})
		return
	}
	granted := requested
	var scopeMember any = strings.Join(requested, " ")
	include := true
	if ts.grant != nil {
		scopeMember, include = ts.grant(requested)
		switch v := scopeMember.(type) {
		case string:
			granted = strings.Fields(v)
		case []string:
			granted = v
		}
	}
	if !include {
		granted = requested
	}
	token := "tok-" + rand.Text()
	ts.mu.Lock()
	ts.issued[token] = granted
	ts.mu.Unlock()
	resp := map[string]any{"access_token": token, "token_type": ts.tokenType, "expires_in": ts.expiresIn}
	if include {
		resp["scope"] = scopeMember
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// checkAssertion applies conformance §2 to a client assertion; it returns the rule broken.
func (ts *tokenServer) checkAssertion(a string) (string, error) {
	if a == "" {
		return "SEC 4.1.1", fmt.Errorf("no client_assertion")
	}
	msg, err := jws.Parse([]byte(a))
	if err != nil || len(msg.Signatures()) != 1 {
		return "T-CC-06", fmt.Errorf("not a compact JWS: %v", err) //nolint:errorlint // err may be nil here (a status failure); %v prints it as <nil>
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	if kid, _ := hdr.KeyID(); kid != testKID {
		return "T-CC-06", fmt.Errorf("kid %q, want %q", kid, testKID)
	}
	if alg, _ := hdr.Algorithm(); alg != jwa.RS256() {
		return "T-CC-06", fmt.Errorf("alg %v", alg)
	}
	if typ, _ := hdr.Type(); typ != "JWT" {
		return "T-CC-06", fmt.Errorf("typ %q", typ)
	}
	payload, err := jws.Verify([]byte(a), jws.WithKey(jwa.RS256(), ts.pub))
	if err != nil {
		return "T-CC-06", fmt.Errorf("signature: %w", err)
	}
	// A standard JOSE validator accepts it (exp in the future, iat not, iss/sub/aud).
	if _, err := jwt.Parse([]byte(a), jwt.WithKey(jwa.RS256(), ts.pub), jwt.WithIssuer(ts.clientID),
		jwt.WithSubject(ts.clientID), jwt.WithAudience(ts.aud), jwt.WithClock(jwt.ClockFunc(ts.now))); err != nil {
		return "T-CC-01/02/03", fmt.Errorf("jwt validation: %w", err)
	}
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		return "T-CC-03", err
	}
	if aud, ok := claims["aud"].(string); !ok || aud != ts.aud {
		return "T-CC-01", fmt.Errorf("aud %#v, want the string %q", claims["aud"], ts.aud)
	}
	if claims["iss"] != ts.clientID || claims["sub"] != ts.clientID {
		return "T-CC-02", fmt.Errorf("iss %v, sub %v, want %s", claims["iss"], claims["sub"], ts.clientID)
	}
	iatN, ok1 := claims["iat"].(json.Number)
	expN, ok2 := claims["exp"].(json.Number)
	if !ok1 || !ok2 {
		return "T-CC-03", fmt.Errorf("iat %#v / exp %#v are not numbers", claims["iat"], claims["exp"])
	}
	iat, err1 := iatN.Int64()
	exp, err2 := expN.Int64()
	if err1 != nil || err2 != nil {
		return "T-CC-03", fmt.Errorf("iat/exp are not integers")
	}
	if d := exp - iat; d <= 0 || d > 300 {
		return "T-CC-03", fmt.Errorf("exp-iat = %d s", d)
	}
	if now := ts.now().Unix(); iat > now || exp <= now {
		return "T-CC-03", fmt.Errorf("iat %d / exp %d around now %d", iat, exp, now)
	}
	jti, _ := claims["jti"].(string)
	ts.mu.Lock()
	replay := ts.jtis[jti]
	ts.jtis[jti] = true
	ts.mu.Unlock()
	if len(jti) < 16 || replay {
		return "T-CC-04", fmt.Errorf("jti %q (replayed: %v)", jti, replay)
	}
	dep, has := claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"]
	switch {
	case ts.deploymentID == "" && has:
		return "T-CC-05", fmt.Errorf("deployment_id %v sent, none expected", dep)
	case ts.deploymentID != "" && dep != ts.deploymentID:
		return "T-CC-05", fmt.Errorf("deployment_id %#v, want %q", dep, ts.deploymentID)
	}
	return "", nil
}

// bearer returns the request's bearer token, or "".
func bearer(r *http.Request) string {
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return v
	}
	return ""
}

// nrpsServer is a Names and Roles service with Canvas-like paging.
type nrpsServer struct {
	t            testing.TB
	srv          *httptest.Server
	ts           *tokenServer
	members      []map[string]any
	rlidMembers  map[string][]string // rlid → user ids with access; nil: rlid unsupported (400)
	requests     atomic.Int64
	nextOverride func(r *http.Request) string // when set, the Link header's next target

	mu      sync.Mutex
	queries []url.Values
	uris    []string
}

const nrpsPath = "/api/lti/courses/1/names_and_roles"

func newNRPSServer(t testing.TB, ts *tokenServer, members []map[string]any) *nrpsServer {
	ns := &nrpsServer{t: t, ts: ts, members: members}
	ns.srv = httptest.NewServer(ns)
	t.Cleanup(ns.srv.Close)
	return ns
}

// URL is the context_memberships_url, with a query of its own (as Blackboard's has).
func (ns *nrpsServer) URL() string { return ns.srv.URL + nrpsPath + "?placement_id=_553_1" }

func (ns *nrpsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns.requests.Add(1)
	ns.mu.Lock()
	ns.queries = append(ns.queries, r.URL.Query())
	ns.uris = append(ns.uris, r.URL.RequestURI())
	ns.mu.Unlock()
	if r.URL.Path != nrpsPath || r.URL.Query().Get("placement_id") != "_553_1" {
		http.Error(w, "no such page", http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Accept"); got != MediaTypeMembershipContainer {
		ns.t.Errorf("T-NRPS-01: Accept %q", got)
		http.Error(w, "wrong Accept", http.StatusNotAcceptable)
		return
	}
	if !ns.ts.valid(bearer(r), ltiwire.ScopeMembershipReadOnly) {
		http.Error(w, `{"errors":[{"message":"Invalid access token"}]}`, http.StatusUnauthorized)
		return
	}
	q := r.URL.Query()
	members := ns.members
	if rlid := q.Get("rlid"); rlid != "" {
		if ns.rlidMembers == nil {
			http.Error(w, `{"errors":[{"message":"rlid is not supported"}]}`, http.StatusBadRequest)
			return
		}
		allowed := ns.rlidMembers[rlid]
		members = slices.DeleteFunc(slices.Clone(members), func(m map[string]any) bool {
			return !slices.Contains(allowed, fmt.Sprint(m["user_id"]))
		})
	}
	if role := q.Get("role"); role != "" {
		members = slices.DeleteFunc(slices.Clone(members), func(m map[string]any) bool {
			for _, r := range m["roles"].([]any) {
				if s := r.(string); s == role || strings.HasSuffix(s, "#"+role) {
					return false
				}
			}
			return true
		})
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = len(members) + 1
	}
	// The page cursor is case-sensitive, as Canvas's are: a client that lowercases the
	// next URL gets the wrong page (T-NRPS-02).
	from := 0
	if c := q.Get("PageCursor"); c != "" {
		n, ok := strings.CutPrefix(c, "Cur")
		from, _ = strconv.Atoi(n)
		if !ok {
			http.Error(w, "bad cursor", http.StatusBadRequest)
			return
		}
	}
	end := min(from+limit, len(members))
	if end < len(members) || ns.nextOverride != nil {
		next := ns.srv.URL + r.URL.Path + "?" + r.URL.RawQuery
		next = strings.Split(next, "&PageCursor=")[0] + "&PageCursor=Cur" + strconv.Itoa(end)
		if ns.nextOverride != nil {
			next = ns.nextOverride(r)
		}
		if next != "" {
			// Canvas-like: several links, mixed-case parameter and relation.
			w.Header().Add("Link", `<`+ns.srv.URL+nrpsPath+`?placement_id=_553_1&diff=1>; rel="differences", <`+next+`>; REL="Next"`)
		}
	}
	w.Header().Set("Content-Type", MediaTypeMembershipContainer)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":      ns.srv.URL + nrpsPath,
		"context": map[string]any{"id": "4dde05e8ca1973bcca9bffc13e1548820eee93a3", "label": "Test", "title": "Test Course"},
		"members": members[from:end],
	})
}

// agsServer is an Assignment and Grade Services endpoint with Moodle's URL shapes:
// container /mod/lti/services.php/2/lineitems?type_id=4, items
// /mod/lti/services.php/2/lineitems/<n>/lineitem?type_id=4 (T-AGS-01, T-QUIRK-05).
type agsServer struct {
	t        testing.TB
	srv      *httptest.Server
	ts       *tokenServer
	requests atomic.Int64

	scoreStatus int // default 200
	deleteCode  int // non-zero: DELETE answers this
	emptyCreate bool

	mu      sync.Mutex
	items   map[int]map[string]json.RawMessage
	nextID  int
	scores  []recordedScore
	methods []string
}

type recordedScore struct {
	item        int
	contentType string
	body        map[string]any
	raw         []byte
	query       string
}

const agsBase = "/mod/lti/services.php/2/lineitems"

func newAGSServer(t testing.TB, ts *tokenServer) *agsServer {
	as := &agsServer{t: t, ts: ts, items: map[int]map[string]json.RawMessage{}, nextID: 10}
	as.srv = httptest.NewServer(as)
	t.Cleanup(as.srv.Close)
	return as
}

func (as *agsServer) ContainerURL() string { return as.srv.URL + agsBase + "?type_id=4" }

func (as *agsServer) ItemURL(n int) string {
	return as.srv.URL + agsBase + "/" + strconv.Itoa(n) + "/lineitem?type_id=4"
}

// add stores a line item as the platform has it and returns its id.
func (as *agsServer) add(fields map[string]any) string {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.nextID++
	n := as.nextID
	raw := map[string]json.RawMessage{}
	for k, v := range fields {
		raw[k], _ = json.Marshal(v)
	}
	raw["id"], _ = json.Marshal(as.ItemURL(n))
	as.items[n] = raw
	return as.ItemURL(n)
}

func (as *agsServer) item(n int) map[string]json.RawMessage {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.items[n]
}

func (as *agsServer) authorize(w http.ResponseWriter, r *http.Request, scopes ...string) bool {
	if !as.ts.valid(bearer(r), scopes...) {
		http.Error(w, `{"status":401,"reason":"Unauthorized"}`, http.StatusUnauthorized)
		return false
	}
	return true
}

func (as *agsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	as.requests.Add(1)
	as.mu.Lock()
	as.methods = append(as.methods, r.Method+" "+r.URL.RequestURI())
	as.mu.Unlock()
	if r.URL.Query().Get("type_id") != "4" { // Moodle needs its query on every URL (T-QUIRK-05)
		http.Error(w, "type_id missing", http.StatusBadRequest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, agsBase)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		as.container(w, r)
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	n, err := strconv.Atoi(parts[0])
	if err != nil || len(parts) < 2 || parts[1] != "lineitem" {
		http.NotFound(w, r)
		return
	}
	as.mu.Lock()
	_, exists := as.items[n]
	as.mu.Unlock()
	if !exists {
		http.NotFound(w, r)
		return
	}
	switch {
	case len(parts) == 2:
		as.lineItem(w, r, n)
	case len(parts) == 3 && parts[2] == "scores" && r.Method == http.MethodPost:
		as.score(w, r, n)
	case len(parts) == 3 && parts[2] == "results" && r.Method == http.MethodGet:
		as.results(w, r, n)
	default:
		http.NotFound(w, r)
	}
}

func (as *agsServer) container(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if got := r.Header.Get("Accept"); got != MediaTypeLineItemContainer {
			as.t.Errorf("lineitems GET Accept %q", got)
		}
		if !as.authorize(w, r, ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly) {
			return
		}
		q := r.URL.Query()
		as.mu.Lock()
		ids := slices.Sorted(func(yield func(int) bool) {
			for n := range as.items {
				if !yield(n) {
					return
				}
			}
		})
		var list []map[string]json.RawMessage
		for _, n := range ids {
			it := as.items[n]
			if match(it, "resourceLinkId", q.Get("resource_link_id")) && match(it, "resourceId", q.Get("resource_id")) && match(it, "tag", q.Get("tag")) {
				list = append(list, it)
			}
		}
		as.mu.Unlock()
		from, _ := strconv.Atoi(q.Get("from"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		if limit <= 0 {
			limit = len(list) + 1
		}
		end := min(from+limit, len(list))
		page := func(at int) string {
			v := url.Values{}
			for k, vs := range q {
				v[k] = vs
			}
			v.Set("from", strconv.Itoa(at))
			return as.srv.URL + agsBase + "?" + v.Encode()
		}
		if end < len(list) {
			w.Header().Add("Link", `<`+page(end)+`>; rel="next"`)
		}
		if from > 0 {
			w.Header().Add("Link", `<`+page(max(from-limit, 0))+`>; rel="prev"`)
		}
		w.Header().Add("Link", `<`+page(0)+`>; rel="first", <`+page(max(len(list)-1, 0)/limit*limit)+`>; rel="last"`)
		w.Header().Set("Content-Type", MediaTypeLineItemContainer)
		if list == nil {
			list = []map[string]json.RawMessage{}
		}
		_ = json.NewEncoder(w).Encode(list[from:end])
	case http.MethodPost:
		if ct := r.Header.Get("Content-Type"); ct != MediaTypeLineItem {
			as.t.Errorf("lineitems POST Content-Type %q", ct)
		}
		if !as.authorize(w, r, ltiwire.ScopeLineItem) {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, has := raw["id"]; has {
			as.t.Errorf("create sent an id")
		}
		as.mu.Lock()
		as.nextID++
		n := as.nextID
		raw["id"], _ = json.Marshal(as.ItemURL(n))
		as.items[n] = raw
		as.mu.Unlock()
		w.Header().Set("Content-Type", MediaTypeLineItem)
		if as.emptyCreate {
			w.Header().Set("Location", as.ItemURL(n))
			w.WriteHeader(http.StatusCreated)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(raw)
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
	}
}

func match(item map[string]json.RawMessage, field, want string) bool {
	if want == "" {
		return true
	}
	var got string
	_ = json.Unmarshal(item[field], &got)
	return got == want
}

func (as *agsServer) lineItem(w http.ResponseWriter, r *http.Request, n int) {
	switch r.Method {
	case http.MethodGet:
		if got := r.Header.Get("Accept"); got != MediaTypeLineItem {
			as.t.Errorf("lineitem GET Accept %q", got)
		}
		if !as.authorize(w, r, ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly) {
			return
		}
		w.Header().Set("Content-Type", MediaTypeLineItem)
		_ = json.NewEncoder(w).Encode(as.item(n))
	case http.MethodPut:
		if ct := r.Header.Get("Content-Type"); ct != MediaTypeLineItem {
			as.t.Errorf("lineitem PUT Content-Type %q", ct)
		}
		if !as.authorize(w, r, ltiwire.ScopeLineItem) {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		as.mu.Lock()
		as.items[n] = raw
		as.mu.Unlock()
		w.Header().Set("Content-Type", MediaTypeLineItem)
		_ = json.NewEncoder(w).Encode(raw)
	case http.MethodDelete:
		if as.deleteCode != 0 {
			http.Error(w, `{"errors":[{"message":"cannot delete"}]}`, as.deleteCode)
			return
		}
		if !as.authorize(w, r, ltiwire.ScopeLineItem) {
			return
		}
		as.mu.Lock()
		delete(as.items, n)
		as.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
	}
}

func (as *agsServer) score(w http.ResponseWriter, r *http.Request, n int) {
	if !as.authorize(w, r, ltiwire.ScopeScore) {
		return
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(r.Body)
	var body map[string]any
	if err := json.Unmarshal(buf.Bytes(), &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	as.mu.Lock()
	as.scores = append(as.scores, recordedScore{item: n, contentType: r.Header.Get("Content-Type"), body: body, raw: buf.Bytes(), query: r.URL.RawQuery})
	as.mu.Unlock()
	status := as.scoreStatus
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if status != http.StatusNoContent {
		_, _ = w.Write([]byte(`{"resultUrl":"` + as.srv.URL + `/results/1"}`))
	}
}

func (as *agsServer) results(w http.ResponseWriter, r *http.Request, n int) {
	if got := r.Header.Get("Accept"); got != MediaTypeResultContainer {
		as.t.Errorf("results Accept %q", got)
	}
	if !as.authorize(w, r, ltiwire.ScopeResultReadOnly) {
		return
	}
	q := r.URL.Query()
	all := []map[string]any{
		{"id": as.ItemURL(n) + "&result=1", "scoreOf": as.ItemURL(n), "userId": "5323497", "resultScore": 83, "resultMaximum": 100, "comment": "Good"},
		{"id": as.ItemURL(n) + "&result=2", "scoreOf": as.ItemURL(n), "userId": 42, "resultScore": 0.5, "resultMaximum": 1},
	}
	if u := q.Get("user_id"); u != "" {
		all = slices.DeleteFunc(all, func(m map[string]any) bool { return fmt.Sprint(m["userId"]) != u })
	}
	if q.Get("limit") == "1" && len(all) > 1 {
		all = all[:1]
		next := as.srv.URL + agsBase + "/" + strconv.Itoa(n) + "/lineitem/results?type_id=4&page=2"
		w.Header().Set("Link", `<`+next+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", MediaTypeResultContainer)
	_ = json.NewEncoder(w).Encode(all)
}

// countingServer counts the requests it gets: the host a token must never reach.
type countingServer struct {
	srv      *httptest.Server
	requests atomic.Int64
	sawToken atomic.Bool
}

func newCountingServer(t testing.TB) *countingServer {
	cs := &countingServer{}
	cs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			cs.sawToken.Store(true)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"members":[]}`))
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}
