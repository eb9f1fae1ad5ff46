package app

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/outbound"
)

// Every outbound client of the composition root follows the one configured policy:
// loopback only in dev mode or with outboundAllowLoopback, metadata never.
func TestOutboundClientsFollowTheConfiguredPolicy(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()

	for _, tc := range []struct {
		name     string
		cfg      config.Config
		loopback bool
	}{
		{"production", config.Config{}, false},
		{"a range that does not cover loopback", config.Config{OutboundAllowCIDRs: []string{"10.0.0.0/8"}}, false},
		{"dev mode", config.Config{DevMode: true}, true},
		{"outboundAllowLoopback", config.Config{OutboundAllowLoopback: true}, true},
		{"outboundAllowCidrs", config.Config{OutboundAllowCIDRs: []string{"127.0.0.1"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := newOutboundClients(&tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]*http.Client{"key sets": out.keySets.Operator, "advantage": out.advantage.Operator, "oauth": out.oauth,
				"dynreg": outbound.NewClient(out.dynReg), "dynamic registrations' key sets": out.keySets.DynamicRegistration} {
				hits = 0
				res, err := c.Get(srv.URL)
				var oe *outbound.Error
				refused := errors.As(err, &oe)
				if err == nil {
					res.Body.Close()
				}
				// The test server speaks http, which dynamic registration takes in dev mode only;
				// outboundAllowCidrs never opens the registrations dynamic registration wrote.
				wantOK := tc.loopback && (name != "dynreg" || tc.cfg.DevMode) &&
					(name != "dynamic registrations' key sets" || tc.cfg.OutboundAllowCIDRs == nil)
				if wantOK != (err == nil) || (!wantOK && (!refused || hits != 0)) {
					t.Errorf("%s: err %v, %d hits, want allowed %v", name, err, hits, wantOK)
				}
			}
		})
	}

	// Metadata stays refused whatever the ranges say.
	out, err := newOutboundClients(&config.Config{DevMode: true, OutboundAllowCIDRs: []string{"0.0.0.0/0", "::/0"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/"} {
		_, err := out.keySets.Operator.Get(u)
		if err == nil || !strings.Contains(err.Error(), "cloud metadata") {
			t.Errorf("%s: %v", u, err)
		}
	}

	if _, err := newOutboundClients(&config.Config{OutboundAllowCIDRs: []string{"not-a-range"}}); err == nil {
		t.Error("a bad range accepted")
	}
}

// The attack of issue #28 item 2: the operator allows the range of an in-cluster
// integrator (here loopback stands for the Service CIDR) so that the notice webhook reaches
// it; an anonymous /lti/register must still not make ltiop connect into that range, nor
// may the URLs of registrations. Dynamic registration reaches a private range only by a
// setting of its own. Issue #34 item 3: the URLs of the registrations dynamic registration
// wrote are fetched later under that setting too, never under outboundAllowCidrs.
func TestWebhookAllowanceDoesNotOpenDynamicRegistration(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	// The test server speaks http; the scheme is not what these cases are about.
	plain := func(p outbound.Policy) *http.Client { p.AllowHTTP = true; return outbound.NewClient(p) }

	for _, tc := range []struct {
		name                       string
		cfg                        config.Config
		webhook, dynreg, lmsFacing bool // reached; dynreg also by dynamic registrations' URLs later
	}{
		{"the integrator's range", config.Config{IntegratorAllowCIDRs: []string{"127.0.0.1/32"}}, true, false, false},
		{"outboundAllowCidrs (on-premises LMSs)", config.Config{OutboundAllowCIDRs: []string{"127.0.0.1/32"}}, false, false, true},
		{"dynamicRegistration.allowCidrs", config.Config{DynamicRegistration: config.DynamicRegistration{AllowCIDRs: []string{"127.0.0.1"}}}, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := newOutboundClients(&tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]struct {
				client *http.Client
				want   bool
			}{
				"webhook": {plain(out.webhook), tc.webhook}, "dynreg": {plain(out.dynReg), tc.dynreg},
				"key sets": {out.keySets.Operator, tc.lmsFacing}, "advantage": {out.advantage.Operator, tc.lmsFacing},
				"oauth": {out.oauth, tc.lmsFacing}, "assets": {out.assets.Operator, tc.lmsFacing}, "checks": {out.checks.Operator, tc.lmsFacing},
				"dynamic registrations' key sets":            {out.keySets.DynamicRegistration, tc.dynreg},
				"dynamic registrations' tokens and services": {out.advantage.DynamicRegistration, tc.dynreg},
				"dynamic registrations' assets":              {out.assets.DynamicRegistration, tc.dynreg},
				"dynamic registrations' checks":              {out.checks.DynamicRegistration, tc.dynreg},
			} {
				hits = 0
				res, err := c.client.Get(srv.URL)
				if err == nil {
					res.Body.Close()
				}
				var oe *outbound.Error
				if c.want != (err == nil && hits == 1) || (!c.want && (!errors.As(err, &oe) || hits != 0)) {
					t.Errorf("%s: err %v, %d hits, want reached %v", name, err, hits, c.want)
				}
			}
		})
	}
}
