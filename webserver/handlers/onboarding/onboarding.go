// Package onboarding brings learning platforms in: LTI dynamic registration at
// /lti/register (with optional pre-approval by the integrator through /api/registrations),
// the Canvas developer-key configuration at /register/canvas, and deployments learnt from
// launches. It writes PlatformRegistrations through the API server.
package onboarding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver/clients/dynreg"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/writes"
)

// pendingTTL bounds how long a registration may wait for the integrator's approval.
const pendingTTL = time.Hour

// Options configure onboarding.
type Options struct {
	Tool           dynreg.ToolConfig
	Namespace      string
	AutoActivate   bool
	PreApprovalURL string
	Outbound       outbound.Policy
	// MaxPending bounds the dynamic registrations awaiting activation that /lti/register
	// may write; 0 means no bound (embedded use; the configuration always sets one).
	MaxPending int
	// RegistrationToken, when set, is required: registration happens only at
	// /lti/register/{token}, and /lti/register refuses.
	RegistrationToken TokenChecker
}

// TokenChecker compares a presented registration token with the configured one in
// constant time (httpapi.APIKey does, reading it from a Secret).
type TokenChecker interface {
	Check(presented string) *httpapi.Error
}

// Onboarding serves the onboarding endpoints.
type Onboarding struct {
	opts     Options
	registry *registry.Registry
	writer   client.Client
	keyring  *sessions.Keyring
	http     *http.Client
	used     replay.Store // completed pre-approvals
	now      func() time.Time

	learning sync.Map // "uid/deployment" being recorded, so a burst of launches writes once
	bound    *pendingBound
}

// New returns the onboarding handlers. used records the single use of pre-approved
// registrations.
func New(opts Options, reg *registry.Registry, writer client.Client, keyring *sessions.Keyring, used replay.Store) *Onboarding {
	o := &Onboarding{opts: opts, registry: reg, writer: writer, keyring: keyring,
		http: outbound.NewClient(opts.Outbound), used: used, now: time.Now}
	o.bound = &pendingBound{max: opts.MaxPending, registry: reg, now: func() time.Time { return o.now() },
		unseen: map[string]time.Time{}}
	return o
}

// pending is a registration waiting for the integrator's approval (sealed in its id).
type pending struct {
	ConfigURL string          `json:"u"`
	Token     string          `json:"t,omitempty"`
	Config    json.RawMessage `json:"c"`
}

// Register serves GET /lti/register, opened by the LMS in an iframe or popup with
// openid_configuration and registration_token (conformance §6).
func (o *Onboarding) Register(w http.ResponseWriter, r *http.Request) {
	if o.opts.RegistrationToken != nil {
		o.fail(w, r, httpapi.Errorf(http.StatusForbidden, "REGISTRATION_TOKEN_REQUIRED",
			"This ltiop registers platforms only at the registration URL its operator gives out (/lti/register/<token>)."))
		return
	}
	o.register(w, r)
}

// RegisterWithToken serves GET /lti/register/{token}: Register, for holders of the
// registration token (dynamicRegistration.requireToken).
func (o *Onboarding) RegisterWithToken(w http.ResponseWriter, r *http.Request) {
	if o.opts.RegistrationToken == nil {
		o.fail(w, r, httpapi.Errorf(http.StatusNotFound, httpapi.CodeNotFound,
			"Registration tokens are not in use here: register at /lti/register."))
		return
	}
	if herr := o.opts.RegistrationToken.Check(r.PathValue("token")); herr != nil {
		if herr.Status == http.StatusServiceUnavailable {
			log.FromContext(r.Context()).Info("dynamic registration refused: requireToken is on but no usable token is configured")
			o.fail(w, r, httpapi.Errorf(http.StatusServiceUnavailable, "REGISTRATION_TOKEN_NOT_CONFIGURED",
				"Dynamic registration needs a registration token, and none is configured yet."))
			return
		}
		o.fail(w, r, httpapi.Errorf(http.StatusForbidden, "INVALID_REGISTRATION_TOKEN",
			"The registration URL is not valid: ask the operator of this ltiop for the current one."))
		return
	}
	o.register(w, r)
}

func (o *Onboarding) register(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	configURL, token := q.Get("openid_configuration"), q.Get("registration_token")
	if configURL == "" { // T-DR-01
		o.fail(w, r, httpapi.Errorf(http.StatusBadRequest, "MISSING_OPENID_CONFIGURATION",
			"The registration request has no openid_configuration parameter."))
		return
	}
	if err := o.opts.Outbound.Check(configURL); err != nil {
		log.FromContext(r.Context()).Info("dynamic registration refused", "code", "INVALID_OPENID_CONFIGURATION_URL", "reason", err.Error())
		o.fail(w, r, httpapi.Errorf(http.StatusBadRequest, "INVALID_OPENID_CONFIGURATION_URL",
			"The openid_configuration URL cannot be used: it must be an https URL with a host name or an allowed address, without user information."))
		return
	}
	// Written without pre-approval and inactive: take a place under the pending bound
	// before any request goes out, so a refused registration costs nothing.
	done := func(string) {}
	if o.opts.PreApprovalURL == "" && !o.opts.AutoActivate {
		var herr *httpapi.Error
		if done, herr = o.bound.reserve(); herr != nil {
			log.FromContext(r.Context()).Info("dynamic registration refused: too many awaiting activation", "max", o.opts.MaxPending)
			o.fail(w, r, herr)
			return
		}
	}
	id := ""
	defer func() { done(id) }()
	pc, err := dynreg.FetchConfiguration(r.Context(), o.http, configURL, token)
	if err != nil {
		o.fail(w, r, registrationError(r.Context(), err))
		return
	}
	if herr := o.checkURLs(r.Context(), pc); herr != nil {
		o.fail(w, r, herr)
		return
	}
	if o.opts.PreApprovalURL != "" {
		id, err := o.keyring.Seal(sessions.PurposeRegistration,
			mustJSON(pending{ConfigURL: configURL, Token: token, Config: pc.Raw}), pendingTTL)
		if err != nil {
			o.fail(w, r, sessions.ErrSealingNotReady)
			return
		}
		u, _ := url.Parse(o.opts.PreApprovalURL)
		qq := u.Query()
		qq.Set("registrationId", id)
		u.RawQuery = qq.Encode()
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return
	}
	id, herr := o.complete(r.Context(), pc, token, "", o.opts.AutoActivate, nil)
	if herr != nil {
		o.fail(w, r, herr)
		return
	}
	log.FromContext(r.Context()).Info("platform registered dynamically", "platform", id, "issuer", pc.Issuer)
	o.closingPage(w, fmt.Sprintf("ltiop is registered with this platform (%s). You can close this window.", id))
}

// complete posts the tool registration and creates or updates the PlatformRegistration.
// The platform is told the registration's own key-set URL, so the registration's name is
// picked before the platform answers with the client_id.
func (o *Onboarding) complete(ctx context.Context, pc *dynreg.PlatformConfig, token, name string, active bool, messages []MessageChoice) (string, *httpapi.Error) {
	if herr := o.checkURLs(ctx, pc); herr != nil { // again: a pre-approval may outlive a change of policy
		return "", herr
	}
	keySetID := writes.NewRegistrationName(pc.Issuer)
	types, placements := messageTypes(messages)
	reg := dynreg.BuildRegistration(o.opts.Tool, pc, types, keySetID)
	dynreg.SetPlacements(reg, placements)
	registered, err := dynreg.Register(ctx, o.http, pc, token, reg)
	if err != nil {
		return "", registrationError(ctx, err)
	}
	return o.upsert(ctx, pc, registered, name, active, keySetID)
}

// checkURLs refuses a platform whose configuration names a URL ltiop fetches (FetchedURLs)
// that dynamic registration's policy refuses: a registration it writes is labelled as its
// own, so its key set, token endpoint and endpoints are fetched under that policy later,
// never under outboundAllowCidrs (issue #34 §3). The check is the policy's before any
// request (scheme, an IP address it refuses); host names are judged when dialled, now
// and at every later fetch. The answer names the member, never the URL or the address.
func (o *Onboarding) checkURLs(ctx context.Context, pc *dynreg.PlatformConfig) *httpapi.Error {
	for _, m := range pc.FetchedURLs() {
		if err := o.opts.Outbound.Check(m.URL); err != nil {
			log.FromContext(ctx).Info("dynamic registration refused", "code", httpapi.CodeURLNotAllowed, "member", m.Name, "reason", err.Error())
			return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeURLNotAllowed, "The platform's "+m.Name+
				" is not allowed by ltiop's outbound policy for dynamic registration: an https URL (http in dev mode) that names no loopback, private or metadata address dynamicRegistration.allowCidrs does not list.")
		}
	}
	return nil
}

// upsert writes the registration: registering the same (issuer, client_id) again updates
// it (T-DR-08), keeping its name and activation unless told otherwise. keySetID is the
// name the platform was given in jwks_uri: a new registration takes it as its name, an
// updated one keeps it as its key-set alias.
func (o *Onboarding) upsert(ctx context.Context, pc *dynreg.PlatformConfig, reg *dynreg.Registered, name string, active bool, keySetID string) (string, *httpapi.Error) {
	spec := &ltiv1.PlatformRegistrationSpec{
		URL:                    ltiv1.EndpointURL(pc.Issuer),
		ClientID:               reg.ClientID,
		Name:                   name,
		AuthenticationEndpoint: ltiv1.EndpointURL(pc.AuthorizationEndpoint),
		AccesstokenEndpoint:    ltiv1.EndpointURL(pc.TokenEndpoint),
		AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: pc.JWKSURI},
		Active:                 ptr.To(active),
	}
	if aud := pc.TokenAudience(); aud != pc.TokenEndpoint { // T-DR-06: only an absolute URL counts
		spec.AuthorizationServer = aud
	}
	current := o.registry.Lookup(pc.Issuer, reg.ClientID)
	if spec.Name == "" {
		spec.Name = defaultName(pc)
		if current != nil {
			spec.Name = current.Spec.Name
		}
	}
	var id string
	if current != nil {
		spec.Active = ptr.To(current.Spec.IsActive() || active) // re-registering never deactivates
		spec.DeploymentIDs = current.Spec.DeploymentIDs
		if _, err := writes.ApplySpec(ctx, o.writer, current, spec, writes.ManagerRegistration); err != nil {
			return "", writes.APIServerError(ctx, err)
		}
		if err := o.keepKeySetAlias(ctx, current, keySetID); err != nil {
			return "", writes.APIServerError(ctx, err)
		}
		id = current.ID
	} else {
		// Labelled: asked for without a credential, it gets no key until activated and
		// expires if never activated (controllers/pendingregistration.go).
		created, err := writes.CreateRegistration(ctx, o.writer, o.opts.Namespace, keySetID, spec, writes.ManagerRegistration,
			map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration})
		if err != nil {
			return "", writes.APIServerError(ctx, err)
		}
		id = created.Name
	}
	if reg.DeploymentID != "" { // T-DR-05: recorded; absent → learnt at the first launch
		if err := o.recordDeployments(ctx, id, reg.DeploymentID); err != nil {
			log.FromContext(ctx).Error(err, "recording the registered deployment", "platform", id)
		}
	}
	return id, nil
}

// keepKeySetAlias records the key-set name the platform was given on a registration that
// has another name, so its jwks_uri serves (the platform keeps the latest one only).
func (o *Onboarding) keepKeySetAlias(ctx context.Context, current *registry.Platform, keySetID string) error {
	if keySetID == current.ID || keySetID == current.KeySetAlias {
		return nil
	}
	return writes.SetKeySetAlias(ctx, o.writer, current, keySetID)
}

func defaultName(pc *dynreg.PlatformConfig) string {
	host := pc.Issuer
	if u, err := url.Parse(pc.Issuer); err == nil {
		host = u.Host
	}
	if pc.ProductFamilyCode != "" {
		return pc.ProductFamilyCode + " (" + host + ")"
	}
	return host
}

// RecordDeployment learns a deployment a launch came from, when the registration does not
// know it yet. The write happens in the background: the launch never waits on the API server.
func (o *Onboarding) RecordDeployment(p *registry.Platform, deploymentID string) {
	if deploymentID == "" || slices.Contains(p.SeenDeployments, deploymentID) || len(p.SeenDeployments) >= 1000 {
		return
	}
	key := string(p.UID) + "/" + deploymentID
	if _, busy := o.learning.LoadOrStore(key, true); busy {
		return
	}
	go func() {
		defer o.learning.Delete(key)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.recordDeployments(ctx, p.ID, deploymentID); err != nil {
			log.Log.WithName("onboarding").Error(err, "recording a deployment learnt from a launch", "platform", p.ID)
		}
	}()
}

// recordDeployments adds a deployment to status.deploymentIds by server-side apply.
func (o *Onboarding) recordDeployments(ctx context.Context, id, deploymentID string) error {
	seen := []string{deploymentID}
	var uid string
	if p := o.registry.Get(id); p != nil {
		uid = string(p.UID)
		for _, d := range p.SeenDeployments {
			if d != deploymentID {
				seen = append(seen, d)
			}
		}
	}
	slices.Sort(seen)
	return writes.RecordDeployments(ctx, o.writer, o.opts.Namespace, id, uid, seen)
}

// registrationError maps a dynamic-registration failure to the envelope. The answer names
// no address and quotes nothing the platform (or whatever answered in its place) sent, so
// /lti/register cannot be used to read other hosts; the detail goes to the log.
func registrationError(ctx context.Context, err error) *httpapi.Error {
	log.FromContext(ctx).Info("dynamic registration failed", "reason", err.Error())
	var de *dynreg.Error
	var oe *outbound.Error
	switch {
	case errors.As(err, &oe):
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeURLNotAllowed,
			"A platform URL, or where it resolves or redirects to, is not allowed by ltiop's outbound policy.")
	case errors.As(err, &de):
		status := http.StatusBadGateway
		if de.Code == dynreg.CodeIssuerMismatch || de.Code == dynreg.CodeInvalidConfiguration {
			status = http.StatusBadRequest
		}
		message, ok := registrationMessages[de.Code]
		if !ok {
			message = "The registration with the platform failed."
		}
		e := httpapi.Errorf(status, de.Code, message)
		if de.Status != 0 {
			e.Upstream = &httpapi.Upstream{Status: de.Status}
		}
		return e
	default:
		return httpapi.Errorf(http.StatusBadGateway, httpapi.CodeUpstream, "The platform could not be reached.")
	}
}

// registrationMessages are the fixed descriptions of the dynreg codes.
var registrationMessages = map[string]string{
	dynreg.CodeConfigurationUnavailable: "The platform's OpenID configuration could not be fetched.",
	dynreg.CodeInvalidConfiguration: "The platform's OpenID configuration is not usable: it must be a JSON object whose issuer, " +
		"authorization_endpoint, registration_endpoint, jwks_uri and token_endpoint are absolute URLs (https when the configuration URL is).",
	dynreg.CodeIssuerMismatch: "The issuer must be on the host of the OpenID configuration URL, " +
		"and the registration endpoint on the issuer's host.",
	dynreg.CodeRegistrationUnavailable:     "The platform's registration endpoint did not answer.",
	dynreg.CodeRegistrationRefused:         "The platform refused the registration.",
	dynreg.CodeInvalidRegistrationResponse: "The platform's answer to the registration is not a JSON object with a client_id.",
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
