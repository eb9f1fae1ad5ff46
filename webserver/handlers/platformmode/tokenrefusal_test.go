package platformmode_test

import (
	"context"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/test/utils/testmetrics"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// healthLog is the launch health the platform is given: what it was told, in order.
type healthLog struct {
	mu       sync.Mutex
	refusals []string // "tool step code"
}

func (l *healthLog) Launched(*registry.Tool) {}

func (l *healthLog) Refused(t *registry.Tool, step launchhealth.Step, code, _ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refusals = append(l.refusals, t.ID+" "+string(step)+" "+code)
}

func (l *healthLog) taken() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.refusals
	l.refusals = nil
	return out
}

// platformRequests reads ltiop_platform_requests_total{endpoint,outcome}.
func platformRequests(t *testing.T, endpoint, outcome string) float64 {
	t.Helper()
	return testmetrics.Value(t, "ltiop_platform_requests_total", map[string]string{"endpoint": endpoint, "outcome": outcome})
}

// Issue #34 item 4: a client assertion naming a registered tool but signed by a stranger
// (P-TOK-08) is anyone's request. It is refused, counted apart (endpoint token_unverified),
// and neither recorded on the tool's launch health nor counted in the tools' refusals that
// LtiopToolRequestsRefused watches (endpoint token). A refusal of an assertion the tool
// did sign still is both.
func TestTokenRefusalBeforeTheSignatureIsNotTheTools(t *testing.T) {
	h := newHarness(t, nil)
	health := &healthLog{}
	h.platform.SetHealth(health)
	ctx := context.Background()
	stranger := testkeys.RSAKey(t, 1)

	for _, tc := range []struct {
		name, code string
		opts       []toolsim.AssertionOption
	}{
		{"P-TOK-08 a stranger's key under the tool's kid", "INVALID_SIGNATURE", []toolsim.AssertionOption{toolsim.WithSigningKey(stranger)}},
		{"P-TOK-08 a stranger's key under its own kid", "UNKNOWN_KID",
			[]toolsim.AssertionOption{toolsim.WithSigningKey(stranger), toolsim.WithHeader("kid", "strangers-key")}},
		{"P-TOK-08 unsigned (alg none)", "INVALID_ALGORITHM", []toolsim.AssertionOption{toolsim.WithAlg("none")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools, apart := platformRequests(t, "token", tc.code), platformRequests(t, "token_unverified", tc.code)
			tr, status, err := h.tool.RequestTokenWith(ctx, []string{scopeNRPS}, tc.opts...)
			if err != nil || status != 401 || tr.Error != "invalid_client" || tr.AccessToken != "" {
				t.Fatalf("got %d %+v %v, want 401 invalid_client", status, tr, err)
			}
			if got := health.taken(); len(got) != 0 {
				t.Fatalf("recorded on the tool's launch health: %q", got)
			}
			if got := platformRequests(t, "token", tc.code); got != tools {
				t.Fatalf("counted as the tool's refusal (endpoint token): %v, was %v", got, tools)
			}
			if got := platformRequests(t, "token_unverified", tc.code); got != apart+1 {
				t.Fatalf("token_unverified %s: %v, want %v", tc.code, got, apart+1)
			}
		})
	}

	t.Run("P-TOK-05 an assertion the tool signed, addressed elsewhere", func(t *testing.T) {
		tools := platformRequests(t, "token", "AUDIENCE_MISMATCH")
		_, status, err := h.tool.RequestTokenWith(ctx, []string{scopeNRPS}, toolsim.WithClaim("aud", "https://elsewhere.example/token"))
		if err != nil || status != 401 {
			t.Fatalf("got %d %v, want 401", status, err)
		}
		if got := health.taken(); len(got) != 1 || got[0] != h.reg.Name+" token AUDIENCE_MISMATCH" {
			t.Fatalf("launch health told %q", got)
		}
		if got := platformRequests(t, "token", "AUDIENCE_MISMATCH"); got != tools+1 {
			t.Fatalf("token AUDIENCE_MISMATCH: %v, want %v", got, tools+1)
		}
	})
}

// The authorization endpoint's share of issue #34 item 4: an authorization request anyone
// can send, naming a tool's client_id with a forged redirect_uri or lti_message_hint, is
// counted apart (endpoint authorize_unverified, which LtiopToolRequestsRefused does not
// watch). A refusal of a request carrying the message hint ltiop issued for the tool's
// launch (P-AUTH-09: the login_hint changed on the way) still counts as the tool's.
func TestAuthorizeRefusalBeforeTheMessageHintIsCountedApart(t *testing.T) {
	h := newHarness(t, nil)
	health := &healthLog{}
	h.platform.SetHealth(health)
	genuine := h.login(h.createLaunch(platformmode.CreateLaunchRequest{User: "u1", ResourceLink: &ltiplatform.ResourceLink{ID: "rl"}}))
	forged := func(change func(url.Values)) url.Values {
		q := url.Values{}
		for k, v := range genuine {
			q[k] = slices.Clone(v)
		}
		change(q)
		return q
	}
	for _, tc := range []struct {
		name, code, endpoint string
		q                    url.Values
	}{
		{"P-AUTH-06 a redirect_uri the tool does not list", ltiplatform.CodeInvalidRedirectURI, "authorize_unverified",
			forged(func(q url.Values) { q.Set("redirect_uri", "https://phish.example/You-must-re-enter-your-password") })},
		{"P-AUTH-10 a message hint ltiop did not issue", ltiplatform.CodeInvalidMessageHint, "authorize_unverified",
			forged(func(q url.Values) { q.Set("lti_message_hint", "forged") })},
		{"P-AUTH-09 the launch's hint with another login_hint", ltiplatform.CodeLoginHintMismatch, "authorize",
			forged(func(q url.Values) { q.Set("login_hint", "someone-else") })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools, apart := platformRequests(t, "authorize", tc.code), platformRequests(t, "authorize_unverified", tc.code)
			res := h.authorize(tc.q, false)
			res.Body.Close()
			if got := health.taken(); len(got) != 1 || got[0] != h.reg.Name+" authorize "+tc.code {
				t.Fatalf("launch health told %q", got)
			}
			wantTools, wantApart := tools, apart
			if tc.endpoint == "authorize" {
				wantTools++
			} else {
				wantApart++
			}
			if got := platformRequests(t, "authorize", tc.code); got != wantTools {
				t.Fatalf("authorize %s: %v, want %v", tc.code, got, wantTools)
			}
			if got := platformRequests(t, "authorize_unverified", tc.code); got != wantApart {
				t.Fatalf("authorize_unverified %s: %v, want %v", tc.code, got, wantApart)
			}
		})
	}
}
