package oauthbroker_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/handlers/oauthbroker"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// An OAuth2 token URL inside the network (or at the metadata service) gets neither the
// authorization code nor the client secret, and the failure echoes nothing of it.
func TestOAuthTokenURLOnInternalAddressRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	everything := testoutbound.Public()
	everything.AllowPrefixes = append(everything.AllowPrefixes, netip.MustParsePrefix("0.0.0.0/0"))
	for name, tc := range map[string]struct {
		policy   outbound.Policy
		tokenURL string
	}{
		"loopback":                         {testoutbound.Public(), internal.URL + "/token"},
		"metadata despite a broad range":   {everything, "http://169.254.169.254/latest/meta-data/"},
		"IPv6 metadata despite everything": {everything, "http://[fd00:ec2::254]/token"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(o *oauthbroker.Options) { o.HTTPClient = outbound.NewClient(tc.policy) })
			br := newBrowser(t)
			code, _ := h.code(t, br, "canvas", "")
			tok := h.accessToken(t, "canvas", code)
			cb := h.authorize(t, br, "canvas", "")
			h.configs["canvas"].TokenURL = tc.tokenURL
			res, body := br.get(t, cb)
			if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, httpapi.CodeURLNotAllowed) ||
				strings.Contains(body, "Jenkins") || strings.Contains(body, "169.254") || strings.Contains(body, "127.0.0.2") {
				t.Fatalf("code exchange: %d %s", res.StatusCode, body)
			}
			got := h.refresh(t, "canvas", tok.RefreshToken)
			if got.Status != http.StatusBadGateway || got.Details.Message != httpapi.CodeURLNotAllowed || got.Details.UpstreamBody != "" {
				t.Fatalf("refresh: %s", got.raw)
			}
		})
	}
	internal.Untouched(t)
}

// A token endpoint that redirects is not followed: the client secret would go along.
func TestOAuthTokenRedirectNotFollowed(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	redirector := testoutbound.NewRedirector(t, internal.URL+"/token")
	h := newHarness(t, func(o *oauthbroker.Options) { o.HTTPClient = outbound.NewClient(testoutbound.Dev()) })
	code, _ := h.code(t, newBrowser(t), "canvas", "")
	tok := h.accessToken(t, "canvas", code)
	h.configs["canvas"].TokenURL = redirector.URL + "/token"
	got := h.refresh(t, "canvas", tok.RefreshToken)
	if got.Status != http.StatusBadGateway || got.Details.Message != httpapi.CodeUpstream || got.Details.UpstreamStatus != http.StatusTemporaryRedirect {
		t.Fatalf("refresh: %s", got.raw)
	}
	internal.Untouched(t)
}
