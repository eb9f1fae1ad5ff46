package toolmode_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// publicRig is a rig whose LTI Advantage client runs the outbound policy of production,
// with the LMS on 127.0.0.1 standing for a public address.
func publicRig(t *testing.T, p outbound.Policy) *rig {
	return newRig(t, func(c *rigConfig) {
		c.services = true
		c.http = advantage.HTTPClient(p)
	})
}

// wantNotEchoed asserts a refusal: its code, nothing of the internal host's page in it.
func wantNotEchoed(t *testing.T, res testhttp.Reply, status int, code string) {
	t.Helper()
	testhttp.WantRefusal(t, res, status, code)
	for _, leak := range []string{"Jenkins", "hunter2", "10.0.0.7", "127.0.0.2", "169.254"} {
		if strings.Contains(string(res.Body), leak) {
			t.Fatalf("the answer echoes %q: %s", leak, res.Body)
		}
	}
}

// The NRPS and AGS URLs of a launch come from the platform: when they point inside the
// network, nothing is sent there, the token included, and the integrator learns only
// URL_NOT_ALLOWED.
func TestServiceURLsFromTheLaunchOnInternalAddressesRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	rg := publicRig(t, testoutbound.Public())
	ltik := rg.launchWith(t, func(c map[string]any) {
		c[claimNRPS].(map[string]any)["context_memberships_url"] = internal.URL + "/memberships"
		ags := c[claimAGS].(map[string]any)
		ags["lineitems"] = internal.URL + "/lineitems"
		ags["lineitem"] = internal.URL + "/lineitems/1"
	})
	unchanged := wantUnchanged(t, rg)
	score := map[string]any{"userId": "u", "activityProgress": "Completed", "gradingProgress": "FullyGraded"}
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"memberships", "GET", "/api/memberships", nil},
		{"line items", "GET", "/api/lineitems", nil},
		{"a new line item", "POST", "/api/lineitems", map[string]any{"label": "x", "scoreMaximum": 1}},
		{"a score", "POST", itemPath(internal.URL+"/lineitems/1") + "/scores", score},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantNotEchoed(t, rg.call(t, nil, tc.method, tc.path, ltikAuth(ltik), tc.body), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
		})
	}
	internal.Untouched(t)
	unchanged()
}

// The cloud metadata service is never reached, even when the allowed ranges cover every
// address.
func TestServiceURLOnMetadataAddressRefusedDespiteBroadRanges(t *testing.T) {
	everything := testoutbound.Public()
	everything.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
	rg := publicRig(t, everything)
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/iam/security-credentials/", "http://[fd00:ec2::254]/latest/"} {
		ltik := rg.launchWith(t, func(c map[string]any) {
			c[claimNRPS].(map[string]any)["context_memberships_url"] = u
		})
		wantNotEchoed(t, rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
	}
}

// A token URL inside the network gets no client assertion.
func TestTokenURLOnInternalAddressRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	rg := publicRig(t, testoutbound.Public())
	rg.update(func(pr *ltiv1.PlatformRegistration) {
		pr.Spec.AccesstokenEndpoint = ltiv1.EndpointURL(internal.URL + lmssim.TokenPath)
	})
	ltik := rg.launchWith(t, nil)
	wantNotEchoed(t, rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
	internal.Untouched(t)
}

// A public service that redirects inside is refused at the redirect.
func TestServiceRedirectToInternalAddressRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	rg := publicRig(t, testoutbound.Public())
	ltik := rg.launchWith(t, nil)
	rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != lmssim.MembershipsPath {
			return false
		}
		http.Redirect(w, r, internal.URL+"/memberships", http.StatusFound)
		return true
	})
	wantNotEchoed(t, rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
	internal.Untouched(t)
}

// The bearer token (and a token request's client assertion) stay on the platform's host:
// a redirect to another host, public or not, is not followed.
func TestTokenBearingRedirectToAnotherHostRefused(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer other.Close()
	for _, path := range []string{lmssim.MembershipsPath, lmssim.TokenPath} {
		t.Run(path, func(t *testing.T) {
			rg := publicRig(t, testoutbound.Dev())
			ltik := rg.launchWith(t, nil)
			rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != path {
					return false
				}
				http.Redirect(w, r, other.URL+path, http.StatusTemporaryRedirect)
				return true
			})
			wantNotEchoed(t, rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
		})
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the other host received %d requests", n)
	}
}

// What the platform answers on failure reaches the integrator only as its JSON error
// fields: an internal page (HTML, text) is never echoed.
func TestUpstreamBodiesNotEchoed(t *testing.T) {
	rg := publicRig(t, testoutbound.Dev())
	ltik := rg.launchWith(t, nil)
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"an HTML page", "text/html", testoutbound.InternalBody, ""},
		{"plain text", "text/plain", "ami-id\ninstance-id\nsecret=hunter2", ""},
		{"a JSON error", "application/json", `{"error":"invalid_request","message":"bad limit","debug":"hunter2 at 10.0.0.7"}`,
			`{"error":"invalid_request","message":"bad limit"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != lmssim.MembershipsPath {
					return false
				}
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, tc.body)
				return true
			})
			res := rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil)
			wantNotEchoed(t, res, http.StatusBadGateway, httpapi.CodeUpstream)
			details := res.JSON(t)["details"].(map[string]any)
			if got, _ := details["upstreamBody"].(string); got != tc.want || details["upstreamStatus"] != float64(500) {
				t.Fatalf("details %v, want upstreamBody %q", details, tc.want)
			}
		})
	}
}

// The attack of issue #34 item 3: the operator's allowance reaches the LMS (127.0.0.1
// stands for an on-premises range in outboundAllowCidrs), and a registration dynamic
// registration wrote (its origin label) names URLs there. Its token endpoint, services and
// key set are called under dynamic registration's policy, which the rig leaves at the
// production one: no client assertion is sent, and no launch verifies with its key set.
func TestDynamicRegistrationNotCalledUnderTheOperatorsAllowance(t *testing.T) {
	rg := publicRig(t, testoutbound.Public())
	ltik := rg.launchWith(t, nil) // while the operator's: its key set was fetched and cached
	var tokenRequests atomic.Int32
	rg.interceptLMS(t, func(_ http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == lmssim.TokenPath {
			tokenRequests.Add(1)
		}
		return false
	})
	rg.update(func(pr *ltiv1.PlatformRegistration) {
		pr.Labels = map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration}
	})

	wantNotEchoed(t, rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
	if n := tokenRequests.Load(); n != 0 {
		t.Fatalf("the token endpoint received %d requests", n)
	}
	client := browser()
	ar := rg.startLogin(t, client, nil)
	testhttp.WantRefusal(t, rg.postLaunch(t, client, rg.sign(t, rg.claims(ar)), ar.State), http.StatusServiceUnavailable, lti.CodeKeySetUnavailable)
}
