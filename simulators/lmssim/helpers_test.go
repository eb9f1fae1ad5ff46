package lmssim_test

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

const deploymentClaim = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"

// testTool is a tool with RSA keys published at a JWKS URL.
type testTool struct {
	srv     *httptest.Server
	fetches atomic.Int32

	mu   sync.Mutex
	keys map[string]*rsa.PrivateKey // published keys by kid
	kid  string                     // the signing key
}

// testKey is shared fixture RSA key i (0 to 2).
func testKey(t testing.TB, i int) *rsa.PrivateKey { return testkeys.RSAKey(t, i) }

func newTestTool(t testing.TB) *testTool {
	tt := &testTool{keys: map[string]*rsa.PrivateKey{"tool-1": testKey(t, 0)}, kid: "tool-1"}
	tt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tt.fetches.Add(1)
		tt.mu.Lock()
		defer tt.mu.Unlock()
		set := jwk.NewSet()
		for kid, k := range tt.keys {
			pub, err := jwk.Import(&k.PublicKey)
			if err != nil {
				panic(err)
			}
			_ = pub.Set(jwk.KeyIDKey, kid)
			_ = set.AddKey(pub)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(tt.srv.Close)
	return tt
}

// rotate publishes a new signing key under kid.
func (tt *testTool) rotate(kid string, key *rsa.PrivateKey) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.keys[kid], tt.kid = key, kid
}

// signWith signs claims with key under the header h (alg defaults to RS256).
func signWith(t testing.TB, key any, alg jwa.SignatureAlgorithm, claims, h map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	headers := jws.NewHeaders()
	for k, v := range h {
		if v != nil {
			if err := headers.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(headers)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (tt *testTool) sign(t testing.TB, claims, h map[string]any) string {
	tt.mu.Lock()
	key := tt.keys[tt.kid]
	tt.mu.Unlock()
	return signWith(t, key, jwa.RS256(), claims, h)
}

func (tt *testTool) header() map[string]any {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return map[string]any{"kid": tt.kid, "typ": "JWT"}
}

// rig is a simulated LMS with services enabled, and a tool it trusts.
type rig struct {
	lms  *lmssim.LMS
	srv  *httptest.Server
	tool *testTool
}

func newRig(t testing.TB, configure ...func(*lmssim.LMS)) *rig {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	lms, err := lmssim.New(srv.URL, "client-1", "deployment-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configure {
		c(lms)
	}
	srv.Config.Handler = lms.Handler()
	tool := newTestTool(t)
	lms.EnableServices(tool.srv.URL)
	return &rig{lms: lms, srv: srv, tool: tool}
}

// assertionClaims are valid client assertion claims.
func (r *rig) assertionClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": r.lms.ClientID, "sub": r.lms.ClientID, "aud": r.lms.Issuer + lmssim.TokenPath,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": fmt.Sprintf("jti-%d", jtiCount.Add(1)),
		deploymentClaim: r.lms.DeploymentID,
	}
}

var jtiCount atomic.Int64

// tokenForm is a valid token request for scopes, the assertion changed by mutate.
func (r *rig) tokenForm(t testing.TB, mutate func(claims, header map[string]any), scopes ...string) url.Values {
	c, h := r.assertionClaims(), r.tool.header()
	if mutate != nil {
		mutate(c, h)
	}
	return url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {lmssim.ClientAssertionType},
		"client_assertion":      {r.tool.sign(t, c, h)},
		"scope":                 {strings.Join(scopes, " ")},
	}
}

type reply struct {
	Status int
	Header http.Header
	Body   string
}

func (rp reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(rp.Body), &m); err != nil {
		t.Fatalf("not a JSON object (HTTP %d): %s", rp.Status, rp.Body)
	}
	return m
}

func (rp reply) list(t testing.TB) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal([]byte(rp.Body), &l); err != nil {
		t.Fatalf("not a JSON array (HTTP %d): %s", rp.Status, rp.Body)
	}
	return l
}

func send(t testing.TB, method, u string, header map[string]string, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}

func (r *rig) postToken(t testing.TB, form url.Values) reply {
	t.Helper()
	return send(t, "POST", r.lms.Issuer+lmssim.TokenPath,
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, form.Encode())
}

// token gets an access token for scopes (all scopes when none are given).
func (r *rig) token(t testing.TB, scopes ...string) string {
	t.Helper()
	if len(scopes) == 0 {
		scopes = lmssim.AllScopes()
	}
	res := r.postToken(t, r.tokenForm(t, nil, scopes...))
	if res.Status != 200 {
		t.Fatalf("token: HTTP %d: %s", res.Status, res.Body)
	}
	return res.json(t)["access_token"].(string)
}

// call sends an authorized request to the LMS.
func call(t testing.TB, method, u, token string, header map[string]string, body string) reply {
	t.Helper()
	h := maps.Clone(header)
	if h == nil {
		h = map[string]string{}
	}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return send(t, method, u, h, body)
}

// nextLink reads the rel="next" URL of a Link header.
func nextLink(t testing.TB, h http.Header) string {
	t.Helper()
	v := h.Get("Link")
	if v == "" {
		return ""
	}
	target, params, ok := strings.Cut(v, ";")
	if !ok || strings.TrimSpace(params) != `rel="next"` {
		t.Fatalf("unexpected Link header %q", v)
	}
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
}
