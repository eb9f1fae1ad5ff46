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
// registrations' URLs, integratorAllowCidrs for the webhook, dynamicRegistration.allowCidrs
// for /lti/register); cloud metadata never (unless listed exactly); every redirect
// re-checked; no proxy.
type outboundClients struct {
	// dynReg is the policy of dynamic registration, whose URLs come from an
	// unauthenticated request: https unless in dev mode.
	dynReg outbound.Policy
	// keySets fetches platforms' and tools' key sets.
	keySets *http.Client
	// checks calls the endpoints of a registration for POST /api/platforms/{id}/check.
	checks *http.Client
	// advantage carries tokens: LMS token endpoints, NRPS, AGS; same-host redirects only.
	advantage *http.Client
	// oauth is the OAuth2 broker's, which follows no redirect at all.
	oauth *http.Client
	// assets downloads Asset Processor assets: advantage's policy, a longer timeout.
	assets *http.Client
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
	return outboundClients{
		dynReg:    dynReg,
		keySets:   outbound.NewClient(with(registered, outbound.TargetJWKS)),
		checks:    outbound.NewClient(with(registered, outbound.TargetOther)),
		advantage: advantage.HTTPClient(with(registered, outbound.TargetToken)),
		oauth:     outbound.NewClient(with(registered, outbound.TargetOAuth)),
		assets:    advantage.HTTPClient(assetPolicy(registered, cfg)),
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
