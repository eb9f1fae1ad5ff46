package toolmode

import (
	"net/http"
	"strings"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
)

// CodeLTI11SecretMissing means the registration names a shared-secret Secret the web server
// cannot read (absent, unlabelled, or without the data key). An operator's fix, so 503.
const CodeLTI11SecretMissing = "LTI11_SECRET_NOT_AVAILABLE"

// launch11 serves an LTI 1.1 basic launch posted to /lti/launch, the URL LMS
// administrators already have: OAuth 1.0a checked against the registration holding the
// consumer key, the nonce used once, then an ltik like any launch. No browser binding
// exists in 1.1: the signature and the single-use nonce are the whole defence.
func (t *Tool) launch11(w http.ResponseWriter, r *http.Request) {
	ps := lti11.Params{}.FromValues(r.PostForm).FromValues(r.URL.Query())
	if h := r.Header.Get("Authorization"); h != "" {
		if oauth, ok := lti11.ParseAuthorization(h); ok {
			ps = append(ps, oauth...)
		}
	}
	if err := lti11.CheckLaunch(ps); err != nil {
		t.fail(w, r, err)
		return
	}
	if err := lti11.RequireOAuth(ps); err != nil {
		t.fail(w, r, err)
		return
	}
	holders := t.registry.ConsumerKeyHolders(ps.Get("oauth_consumer_key"))
	if len(holders) > 1 { // LTI11-KEY-03: told to every holder's launch health
		e := lti11.ErrAmbiguousConsumerKey()
		for _, h := range holders[1:] {
			t.noteRefusal(h, e)
		}
		t.refuse(w, r, holders[0], e)
		return
	}
	if len(holders) == 0 || !usable(holders[0]) { // LTI11-KEY-01
		t.fail(w, r, lti11.ErrUnknownConsumerKey())
		return
	}
	p := holders[0]
	httpapi.NotePlatform(r.Context(), p.ID)
	secret, ok := t.registry.LTI11Secret(p)
	if !ok {
		t.refuse(w, r, p, httpapi.Errorf(http.StatusServiceUnavailable, CodeLTI11SecretMissing,
			"The registration's LTI 1.1 shared secret is not readable: its Secret must exist, hold the key named in spec.lti11.sharedSecret and carry the label app.kubernetes.io/managed-by=ltiop."))
		return
	}
	now := t.now()
	launchURL := t.launch11URL()
	signed := launchURL
	if r.URL.RawQuery != "" {
		signed += "?" + r.URL.RawQuery
	}
	if err := lti11.Verify(lti11.Request{Method: r.Method, URL: signed, Params: ps}, secret, now); err != nil {
		t.refuse(w, r, p, err)
		return
	}
	// Recorded only once the signature holds: an unsigned request grows nothing.
	if first, err := t.replay.Use(r.Context(), lti11.NonceKey(ps), now.Add(lti11.NonceTTL), now); err != nil {
		t.refuse(w, r, p, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first { // LTI11-NONCE-01
		t.refuse(w, r, p, lti11.ErrNonceReused())
		return
	}

	// The target is the URL the LMS launched, query included, as /api/idtoken shows it.
	// Unlike a 1.3 target_link_uri its query is not carried to the integrator's page:
	// OAuth 1.0a signs the parameters, not whether each came in the query or the body, so
	// whoever holds a signed form could move parameters into that URL or out of it.
	raw := lti11.Claims(ps, lti11.Origin{Issuer: string(p.Spec.URL), ClientID: p.Spec.ClientID, TargetLinkURI: signed})
	claims, err := lti.ParseValidatedClaims(raw)
	if err != nil {
		t.refuse(w, r, p, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The launch could not be recorded."))
		return
	}
	base, herr := t.destinationBase(claims.MessageType)
	if herr != nil {
		t.refuse(w, r, p, herr)
		return
	}
	ltik, herr := t.handOff("launch11", p, claims, signed, lti11.Version)
	if herr != nil {
		t.refuse(w, r, p, herr)
		return
	}
	if t.opts.Health != nil {
		t.opts.Health.Launched(p)
	}
	httpapi.Redirect(w, withLtik(base.String(), ltik), http.StatusSeeOther)
}

// launch11URL is the launch URL as the LMS was given it (status.launchUrl): ltiop's public
// URL, never the Host header, which a proxy rewrites.
func (t *Tool) launch11URL() string {
	return strings.TrimRight(t.opts.PublicURL, "/") + paths.Launch
}
