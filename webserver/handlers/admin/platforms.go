// Package admin serves the Bearer-authenticated management API: /api/platforms (also
// answered under /admin/platforms) and /api/tools. Reads come from the registry; writes go
// to the API server through webserver/stores/writes, under the field manager "ltiop-api"
// (writes.ManagerAPI), so they never fight the controller.
package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/registration"
	"github.com/ltiop/ltiop/internal/urls"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/platformcheck"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/writes"
)

// Platforms serves the platforms API.
type Platforms struct {
	Registry  *registry.Registry
	Client    client.Client // writes go to the API server
	Namespace string
	DevMode   bool
	// KeyWait bounds how long a write waits for the registry to show its result.
	KeyWait time.Duration
	// Cursors seals the list cursors: the sealing keyring, so that a cursor one replica
	// issued opens on every other, and nobody can forge or edit one.
	Cursors *sessions.Keyring
	// PublicURL is ltiop's external base URL, the base of next links ("" makes them
	// relative to the host).
	PublicURL string
	// Checker runs POST /api/platforms/{id}/check.
	Checker *platformcheck.Checker
}

// List answers GET /api/platforms, filtered by the query parameters id, url and clientId,
// whole or (limit, cursor) one page at a time; see paging.go.
func (h *Platforms) List(w http.ResponseWriter, r *http.Request) {
	lq, herr := h.parseListQuery(r.URL.Query())
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	found, more := h.Registry.Page(lq.After, lq.Limit, func(p *registry.Platform) bool {
		return lq.matches("id", p.ID) && lq.matches("url", string(p.Spec.URL)) && lq.matches("clientId", p.Spec.ClientID)
	})
	next := ""
	if more {
		if next, herr = h.nextURL(r, lq, found[len(found)-1].ID); herr != nil {
			httpapi.WriteError(w, herr)
			return
		}
		w.Header().Set("Link", "<"+next+`>; rel="next"`)
	}
	h.writeList(w, found, next)
}

// Get answers GET /api/platforms/{id}.
func (h *Platforms) Get(w http.ResponseWriter, r *http.Request) { h.registrations().get(w, r) }

// Check answers POST /api/platforms/{id}/check: it fetches the registration's key set and
// calls its endpoints now, and says what it found.
func (h *Platforms) Check(w http.ResponseWriter, r *http.Request) {
	p, err := h.find(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, h.Checker.Check(r.Context(), p))
}

// Create answers POST /api/platforms: it creates the registration and waits a bounded
// time for its key, so the response carries publicKey.
func (h *Platforms) Create(w http.ResponseWriter, r *http.Request) {
	var req PlatformRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	spec, err := h.validate(&req, nil)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if other := h.Registry.Lookup(string(spec.URL), spec.ClientID); other != nil {
		httpapi.WriteError(w, duplicate(other))
		return
	}
	if herr := h.consumerKeyConflict(spec, ""); herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	reg, createErr := writes.CreateRegistration(r.Context(), h.Client, h.Namespace, "", spec, writes.ManagerAPI, nil)
	if createErr != nil {
		httpapi.WriteError(w, writes.APIServerError(r.Context(), createErr))
		return
	}
	log.FromContext(r.Context()).Info("platform registration created", "platform", reg.Name, "url", reg.Spec.URL, "clientId", reg.Spec.ClientID)
	p, done := h.await(r.Context(), reg, func(p *registry.Platform) bool { return p != nil && p.Key != nil && settled(p) })
	if !done {
		w.Header().Set("Retry-After", retryAfterUnsettled)
	}
	w.Header().Set("Location", "/api/platforms/"+url.PathEscape(reg.Name))
	httpapi.WriteJSON(w, http.StatusCreated, p)
}

// Update answers PUT /api/platforms/{id}: a full replacement of the §4.4 fields by
// server-side apply.
func (h *Platforms) Update(w http.ResponseWriter, r *http.Request) {
	current, err := h.find(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	var req UpdateRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	if err := req.checkReadOnly(current); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	spec, err := h.validate(&req.PlatformRequest, current)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if other := h.Registry.Lookup(string(spec.URL), spec.ClientID); other != nil && other.ID != current.ID {
		httpapi.WriteError(w, duplicate(other))
		return
	}
	if herr := h.consumerKeyConflict(spec, current.ID); herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	generation, applyErr := writes.ApplySpec(r.Context(), h.Client, current, spec, writes.ManagerAPI)
	if applyErr == nil && spec.LTI11 == nil && current.Spec.LTI11 != nil {
		applyErr = writes.RemoveLTI11(r.Context(), h.Client, current)
		generation++
	}
	if applyErr != nil {
		httpapi.WriteError(w, writes.APIServerError(r.Context(), applyErr))
		return
	}
	h.respondAfterWrite(w, r, current.ID, generation)
}

// Delete answers DELETE /api/platforms/{id}. The key Secret goes with the registration.
func (h *Platforms) Delete(w http.ResponseWriter, r *http.Request) { h.registrations().delete(w, r) }

// Activate answers POST /api/platforms/{id}/activate.
func (h *Platforms) Activate(w http.ResponseWriter, r *http.Request) {
	h.registrations().setActive(w, r, true)
}

// Deactivate answers POST /api/platforms/{id}/deactivate.
func (h *Platforms) Deactivate(w http.ResponseWriter, r *http.Request) {
	h.registrations().setActive(w, r, false)
}

// registrations is what the platform handlers share with the tool handlers.
func (h *Platforms) registrations() *registrations[registry.Platform] {
	return &registrations[registry.Platform]{noun: "platform", client: h.Client, find: h.find,
		show: func(p *registry.Platform) any { return toAPI(p) },
		object: func(p *registry.Platform) client.Object {
			return &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.ID, UID: p.UID}}
		},
		apiError: writes.APIServerError, waitFor: h.Registry.WaitFor, keyWait: h.KeyWait,
		written: func(w http.ResponseWriter, r *http.Request, p *registry.Platform, obj client.Object) {
			h.respondAfterWrite(w, r, p.ID, obj.GetGeneration())
		}}
}

// retryAfterUnsettled is the Retry-After (seconds) of a write answered when KeyWait
// passed before the registration settled: written, but not launchable yet.
const retryAfterUnsettled = "1"

// settled: an active registration is launchable (its key exists and this replica's
// registry, which the login and launch read, sees it Ready), so the LMS's first launch
// after the answer works. An inactive one has nothing to wait for.
func settled(p *registry.Platform) bool { return !p.Spec.IsActive() || p.Launchable() }

// respondAfterWrite waits (bounded by KeyWait) until the registry shows the written
// generation, so that the response and any read that follows it agree with the write, and
// the registration has settled. Past the bound it answers what it has, with Retry-After.
func (h *Platforms) respondAfterWrite(w http.ResponseWriter, r *http.Request, id string, generation int64) {
	ctx, cancel := context.WithTimeout(r.Context(), h.KeyWait)
	defer cancel()
	p, done := h.Registry.WaitFor(ctx, id, func(p *registry.Platform) bool {
		return p != nil && p.Generation >= generation && settled(p)
	})
	if p == nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusNotFound, httpapi.CodePlatformNotFound, "The platform was deleted meanwhile."))
		return
	}
	if !done {
		w.Header().Set("Retry-After", retryAfterUnsettled)
	}
	httpapi.WriteJSON(w, http.StatusOK, toAPI(p))
}

// await waits (bounded by KeyWait) for cond on the registry's view of reg, and returns the
// API shape of the best view available and whether cond held.
func (h *Platforms) await(ctx context.Context, reg *ltiv1.PlatformRegistration, cond func(*registry.Platform) bool) (Platform, bool) {
	ctx, cancel := context.WithTimeout(ctx, h.KeyWait)
	defer cancel()
	p, done := h.Registry.WaitFor(ctx, reg.Name, func(p *registry.Platform) bool {
		if p != nil && p.UID != reg.UID {
			p = nil
		}
		return cond(p)
	})
	if p != nil && p.UID == reg.UID {
		return toAPI(p), done
	}
	return toAPI(&registry.Platform{ID: reg.Name, Spec: reg.Spec}), done
}

func (h *Platforms) find(r *http.Request) (*registry.Platform, *httpapi.Error) {
	id := r.PathValue("id")
	if p := h.Registry.Get(id); p != nil {
		return p, nil
	}
	return nil, httpapi.Errorf(http.StatusNotFound, httpapi.CodePlatformNotFound,
		fmt.Sprintf("No platform has the ID %q.", id))
}

func duplicate(other *registry.Platform) *httpapi.Error {
	return httpapi.Errorf(http.StatusConflict, httpapi.CodePlatformExists, fmt.Sprintf(
		"Platform %s already registers this url and clientId.", other.ID))
}

// validate checks a POST or PUT body and returns the spec it asks for. current is the
// registration a PUT replaces (nil for POST): ltiop's optional fields keep its values.
func (h *Platforms) validate(req *PlatformRequest, current *registry.Platform) (*ltiv1.PlatformRegistrationSpec, *httpapi.Error) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	allowHTTP := h.DevMode || (current != nil && current.Spec.DevMode)

	text := func(field string, v *string, maxLen int) string {
		switch {
		case v == nil || strings.TrimSpace(*v) == "":
			bad("%s: required", field)
			return ""
		case len(*v) > maxLen:
			bad("%s: at most %d characters", field, maxLen)
		}
		return *v
	}
	endpoint := func(field string, v *string) ltiv1.EndpointURL {
		s := text(field, v, 2048)
		if s != "" {
			if err := urls.Check(s, allowHTTP); err != nil {
				bad("%s: %v", field, err)
			}
		}
		return ltiv1.EndpointURL(s)
	}

	spec := &ltiv1.PlatformRegistrationSpec{
		URL:                    endpoint("url", req.URL),
		ClientID:               text("clientId", req.ClientID, 255),
		Name:                   text("name", req.Name, 255),
		AuthenticationEndpoint: endpoint("authenticationEndpoint", req.AuthenticationEndpoint),
		AccesstokenEndpoint:    endpoint("accesstokenEndpoint", req.AccesstokenEndpoint),
	}
	spec.AuthConfig = authConfigFrom(req.AuthConfig, allowHTTP, registration.OwnerPlatform, bad)
	if current != nil {
		spec.AuthorizationServer = current.Spec.AuthorizationServer
		spec.DeploymentIDs = current.Spec.DeploymentIDs
		spec.Active = current.Spec.Active
		spec.DevMode = current.Spec.DevMode
		spec.LTI11 = current.Spec.LTI11
	}
	lti11FromRequest(req.LTI11, spec, bad)
	if req.AuthorizationServer != nil {
		spec.AuthorizationServer = *req.AuthorizationServer
		if spec.AuthorizationServer != "" && len(spec.AuthorizationServer) > 2048 {
			bad("authorizationServer: at most 2048 characters")
		}
	}
	if req.DeploymentIDs != nil {
		seen := map[string]bool{}
		for i, d := range req.DeploymentIDs {
			switch {
			case d == "" || len(d) > 255:
				bad("deploymentIds[%d]: must be 1 to 255 characters", i)
			case seen[d]:
				bad("deploymentIds[%d]: %q is listed twice", i, d)
			}
			seen[d] = true
		}
		if len(req.DeploymentIDs) > 1000 {
			bad("deploymentIds: at most 1000 entries")
		}
		spec.DeploymentIDs = req.DeploymentIDs
	}
	if req.Active != nil {
		spec.Active = req.Active
	}
	if len(problems) > 0 {
		return nil, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, strings.Join(problems, "; ")+".")
	}
	return spec, nil
}

// authConfigFrom checks the key of a platform or tool request (method and key, the key
// parsed or its key-set URL checked for owner), reporting each problem through bad.
func authConfigFrom(in *AuthConfig, allowHTTP bool, owner registration.Owner, bad func(string, ...any)) ltiv1.AuthConfig {
	if in == nil {
		bad("authConfig: required")
		return ltiv1.AuthConfig{}
	}
	ac := ltiv1.AuthConfig{Method: ltiv1.AuthMethod(in.Method), Key: in.Key}
	switch {
	case ac.Method != ltiv1.AuthMethodJWKSet && ac.Method != ltiv1.AuthMethodJWKKey && ac.Method != ltiv1.AuthMethodRSAKey:
		bad("authConfig.method: must be one of JWK_SET, JWK_KEY, RSA_KEY")
	case strings.TrimSpace(ac.Key) == "":
		bad("authConfig.key: required")
	case len(ac.Key) > 16384:
		bad("authConfig.key: at most 16384 characters")
	default:
		if err := registration.ValidateKey(ac, allowHTTP, owner); err != nil {
			bad("authConfig.key: %v", err)
		}
	}
	return ac
}
