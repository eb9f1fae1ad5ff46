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
			for name, c := range map[string]*http.Client{"key sets": out.keySets, "advantage": out.advantage, "oauth": out.oauth, "dynreg": outbound.NewClient(out.dynReg)} {
				hits = 0
				res, err := c.Get(srv.URL)
				var oe *outbound.Error
				refused := errors.As(err, &oe)
				if err == nil {
					res.Body.Close()
				}
				// The test server speaks http, which dynamic registration takes in dev mode only.
				wantOK := tc.loopback && (name != "dynreg" || tc.cfg.DevMode)
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
		_, err := out.keySets.Get(u)
		if err == nil || !strings.Contains(err.Error(), "cloud metadata") {
			t.Errorf("%s: %v", u, err)
		}
	}

	if _, err := newOutboundClients(&config.Config{OutboundAllowCIDRs: []string{"not-a-range"}}); err == nil {
		t.Error("a bad range accepted")
	}
}
