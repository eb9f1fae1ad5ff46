package app

import (
	"net/http"
	"net/netip"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
)

// outboundClients are the HTTP clients of every call ltiop makes to another host, all
// under one address policy (issue #13 §3): public addresses only; loopback in dev mode or
// with outboundAllowLoopback; private ranges only as listed (outboundAllowCidrs for the
// URLs of the operator's registrations, integratorAllowCidrs for the webhook,
// dynamicRegistration.allowCidrs for /lti/register and for the URLs of registrations
// dynamic registration wrote); cloud metadata never (unless listed exactly); every
// redirect re-checked; no proxy.
//
// The calls of registrations come in pairs of clients (outbound.Clients), one per source
// of their URLs (issue #34 §3): a registration's origin label picks the one its key set,
// token endpoint and services are fetched with.
type outboundClients struct {
	// dynReg is the policy of dynamic registration, whose URLs come from an
	// unauthenticated request (or from a tool registering itself): https unless in dev mode.
	// The URLs of a registration are checked against it when dynamic registration writes it.
	dynReg outbound.Policy
	// keySets fetches platforms' and tools' key sets.
	keySets outbound.Clients
	// checks calls the endpoints of a registration for POST /api/platforms/{id}/check.
	checks outbound.Clients
	// advantage carries tokens: LMS token endpoints, NRPS, AGS; same-host redirects only.
	advantage outbound.Clients
	// oauth is the OAuth2 broker's, which follows no redirect at all. Its URLs
	// (spec.oauth2) are the operator's: dynamic registration writes none.
	oauth *http.Client
	// assets downloads Asset Processor assets: advantage's policy, a longer timeout.
	assets outbound.Clients
	// webhook is the policy of notice deliveries to the integrator. Its URLs are configured
	// (notices.webhookUrl, spec.noticeWebhookUrl) and had their scheme checked there.
	webhook outbound.Policy
}

func newOutboundClients(cfg *config.Config) (outboundClients, error) {
	// Three allowances of private ranges, one per source of the URLs (issue #28 §2): the
	// LMSs' and tools' URLs of registrations, the integrator's webhook, and the URLs an
	// anonymous /lti/register hands over. Allowing one never opens the others.
	var allowed [3][]netip.Prefix
	for i, list := range [...][]string{cfg.OutboundAllowCIDRs, cfg.IntegratorAllowCIDRs, cfg.DynamicRegistration.AllowCIDRs} {
		var err error
		if allowed[i], err = outbound.ParsePrefixes(list); err != nil {
			return outboundClients{}, err
		}
	}
	base := outbound.Policy{AllowHTTP: cfg.DevMode, AllowLoopback: cfg.DevMode || cfg.OutboundAllowLoopback, AllowPrefixes: allowed[0]}
	// Registration-driven URLs (key sets, token endpoints, the platform's service URLs)
	// had their scheme checked where they were configured: http only in dev mode or for a
	// registration with spec.devMode. The guard checks their addresses, and never lets a
	// redirect step down from https to http.
	registered := base
	registered.AllowHTTP = true
	with := func(p outbound.Policy, target string) outbound.Policy { p.Target = target; return p }
	dynReg := with(base, outbound.TargetDynReg)
	dynReg.AllowPrefixes = allowed[2]
	webhook := with(registered, outbound.TargetWebhook)
	webhook.AllowPrefixes = allowed[1]
	// bySource makes the client of policy p for each source: the operator's registrations
	// under outboundAllowCidrs, those dynamic registration wrote under its own allowance.
	bySource := func(p outbound.Policy, client func(outbound.Policy) *http.Client) outbound.Clients {
		dynamic := p
		dynamic.AllowPrefixes = allowed[2]
		return outbound.Clients{Operator: client(p), DynamicRegistration: client(dynamic)}
	}
	return outboundClients{
		dynReg:    dynReg,
		keySets:   bySource(with(registered, outbound.TargetJWKS), outbound.NewClient),
		checks:    bySource(with(registered, outbound.TargetOther), outbound.NewClient),
		advantage: bySource(with(registered, outbound.TargetToken), advantage.HTTPClient),
		oauth:     outbound.NewClient(with(registered, outbound.TargetOAuth)),
		assets:    bySource(assetPolicy(registered, cfg), advantage.HTTPClient),
		webhook:   webhook,
	}, nil
}

// assetPolicy is the policy of asset downloads: the registered URLs' one, with the
// download timeout (an asset can be far larger than any other answer).
func assetPolicy(registered outbound.Policy, cfg *config.Config) outbound.Policy {
	registered.Target = outbound.TargetOther
	registered.Timeout = cfg.AssetProcessor.DownloadTimeoutOrDefault()
	return registered
}
