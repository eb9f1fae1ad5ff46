package toolmode

import (
	"context"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// pendingLaunch is sealed into the platform-storage check page: the validated launch
// waits there until the page proves the browser holds the login's binding value.
type pendingLaunch struct {
	Ltik        string `json:"l"`
	Destination string `json:"d"`
	Bind        string `json:"b"`
}

// Launch serves POST /lti/launch: the OIDC authentication response (conformance §1.3–§1.5).
func (t *Tool) Launch(w http.ResponseWriter, r *http.Request) {
	if err := httpapi.ParseForm(r); err != nil {
		t.fail(w, r, httpapi.Errorf(http.StatusBadRequest, lti.CodeMissingIDToken, "The launch request could not be read."))
		return
	}
	if lti11.IsLaunch(r.PostForm) { // an LTI 1.1 launch to the same URL (launch11.go)
		t.launch11(w, r)
		return
	}
	if e := r.PostForm.Get("error"); e != "" { // T-TOK-02: an OIDC error response, not a launch
		t.fail(w, r, httpapi.Errorf(http.StatusBadRequest, lti.CodePlatformError,
			fmt.Sprintf("The platform refused the launch: %s %s", e, r.PostForm.Get("error_description"))))
		return
	}
	idToken, rawState := r.PostForm.Get("id_token"), r.PostForm.Get("state")
	if idToken == "" { // T-TOK-01
		t.fail(w, r, httpapi.Errorf(http.StatusBadRequest, lti.CodeMissingIDToken, "The launch carries no id_token."))
		return
	}
	if rawState == "" { // T-STATE-01
		t.fail(w, r, httpapi.Errorf(http.StatusBadRequest, lti.CodeMissingState, "The launch carries no state."))
		return
	}
	now := t.now()
	payload, stateID, err := t.keyring.Open(sessions.PurposeState, rawState, now)
	if err != nil {
		if errors.Is(err, sessions.ErrExpired) { // T-STATE-03
			t.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, lti.CodeStateExpired, "The login took too long; launch again from the platform."))
		} else {
			t.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, lti.CodeInvalidState, "The state is not one this tool issued."))
		}
		return
	}
	st, ok := decodeLoginState(payload)
	if !ok {
		t.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, lti.CodeInvalidState, "The state is not one this tool issued."))
		return
	}
	httpapi.NotePlatform(r.Context(), st.PlatformID)

	// Browser binding (T-STATE-02): the cookie set at login, or else platform storage.
	cookieBound := false
	if c, err := r.Cookie(bindingCookie(st.ID)); err == nil {
		cookieBound = subtle.ConstantTimeCompare([]byte(c.Value), []byte(st.Bind)) == 1
	}
	if !cookieBound && st.Storage == "" {
		t.refuse(w, r, t.known(st), httpapi.Errorf(http.StatusUnauthorized, lti.CodeBrowserBinding,
			"This browser did not start the login (no matching state cookie). Allow cookies for the tool, or launch again."))
		return
	}

	p := t.registry.Get(st.PlatformID)
	if p == nil || string(p.UID) != st.PlatformUID || !usable(p) {
		t.fail(w, r, httpapi.Errorf(http.StatusBadRequest, lti.CodeUnregistered,
			"This platform is not registered with the tool, or its registration is inactive."))
		return
	}
	claims, verr := lti.Validate(r.Context(), idToken, t.keyFunc(p), lti.Policy{
		Issuer:                string(p.Spec.URL),
		ClientID:              p.Spec.ClientID,
		DeploymentIDs:         p.Spec.DeploymentIDs,
		ExpectedNonce:         st.Nonce,
		ExpectedDeploymentID:  st.DeploymentID,
		ExpectedTargetLinkURI: st.TargetLinkURI,
		Now:                   now,
		Skew:                  max(t.opts.ClockSkew, time.Nanosecond), // zero means none, not the default
	})
	if verr != nil {
		t.refuse(w, r, p, verr)
		return
	}

	// Single use, checked last so a launch that failed for an outage can be retried.
	// A use that could not be recorded refuses the launch (503): never accepted unrecorded.
	if first, err := t.replay.Use(r.Context(), "state:"+stateID, now.Add(stateTTL), now); err != nil {
		t.refuse(w, r, p, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first { // T-STATE-03
		t.refuse(w, r, p, httpapi.Errorf(http.StatusUnauthorized, lti.CodeStateReused, "This login was already used; launch again from the platform."))
		return
	}
	if first, err := t.replay.Use(r.Context(), "nonce:"+claims.Issuer+"\x00"+claims.Nonce, now.Add(stateTTL), now); err != nil {
		t.refuse(w, r, p, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first { // T-NONCE-03
		t.refuse(w, r, p, httpapi.Errorf(http.StatusUnauthorized, lti.CodeNonceReused, "This id_token was already used."))
		return
	}

	destination, herr := t.destination(claims)
	if herr != nil {
		t.refuse(w, r, p, herr)
		return
	}
	ltik, herr := t.handOff("launch", p, claims, st.TargetLinkURI, "")
	if herr != nil {
		t.refuse(w, r, p, herr)
		return
	}
	target := withLtik(destination, ltik)
	if t.opts.Health != nil {
		t.opts.Health.Launched(p)
	}
	if t.opts.Deployments != nil {
		t.opts.Deployments.RecordDeployment(p, claims.DeploymentID)
	}
	if cookieBound {
		http.SetCookie(w, &http.Cookie{Name: bindingCookie(st.ID), Path: "/lti/", MaxAge: -1}) //nolint:gosec // G124: deletes the binding cookie (MaxAge -1, no value)
		httpapi.Redirect(w, target, http.StatusSeeOther)
		return
	}
	// No cookie came back: prove the binding from platform storage first (conformance §7).
	pending, _ := json.Marshal(pendingLaunch{Ltik: ltik, Destination: destination, Bind: st.Bind})
	sealed, err := t.keyring.Seal(sessions.PurposePendingLaunch, pending, pendingTTL)
	if err != nil {
		t.refuse(w, r, p, sessions.ErrSealingNotReady)
		return
	}
	t.renderStorageLaunch(w, st, sealed)
}

// renderStorageLaunch is the page that reads the binding value back from platform storage
// and posts it, with the sealed pending launch, to LaunchComplete.
func (t *Tool) renderStorageLaunch(w http.ResponseWriter, st loginState, pending string) {
	launchesTotal.WithLabelValues("launch", "storage_check").Inc()
	t.render(w, http.StatusOK, "storage_launch.html", map[string]any{
		"Target": st.Storage, "Origin": st.StorageOrigin, "Key": storageKeyPrefix + st.ID,
		"Pending": pending, "Action": t.opts.PublicURL + paths.LaunchComplete,
	})
}

// LaunchComplete serves POST /lti/launch/complete: the platform-storage check page posts
// the value it read back; a match hands the launch to the integrator (T-PS-02).
func (t *Tool) LaunchComplete(w http.ResponseWriter, r *http.Request) {
	// Only ltiop's storage-check page posts here. From any other site this is login CSRF:
	// an attacker's own pending launch, posted by the victim's browser, would sign the
	// victim in as the attacker.
	if !t.sameOrigin(r) {
		t.fail(w, r, httpapi.Errorf(http.StatusForbidden, lti.CodeCrossSiteRequest,
			"This form can only be sent by ltiop's own page; launch again from your LMS."))
		return
	}
	if err := r.ParseForm(); err != nil {
		t.fail(w, r, httpapi.Errorf(http.StatusBadRequest, lti.CodeBrowserBinding, "The request could not be read."))
		return
	}
	payload, id, err := t.keyring.Open(sessions.PurposePendingLaunch, r.PostForm.Get("pending"), t.now())
	var pl pendingLaunch
	if err == nil {
		err = json.Unmarshal(payload, &pl)
	}
	if err != nil || pl.Ltik == "" {
		t.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, lti.CodeInvalidState, "The launch expired or is not one this tool issued; launch again."))
		return
	}
	value := r.PostForm.Get("value")
	if subtle.ConstantTimeCompare([]byte(value), []byte(pl.Bind)) != 1 {
		t.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, lti.CodeBrowserBinding,
			"This browser did not start the login (platform storage does not hold its state)."))
		return
	}
	now := t.now()
	if first, err := t.replay.Use(r.Context(), "pending:"+id, now.Add(pendingTTL), now); err != nil {
		t.fail(w, r, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		t.fail(w, r, httpapi.Errorf(http.StatusUnauthorized, lti.CodeStateReused, "This launch was already completed."))
		return
	}
	launchesTotal.WithLabelValues("storage_check", "ok").Inc()
	httpapi.Redirect(w, withLtik(pl.Destination, pl.Ltik), http.StatusSeeOther)
}

// known is the registration of a login state while it is the one that issued it.
func (t *Tool) known(st loginState) *registry.Platform {
	if p := t.registry.Get(st.PlatformID); p != nil && string(p.UID) == st.PlatformUID {
		return p
	}
	return nil
}

// keyFunc is the validator's view of platform p's keys.
func (t *Tool) keyFunc(p *registry.Platform) lti.KeyFunc {
	return func(ctx context.Context, kid string) (*rsa.PublicKey, error) { return t.keys.PlatformKey(ctx, p, kid) }
}

// sameOrigin reports whether r was sent by a page of ltiop's own origin. Every current
// browser says so in Sec-Fetch-Site; where that header is absent, Origin must be the public
// origin. A request with neither is refused: only browsers post to these endpoints.
func (t *Tool) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	return r.Header.Get("Origin") == t.origin
}
