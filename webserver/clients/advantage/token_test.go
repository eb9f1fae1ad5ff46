package advantage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
)

// fixturesDir holds real LMS captures, copied from the shared fixtures into testdata/lms.
var fixturesDir = filepath.Join("..", "..", "..", "testdata", "lms")

// newTestClient is the production client with the dev-mode policy (the test LMSs are on
// loopback, over http) on clock, when given.
func newTestClient(clock *fakeClock) *Client {
	c := NewClient(HTTPClient(testoutbound.Dev()))
	if clock != nil {
		c.now = clock.Now
	}
	return c
}

func mustToken(t *testing.T, c *Client, cred Credentials, scopes ...string) string {
	t.Helper()
	tok, err := c.Token(context.Background(), cred, scopes)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	return tok
}

// assertionClaimsOf decodes a client assertion's payload after checking its signature.
func assertionClaimsOf(t *testing.T, a string) map[string]any {
	t.Helper()
	payload, err := jws.Verify([]byte(a), jws.WithKey(jwa.RS256(), &toolKey.PublicKey))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The token endpoint fake checks every T-CC rule on every request (see checkAssertion);
// these tests drive each rule and look at what was sent.
func TestClientCredentials(t *testing.T) {
	t.Run("T-CC-01 aud is the token URL, a string, when no audience is configured", func(t *testing.T) {
		ts := newTokenServer(t)
		c := newTestClient(nil)
		mustToken(t, c, ts.cred(), ltiwire.ScopeScore)
		a := ts.lastForm().Get("client_assertion")
		if aud := assertionClaimsOf(t, a)["aud"]; aud != ts.URL() {
			t.Fatalf("aud %#v, want %q", aud, ts.URL())
		}
	})

	t.Run("T-CC-01 T-QUIRK-06 a configured audience (D2L, DR authorization_server) is used instead", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.aud = "https://api.brightspace.com/auth/token"
		cred := ts.cred()
		cred.Audience = ts.aud
		c := newTestClient(nil)
		mustToken(t, c, cred, ltiwire.ScopeScore)
		claims := assertionClaimsOf(t, ts.lastForm().Get("client_assertion"))
		if claims["aud"] != "https://api.brightspace.com/auth/token" {
			t.Fatalf("aud %#v", claims["aud"])
		}
		if ts.requests.Load() != 1 {
			t.Fatalf("the token request went to %d endpoints", ts.requests.Load())
		}
	})

	t.Run("T-CC-02 iss and sub are the client_id", func(t *testing.T) {
		ts := newTokenServer(t)
		mustToken(t, newTestClient(nil), ts.cred(), ltiwire.ScopeScore)
		claims := assertionClaimsOf(t, ts.lastForm().Get("client_assertion"))
		if claims["iss"] != testClientID || claims["sub"] != testClientID {
			t.Fatalf("iss %v sub %v", claims["iss"], claims["sub"])
		}
	})

	t.Run("T-CC-03 numeric iat slightly backdated and exp at most 300 s later", func(t *testing.T) {
		ts := newTokenServer(t)
		before := time.Now().Unix()
		mustToken(t, newTestClient(nil), ts.cred(), ltiwire.ScopeScore)
		claims := assertionClaimsOf(t, ts.lastForm().Get("client_assertion"))
		iat, ok1 := claims["iat"].(float64)
		exp, ok2 := claims["exp"].(float64)
		if !ok1 || !ok2 {
			t.Fatalf("iat %#v exp %#v must be JSON numbers", claims["iat"], claims["exp"])
		}
		if d := exp - iat; d <= 0 || d > 300 {
			t.Fatalf("exp-iat = %v", d)
		}
		if int64(iat) > before || int64(iat) < before-10 {
			t.Fatalf("iat %v, now %d: want a few seconds back", iat, before)
		}
	})

	t.Run("T-CC-04 a fresh random jti on every token request", func(t *testing.T) {
		ts := newTokenServer(t)
		c := newTestClient(nil)
		mustToken(t, c, ts.cred(), ltiwire.ScopeScore)
		mustToken(t, c, ts.cred(), ltiwire.ScopeLineItem)
		mustToken(t, newTestClient(nil), ts.cred(), ltiwire.ScopeScore)
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if len(ts.forms) != 3 || len(ts.jtis) != 3 { // the fake also rejects a replayed jti
			t.Fatalf("%d requests, %d distinct jti", len(ts.forms), len(ts.jtis))
		}
	})

	t.Run("T-CC-05 deployment_id claim when known, absent when not", func(t *testing.T) {
		ts := newTokenServer(t)
		mustToken(t, newTestClient(nil), ts.cred(), ltiwire.ScopeScore)
		claims := assertionClaimsOf(t, ts.lastForm().Get("client_assertion"))
		if claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] != testDeploy {
			t.Fatalf("deployment_id %#v", claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"])
		}
		ts.deploymentID = ""
		cred := ts.cred()
		cred.DeploymentID = ""
		mustToken(t, newTestClient(nil), cred, ltiwire.ScopeScore)
		if _, has := assertionClaimsOf(t, ts.lastForm().Get("client_assertion"))["https://purl.imsglobal.org/spec/lti/claim/deployment_id"]; has {
			t.Fatal("deployment_id sent without a deployment")
		}
	})

	t.Run("T-CC-06 kid header of the published tool key, RS256, typ JWT; no kid no request", func(t *testing.T) {
		ts := newTokenServer(t)
		mustToken(t, newTestClient(nil), ts.cred(), ltiwire.ScopeScore)
		msg, err := jws.Parse([]byte(ts.lastForm().Get("client_assertion")))
		if err != nil {
			t.Fatal(err)
		}
		h := msg.Signatures()[0].ProtectedHeaders()
		kid, _ := h.KeyID()
		alg, _ := h.Algorithm()
		typ, _ := h.Type()
		if kid != testKID || alg != jwa.RS256() || typ != "JWT" {
			t.Fatalf("header kid %q alg %v typ %q", kid, alg, typ)
		}
		cred := ts.cred()
		cred.KID = ""
		if _, err := newTestClient(nil).Token(context.Background(), cred, []string{ltiwire.ScopeScore}); err == nil || !strings.Contains(err.Error(), "KID") {
			t.Fatalf("no kid: %v", err)
		}
		if ts.requests.Load() != 1 {
			t.Fatalf("a request without kid was sent")
		}
	})

	t.Run("T-CC-06 an assertion signed with another key is refused by the fake", func(t *testing.T) {
		ts := newTokenServer(t)
		cred := ts.cred()
		cred.Key = otherKey
		a, err := ClientAssertion(cred, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if rule, err := ts.checkAssertion(a); err == nil || rule != "T-CC-06" {
			t.Fatalf("rule %q err %v", rule, err)
		}
	})

	t.Run("T-CC-07 token_type compared case-insensitively", func(t *testing.T) {
		for _, tt := range []string{"Bearer", "bearer", "BEARER"} {
			ts := newTokenServer(t)
			ts.tokenType = tt
			if _, err := newTestClient(nil).Token(context.Background(), ts.cred(), []string{ltiwire.ScopeScore}); err != nil {
				t.Fatalf("token_type %q: %v", tt, err)
			}
		}
		ts := newTokenServer(t)
		ts.tokenType = "mac"
		_, err := newTestClient(nil).Token(context.Background(), ts.cred(), []string{ltiwire.ScopeScore})
		var ue *UpstreamError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "token_type") {
			t.Fatalf("token_type mac: %v", err)
		}
	})

	t.Run("T-CC-07 the Canvas token response fixture is accepted", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(fixturesDir, "canvas_token_response.json"))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(raw)
		}))
		defer srv.Close()
		cred := Credentials{PlatformID: "p", ClientID: testClientID, TokenURL: srv.URL + "/login/oauth2/token", KID: testKID, Key: toolKey}
		c := newTestClient(nil)
		tok, e, err := c.token(context.Background(), cred, []string{ltiwire.ScopeScore})
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			AccessToken string `json:"access_token"`
		}
		_ = json.Unmarshal(raw, &want)
		if tok.value != want.AccessToken || !slices.Equal(tok.granted, []string{ltiwire.ScopeScore}) || e == nil {
			t.Fatalf("token %+v", tok)
		}
	})

	t.Run("T-CC-08 granted scopes come from the response scope when present", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.grant = func([]string) (any, bool) { return ltiwire.ScopeLineItemReadOnly, true } // a subset
		c := newTestClient(nil)
		tok, _, err := c.token(context.Background(), ts.cred(), []string{ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tok.granted, []string{ltiwire.ScopeLineItemReadOnly}) {
			t.Fatalf("granted %v", tok.granted)
		}
	})

	t.Run("T-CC-08 granted scopes are the requested ones when the response has none", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.grant = func(req []string) (any, bool) { return nil, false }
		tok, _, err := newTestClient(nil).token(context.Background(), ts.cred(), []string{ltiwire.ScopeScore, ltiwire.ScopeLineItem})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tok.granted, []string{ltiwire.ScopeLineItem, ltiwire.ScopeScore}) {
			t.Fatalf("granted %v", tok.granted)
		}
	})

	t.Run("T-CC-08 a call whose scope the token lacks fails fast, nothing sent to the service", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.grant = func([]string) (any, bool) { return ltiwire.ScopeLineItem, true } // score not granted
		as := newAGSServer(t, ts)
		cred := ts.cred()
		cred.ServiceURLs = []string{as.ContainerURL()}
		cred.LaunchScopes = []string{ltiwire.ScopeLineItem, ltiwire.ScopeScore}
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 10})
		err := newTestClient(nil).PostScore(context.Background(), cred, id, Score{UserID: "u1", ActivityProgress: "Completed", GradingProgress: "FullyGraded"})
		if !errors.Is(err, ErrScopeNotGranted) {
			t.Fatalf("err %v", err)
		}
		if as.requests.Load() != 0 {
			t.Fatalf("%d requests reached the service", as.requests.Load())
		}
	})

	t.Run("T-CC-09 cached until expires_in minus 60 s, per key", func(t *testing.T) {
		clock := newFakeClock()
		ts := newTokenServer(t)
		ts.now = clock.Now
		c := newTestClient(clock)
		first := mustToken(t, c, ts.cred(), ltiwire.ScopeScore, ltiwire.ScopeLineItem)
		// Any order, duplicates: the same key.
		if got := mustToken(t, c, ts.cred(), ltiwire.ScopeLineItem, ltiwire.ScopeScore, ltiwire.ScopeLineItem); got != first {
			t.Fatal("same scope set in another order fetched a new token")
		}
		clock.Advance(3600*time.Second - TokenMargin - time.Second)
		if got := mustToken(t, c, ts.cred(), ltiwire.ScopeScore, ltiwire.ScopeLineItem); got != first || ts.requests.Load() != 1 {
			t.Fatalf("within the margin: %d requests", ts.requests.Load())
		}
		clock.Advance(2 * time.Second) // now inside the last 60 s
		second := mustToken(t, c, ts.cred(), ltiwire.ScopeScore, ltiwire.ScopeLineItem)
		if second == first || ts.requests.Load() != 2 {
			t.Fatalf("past expires_in-60s: %d requests, same token %v", ts.requests.Load(), second == first)
		}
		// Each key part makes its own token.
		other := ts.cred()
		other.PlatformID = "other-registration"
		mustToken(t, c, other, ltiwire.ScopeScore, ltiwire.ScopeLineItem)
		mustToken(t, c, ts.cred(), ltiwire.ScopeScore)
		if ts.requests.Load() != 4 {
			t.Fatalf("%d requests, want 4", ts.requests.Load())
		}
	})

	t.Run("T-CC-09 short-lived tokens are kept for half their life; expires_in as a string", func(t *testing.T) {
		clock := newFakeClock()
		ts := newTokenServer(t)
		ts.now = clock.Now
		ts.expiresIn = "100"
		c := newTestClient(clock)
		mustToken(t, c, ts.cred(), ltiwire.ScopeScore)
		clock.Advance(49 * time.Second)
		mustToken(t, c, ts.cred(), ltiwire.ScopeScore)
		if ts.requests.Load() != 1 {
			t.Fatal("refetched too early")
		}
		clock.Advance(2 * time.Second)
		mustToken(t, c, ts.cred(), ltiwire.ScopeScore)
		if ts.requests.Load() != 2 {
			t.Fatal("kept past half of a 100 s token")
		}
	})

	t.Run("T-CC-09 a 401 drops the token and retries once with a fresh one", func(t *testing.T) {
		ts := newTokenServer(t)
		as := newAGSServer(t, ts)
		cred := ts.cred()
		cred.ServiceURLs = []string{as.ContainerURL()}
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 10})
		c := newTestClient(nil)
		if _, err := c.GetLineItem(context.Background(), cred, id); err != nil {
			t.Fatal(err)
		}
		ts.revokeAll() // the LMS forgets the token before it expires
		if _, err := c.GetLineItem(context.Background(), cred, id); err != nil {
			t.Fatalf("after revocation: %v", err)
		}
		if ts.requests.Load() != 2 || as.requests.Load() != 3 {
			t.Fatalf("%d token requests, %d service requests; want 2 and 3", ts.requests.Load(), as.requests.Load())
		}
	})

	t.Run("T-CC-09 a second 401 is an UpstreamError", func(t *testing.T) {
		ts := newTokenServer(t)
		var hits int
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits++
			mu.Unlock()
			http.Error(w, `{"errors":[{"message":"Invalid access token"}]}`, http.StatusUnauthorized)
		}))
		defer srv.Close()
		c := newTestClient(nil)
		_, err := c.Do(context.Background(), ts.cred(), []string{ltiwire.ScopeScore}, func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/x", nil)
		})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 401 || !strings.Contains(ue.Body, "Invalid access token") {
			t.Fatalf("err %#v", err)
		}
		if hits != 2 || ts.requests.Load() != 2 {
			t.Fatalf("%d service requests, %d token requests; want 2 and 2", hits, ts.requests.Load())
		}
	})

	t.Run("T-CC-10 the token is asked for the Advantage scopes the launch granted", func(t *testing.T) {
		ts := newTokenServer(t)
		ns := newNRPSServer(t, ts, testMembers(3))
		as := newAGSServer(t, ts)
		cred := ts.cred()
		cred.LaunchScopes = GrantedScopes([]string{
			ltiwire.ScopeScore, ltiwire.ScopeLineItem, ltiwire.ScopeResultReadOnly,
			"https://canvas.instructure.com/lti-ags/progress/scope/show", // Canvas's own: not asked for
		}, true)
		cred.ServiceURLs = []string{as.ContainerURL(), ns.URL()}
		c := newTestClient(nil)
		id := as.add(map[string]any{"label": "Quiz", "scoreMaximum": 10})
		if _, err := c.Memberships(context.Background(), cred, ns.URL(), MembersQuery{}); err != nil {
			t.Fatal(err)
		}
		if err := c.PostScore(context.Background(), cred, id, Score{UserID: "u1", ActivityProgress: "Completed", GradingProgress: "FullyGraded"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Results(context.Background(), cred, id, ResultsQuery{}); err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{ltiwire.ScopeLineItem, ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore, ltiwire.ScopeMembershipReadOnly}, " ")
		if got := ts.lastForm().Get("scope"); got != want {
			t.Fatalf("scope %q\nwant  %q", got, want)
		}
		if ts.requests.Load() != 1 {
			t.Fatalf("%d token requests for one launch, want 1", ts.requests.Load())
		}
	})

	t.Run("assertion has the claims of the Canvas capture, typed the same", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(fixturesDir, "canvas_client_assertion_claims.json"))
		if err != nil {
			t.Fatal(err)
		}
		var fixture map[string]any
		if err := json.Unmarshal(raw, &fixture); err != nil {
			t.Fatal(err)
		}
		cred := Credentials{ClientID: fixture["iss"].(string), TokenURL: fixture["aud"].(string), KID: testKID, Key: toolKey}
		a, err := ClientAssertion(cred, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got := assertionClaimsOf(t, a)
		for k, v := range fixture {
			g, ok := got[k]
			if !ok {
				t.Errorf("claim %s missing", k)
				continue
			}
			if (g == nil) != (v == nil) || typeName(g) != typeName(v) {
				t.Errorf("claim %s is %T, Canvas's is %T", k, g, v)
			}
		}
		for _, k := range []string{"iss", "sub", "aud"} {
			if got[k] != fixture[k] {
				t.Errorf("%s = %v, want %v", k, got[k], fixture[k])
			}
		}
	})
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	}
	return "other"
}

func TestTokenErrors(t *testing.T) {
	t.Run("RFC 6749 error is an UpstreamError with its code", func(t *testing.T) {
		ts := newTokenServer(t)
		ts.status, ts.errorCode = http.StatusBadRequest, "invalid_scope"
		_, err := newTestClient(nil).Token(context.Background(), ts.cred(), []string{ltiwire.ScopeScore})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Op != "token" || ue.Status != 400 || ue.Code != "invalid_scope" || ue.Timeout {
			t.Fatalf("err %#v", err)
		}
		if !strings.Contains(ue.Error(), "invalid_scope") {
			t.Fatalf("Error() %q", ue.Error())
		}
	})

	t.Run("an error body echoing the assertion does not leak it", func(t *testing.T) {
		var sent string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			sent = r.PostForm.Get("client_assertion")
			http.Error(w, `{"error":"invalid_client","error_description":"bad assertion `+sent+`"}`, http.StatusBadRequest)
		}))
		defer srv.Close()
		cred := Credentials{ClientID: "c", TokenURL: srv.URL, KID: testKID, Key: toolKey}
		_, err := newTestClient(nil).Token(context.Background(), cred, []string{ltiwire.ScopeScore})
		var ue *UpstreamError
		if !errors.As(err, &ue) || sent == "" || strings.Contains(ue.Body, sent) || strings.Contains(err.Error(), sent) {
			t.Fatalf("assertion leaked or wrong error: %v / %q", err, ue.Body)
		}
	})

	t.Run("a token never appears in an error", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"SECRET-TOKEN","token_type":"mac","expires_in":3600}`))
		}))
		defer srv.Close()
		cred := Credentials{ClientID: "c", TokenURL: srv.URL, KID: testKID, Key: toolKey}
		_, err := newTestClient(nil).Token(context.Background(), cred, []string{ltiwire.ScopeScore})
		var ue *UpstreamError
		if !errors.As(err, &ue) || strings.Contains(err.Error(), "SECRET") || strings.Contains(ue.Body, "SECRET") {
			t.Fatalf("err %v body %q", err, ue.Body)
		}
	})

	t.Run("bad credentials fail before any request", func(t *testing.T) {
		ts := newTokenServer(t)
		c := newTestClient(nil)
		for name, mod := range map[string]func(*Credentials){
			"no client id": func(c *Credentials) { c.ClientID = "" },
			"no key":       func(c *Credentials) { c.Key = nil },
			"no token URL": func(c *Credentials) { c.TokenURL = "" },
			"relative URL": func(c *Credentials) { c.TokenURL = "/token" },
			"ftp URL":      func(c *Credentials) { c.TokenURL = "ftp://lms/token" },
		} {
			cred := ts.cred()
			mod(&cred)
			if _, err := c.Token(context.Background(), cred, []string{ltiwire.ScopeScore}); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if _, err := c.Token(context.Background(), ts.cred(), nil); err == nil {
			t.Error("no scopes: no error")
		}
		if ts.requests.Load() != 0 {
			t.Fatalf("%d requests", ts.requests.Load())
		}
	})
}

func TestTokenSingleFlight(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate = make(chan struct{})
	ts.entered = make(chan struct{}, 1)
	c := newTestClient(nil)
	const n = 100
	var wg sync.WaitGroup
	tokens := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			scopes := []string{ltiwire.ScopeScore, ltiwire.ScopeLineItem}
			if i%2 == 1 {
				scopes = []string{ltiwire.ScopeLineItem, ltiwire.ScopeScore} // same set
			}
			tokens[i], errs[i] = c.Token(context.Background(), ts.cred(), scopes)
		})
	}
	<-ts.entered
	time.Sleep(50 * time.Millisecond) // let the others line up behind the request
	close(ts.gate)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || tokens[i] != tokens[0] {
			t.Fatalf("caller %d: %q, %v", i, tokens[i], errs[i])
		}
	}
	if got := ts.requests.Load(); got != 1 {
		t.Fatalf("%d token requests for %d concurrent callers, want 1", got, n)
	}
}

func TestTokenWaiterHonoursItsContext(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate = make(chan struct{})
	defer close(ts.gate)
	c := newTestClient(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Token(ctx, ts.cred(), []string{ltiwire.ScopeScore})
	var ue *UpstreamError
	if !errors.As(err, &ue) || !ue.Timeout || ue.Op != "token" {
		t.Fatalf("err %#v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	// A caller that gives up is not an LMS failure.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = c.Token(ctx2, ts.cred(), []string{ltiwire.ScopeScore})
	if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
		t.Fatalf("cancelled: %#v", err)
	}
}

func TestTimeouts(t *testing.T) {
	hang := func(t *testing.T) *httptest.Server {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release); srv.Close() })
		return srv
	}

	t.Run("token endpoint", func(t *testing.T) {
		srv := hang(t)
		c := newTestClient(nil)
		c.timeout = 100 * time.Millisecond
		start := time.Now()
		_, err := c.Token(context.Background(), Credentials{ClientID: "c", TokenURL: srv.URL, KID: testKID, Key: toolKey}, []string{ltiwire.ScopeScore})
		var ue *UpstreamError
		if !errors.As(err, &ue) || !ue.Timeout || ue.Op != "token" {
			t.Fatalf("err %#v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
		if !strings.Contains(ue.Error(), "did not answer in time") {
			t.Fatalf("Error() %q", ue.Error())
		}
	})

	t.Run("service call", func(t *testing.T) {
		ts := newTokenServer(t)
		srv := hang(t)
		c := newTestClient(nil)
		c.timeout = 100 * time.Millisecond
		start := time.Now()
		_, err := c.Memberships(context.Background(), ts.cred(), srv.URL+"/memberships", MembersQuery{})
		var ue *UpstreamError
		if !errors.As(err, &ue) || !ue.Timeout || ue.Op != "memberships" {
			t.Fatalf("err %#v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})

	t.Run("http.Client timeout", func(t *testing.T) {
		ts := newTokenServer(t)
		srv := hang(t)
		c := NewClient(&http.Client{Timeout: 100 * time.Millisecond})
		if c.timeout != 100*time.Millisecond {
			t.Fatalf("per-call timeout %v", c.timeout)
		}
		_, err := c.Memberships(context.Background(), ts.cred(), srv.URL+"/memberships", MembersQuery{})
		var ue *UpstreamError
		if !errors.As(err, &ue) || !ue.Timeout {
			t.Fatalf("err %#v", err)
		}
	})
}

func TestDefaultHTTPClient(t *testing.T) {
	t.Run("User-Agent on every request", func(t *testing.T) {
		var mu sync.Mutex
		var agents []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			agents = append(agents, r.Header.Get("User-Agent"))
			mu.Unlock()
		}))
		defer srv.Close()
		c := NewClient(HTTPClient(testoutbound.Dev()))
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("User-Agent", "something-else")
		res, err := c.hc.Operator.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if req.Header.Get("User-Agent") != "something-else" {
			t.Fatal("the caller's request was modified")
		}
		res, err = c.hc.Operator.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		// A caller's own User-Agent is kept; one is added where there is none.
		if len(agents) != 2 || agents[0] != "something-else" || agents[1] != version.UserAgent() {
			t.Fatalf("agents %q", agents)
		}
		if c.hc.Operator.Timeout != 10*time.Second {
			t.Fatalf("timeout %v", c.hc.Operator.Timeout)
		}
	})

	t.Run("TLS is verified", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer srv.Close()
		_, err := NewClient(HTTPClient(testoutbound.Dev())).Token(context.Background(), Credentials{ClientID: "c", TokenURL: srv.URL, KID: testKID, Key: toolKey}, []string{ltiwire.ScopeScore})
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Status != 0 || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("self-signed certificate accepted or wrong error: %v", err)
		}
	})

	t.Run("redirects to another host are refused without following", func(t *testing.T) {
		ts := newTokenServer(t)
		evil := newCountingServer(t)
		lms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, evil.srv.URL+"/steal", http.StatusTemporaryRedirect)
		}))
		defer lms.Close()
		_, err := newTestClient(nil).Memberships(context.Background(), ts.cred(), lms.URL+"/memberships", MembersQuery{})
		if !errors.Is(err, ErrURLRefused) {
			t.Fatalf("err %v", err)
		}
		// Whatever client it is given, the Client does not follow either.
		_, err = NewClient(&http.Client{}).Memberships(context.Background(), ts.cred(), lms.URL+"/memberships", MembersQuery{})
		if !errors.Is(err, ErrForeignURL) {
			t.Fatalf("err %v", err)
		}
		if evil.requests.Load() != 0 {
			t.Fatal("the redirect was followed")
		}
	})
}

func TestTokenCacheIsBounded(t *testing.T) {
	ts := newTokenServer(t)
	c := newTestClient(nil)
	cred := ts.cred()
	c.mu.Lock()
	for i := range maxTokenEntries {
		cred.PlatformID = "p" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		h, _ := c.keyHash(&cred, []string{ltiwire.ScopeScore})
		c.tokens[h] = &tokenEntry{platformID: cred.PlatformID, scopes: []string{ltiwire.ScopeScore}, next: c.tokens[h]}
		c.ntokens++
	}
	c.mu.Unlock()
	mustToken(t, c, ts.cred(), ltiwire.ScopeScore) // sweeps the entries without a token
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ntokens != 1 || len(c.tokens) != 1 {
		t.Fatalf("%d entries after sweep", c.ntokens)
	}
}

// Issue #34 item 3: the token endpoint and services of a registration that dynamic
// registration wrote are called with the client of that source's policy, never the
// operator's broader one (here the operator's reaches the LMS on loopback); and each
// source's client gets the same-host redirect rule.
func TestCallsGoThroughTheClientOfTheRegistrationsSource(t *testing.T) {
	ts := newTokenServer(t)
	ns := newNRPSServer(t, ts, nil)
	ctx := context.Background()
	dynamic := ts.cred()
	dynamic.Source = outbound.SourceDynamicRegistration

	operatorOnly := NewClientBySource(outbound.Clients{Operator: HTTPClient(testoutbound.Dev())}) // dynamic: production policy
	if _, err := operatorOnly.Token(ctx, dynamic, []string{ltiwire.ScopeScore}); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("a dynamic registration's token under the operator's policy: %v", err)
	}
	if _, err := operatorOnly.Memberships(ctx, dynamic, ns.URL(), MembersQuery{}); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("a dynamic registration's memberships under the operator's policy: %v", err)
	}
	if n := len(ts.forms); n != 0 {
		t.Fatalf("the token endpoint received %d requests", n)
	}
	mustToken(t, operatorOnly, ts.cred(), ltiwire.ScopeScore)

	dynamicOnly := NewClientBySource(outbound.Clients{DynamicRegistration: HTTPClient(testoutbound.Dev())})
	mustToken(t, dynamicOnly, dynamic, ltiwire.ScopeScore)
	if _, err := dynamicOnly.Token(ctx, ts.cred(), []string{ltiwire.ScopeMembershipReadOnly}); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("the operator's registration under the production policy: %v", err)
	}

	evil := newCountingServer(t)
	lms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.srv.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer lms.Close()
	plain := NewClientBySource(outbound.Clients{DynamicRegistration: &http.Client{}})
	if _, err := plain.Memberships(ctx, dynamic, lms.URL+"/memberships", MembersQuery{}); !errors.Is(err, ErrForeignURL) || evil.requests.Load() != 0 {
		t.Fatalf("a redirect to another host with the dynamic registrations' client: %v, %d requests", err, evil.requests.Load())
	}
}
