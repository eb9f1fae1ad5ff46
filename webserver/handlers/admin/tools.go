package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/registration"
	"github.com/ltiop/ltiop/internal/urls"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/writes"
)

// Codes of the tools API (the platform-mode API answers the same for an unknown tool).
const (
	CodeToolNotFound = "TOOL_NOT_FOUND"
	CodeToolExists   = "TOOL_ALREADY_REGISTERED"
)

// Tools serves /api/tools, the platform-mode twin of /api/platforms: the ToolRegistrations
// of ltiop's namespace. Reads come from the tool registry; writes go to the API server
// through webserver/stores/writes.
type Tools struct {
	Registry  *registry.Tools
	Client    client.Client
	Namespace string
	DevMode   bool
	// KeyWait bounds how long a write waits for the registry to show its result, judged
	// by the controller (past it, the answer shows what the registry has).
	KeyWait time.Duration
	// Cursors seals the list cursors (the sealing keyring).
	Cursors *sessions.Keyring
	// PublicURL is ltiop's external base URL, the base of next links.
	PublicURL string
}

// snapshot is the registry's view of a registration just written, before the informer
// shows it.
func snapshot(reg *ltiv1.ToolRegistration) *registry.Tool {
	ts := registry.NewTools()
	ts.Apply(reg)
	return ts.Get(reg.Name)
}

// List answers GET /api/tools, filtered by id, clientId and active, whole or one page at
// a time (limit, cursor), as GET /api/platforms.
func (h *Tools) List(w http.ResponseWriter, r *http.Request) {
	pg := pager{h.Cursors, h.PublicURL}
	lq, herr := pg.parse(r.URL.Query(), "id", "clientId", "active")
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	if a := lq.Filters["active"]; a != "" && a != "true" && a != "false" {
		httpapi.WriteError(w, badParameter("active: must be true or false."))
		return
	}
	found, more := h.Registry.Page(lq.After, lq.Limit, func(t *registry.Tool) bool {
		return lq.matches("id", t.ID) && lq.matches("clientId", t.ClientID) && lq.matches("active", fmt.Sprint(t.Spec.IsActive()))
	})
	out := ToolList{Tools: make([]Tool, 0, len(found))}
	for _, t := range found {
		out.Tools = append(out.Tools, toolToAPI(t))
	}
	if more {
		if out.Next, herr = pg.next(r, lq, found[len(found)-1].ID); herr != nil {
			httpapi.WriteError(w, herr)
			return
		}
		w.Header().Set("Link", "<"+out.Next+`>; rel="next"`)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (h *Tools) find(r *http.Request) (*registry.Tool, *httpapi.Error) {
	id := r.PathValue("id")
	if t := h.Registry.Get(id); t != nil {
		return t, nil
	}
	return nil, httpapi.Errorf(http.StatusNotFound, CodeToolNotFound, fmt.Sprintf("No tool has the ID %q.", id))
}

// Get answers GET /api/tools/{id}.
func (h *Tools) Get(w http.ResponseWriter, r *http.Request) { h.registrations().get(w, r) }

// Create answers POST /api/tools: 201 with the tool (and Location), once the controller
// has judged it (bounded by KeyWait), so a launch may follow the answer at once.
func (h *Tools) Create(w http.ResponseWriter, r *http.Request) {
	var req ToolRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	spec, herr := h.validate(&req, nil)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	name := ""
	if req.ID != nil {
		if msgs := validation.IsDNS1123Subdomain(*req.ID); len(msgs) > 0 {
			httpapi.WriteError(w, badParameter("id: "+strings.Join(msgs, "; ")+"."))
			return
		}
		name = *req.ID
	}
	reg, herr := h.create(r.Context(), spec, name, nil)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	log.FromContext(r.Context()).Info("tool registration created", "tool", reg.Name, "clientId", reg.Spec.ClientID)
	t := h.await(r.Context(), reg.Name, func(t *registry.Tool) bool { return t != nil && t.UID == reg.UID && t.Judged })
	if t == nil || t.UID != reg.UID {
		t = snapshot(reg)
	}
	w.Header().Set("Location", "/api/tools/"+url.PathEscape(reg.Name))
	httpapi.WriteJSON(w, http.StatusCreated, toolToAPI(t))
}

// Update answers PUT /api/tools/{id}: the spec replaced whole (a JSON patch with a UID test).
func (h *Tools) Update(w http.ResponseWriter, r *http.Request) {
	current, herr := h.find(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	var req ToolRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	if req.ID != nil && *req.ID != current.ID {
		httpapi.WriteError(w, badParameter(fmt.Sprintf("id: read-only, must be %q (the tool in the path) or absent.", current.ID)))
		return
	}
	spec, herr := h.validate(&req, current)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	if e := h.duplicate(spec, current.ID); e != nil {
		httpapi.WriteError(w, e)
		return
	}
	reg := toolObject(current)
	if err := writes.ReplaceToolSpec(r.Context(), h.Client, reg, spec); errors.Is(err, writes.ErrEncoding) {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The update could not be encoded."))
		return
	} else if err != nil {
		httpapi.WriteError(w, toolAPIServerError(r.Context(), err))
		return
	}
	h.written(w, r, current, reg)
}

// Delete answers DELETE /api/tools/{id}: 204.
func (h *Tools) Delete(w http.ResponseWriter, r *http.Request) { h.registrations().delete(w, r) }

// Activate answers POST /api/tools/{id}/activate.
func (h *Tools) Activate(w http.ResponseWriter, r *http.Request) {
	h.registrations().setActive(w, r, true)
}

// Deactivate answers POST /api/tools/{id}/deactivate: launches, deep-linking responses,
// access tokens and service calls of the tool are refused until it is activated again.
func (h *Tools) Deactivate(w http.ResponseWriter, r *http.Request) {
	h.registrations().setActive(w, r, false)
}

// registrations is what the tool handlers share with the platform handlers.
func (h *Tools) registrations() *registrations[registry.Tool] {
	return &registrations[registry.Tool]{noun: "tool", client: h.Client, find: h.find,
		show:     func(t *registry.Tool) any { return toolToAPI(t) },
		object:   func(t *registry.Tool) client.Object { return toolObject(t) },
		apiError: toolAPIServerError, waitFor: h.Registry.WaitFor, keyWait: h.KeyWait, written: h.written}
}

// toolObject names the registration of t (namespace, name and UID), to write it.
func toolObject(t *registry.Tool) *ltiv1.ToolRegistration {
	return &ltiv1.ToolRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.ID, UID: t.UID}}
}

// written answers a write of the registration of t once the registry shows the written
// generation judged by the controller, so that the answer's ready holds and a launch may
// follow at once; obj is the API server's answer to the write.
func (h *Tools) written(w http.ResponseWriter, r *http.Request, t *registry.Tool, obj client.Object) {
	reg := obj.(*ltiv1.ToolRegistration)
	got := h.await(r.Context(), t.ID, func(q *registry.Tool) bool {
		return q != nil && q.UID == t.UID && q.Generation >= reg.Generation && q.Judged
	})
	if got == nil || got.UID != t.UID || got.Generation < reg.Generation {
		if reg.Name == "" { // the patch answered nothing readable
			httpapi.WriteError(w, httpapi.Errorf(http.StatusNotFound, CodeToolNotFound, "The tool was deleted meanwhile."))
			return
		}
		got = snapshot(reg)
	}
	httpapi.WriteJSON(w, http.StatusOK, toolToAPI(got))
}

// await waits (bounded by KeyWait) for cond on the registry's view of the tool id.
func (h *Tools) await(ctx context.Context, id string, cond func(*registry.Tool) bool) *registry.Tool {
	ctx, cancel := context.WithTimeout(ctx, h.KeyWait)
	defer cancel()
	t, _ := h.Registry.WaitFor(ctx, id, cond)
	return t
}

// duplicate refuses a client id another tool (not except) already uses.
func (h *Tools) duplicate(spec *ltiv1.ToolRegistrationSpec, except string) *httpapi.Error {
	if spec.ClientID == "" {
		return nil
	}
	if other := h.Registry.ByClientID(spec.ClientID); other != nil && other.ID != except {
		return httpapi.Errorf(http.StatusConflict, CodeToolExists, fmt.Sprintf("Tool %s already has the client id %q.", other.ID, spec.ClientID))
	}
	return nil
}

// knownScopes are the scopes a tool may be given (ToolRegistration spec.scopes).
var knownScopes = []ltiv1.Scope{ltiv1.ScopeNRPSMembership, ltiv1.ScopeAGSLineItem, ltiv1.ScopeAGSLineItemRead, ltiv1.ScopeAGSResultRead, ltiv1.ScopeAGSScore}

// validate checks a POST or PUT body and returns the spec it asks for; current is the tool a
// PUT replaces (nil for POST), whose devMode is kept unless the body sets it.
func (h *Tools) validate(req *ToolRequest, current *registry.Tool) (*ltiv1.ToolRegistrationSpec, *httpapi.Error) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	spec := &ltiv1.ToolRegistrationSpec{ClientID: req.ClientID, DeploymentID: req.DeploymentID, Custom: req.Custom, Active: req.Active}
	if current != nil {
		spec.DevMode = current.Spec.DevMode
	}
	if req.DevMode != nil {
		spec.DevMode = *req.DevMode
	}
	allowHTTP := h.DevMode || spec.DevMode
	text := func(field string, v *string) string {
		switch {
		case v == nil || strings.TrimSpace(*v) == "":
			bad("%s: required", field)
			return ""
		case len(*v) > 255:
			bad("%s: at most 255 characters", field)
		}
		return *v
	}
	endpoint := func(field, v string, required bool) ltiv1.EndpointURL {
		switch {
		case v == "" && required:
			bad("%s: required", field)
		case v == "":
		case len(v) > 2048:
			bad("%s: at most 2048 characters", field)
		default:
			if err := urls.Check(v, allowHTTP); err != nil {
				bad("%s: %v", field, err)
			}
		}
		return ltiv1.EndpointURL(v)
	}
	spec.Name = text("name", req.Name)
	if len(spec.ClientID) > 255 {
		bad("clientId: at most 255 characters")
	}
	if len(spec.DeploymentID) > 255 {
		bad("deploymentId: at most 255 characters")
	}
	spec.LoginURL = endpoint("loginUrl", deref(req.LoginURL), true)
	spec.TargetLinkURI = endpoint("targetLinkUri", deref(req.TargetLinkURI), true)
	spec.DeepLinkingURL = endpoint("deepLinkingUrl", req.DeepLinkingURL, false)
	spec.PlatformDataURL = endpoint("platformDataUrl", req.PlatformDataURL, false)
	switch n := len(req.RedirectionURIs); {
	case n == 0:
		bad("redirectionUris: at least one is required")
	case n > 20:
		bad("redirectionUris: at most 20")
	}
	for i, u := range req.RedirectionURIs {
		field := fmt.Sprintf("redirectionUris[%d]", i)
		if strings.Contains(u, "#") {
			bad("%s: must not carry a fragment (RFC 6749 §3.1.2)", field)
		}
		if slices.Contains(req.RedirectionURIs[:i], u) {
			bad("%s: %q is listed twice", field, u)
		}
		spec.RedirectionURIs = append(spec.RedirectionURIs, endpoint(field, u, true))
	}
	spec.AuthConfig = authConfigFrom(req.AuthConfig, allowHTTP, registration.OwnerTool, bad)
	for i, sc := range req.Scopes {
		switch {
		case !slices.Contains(knownScopes, ltiv1.Scope(sc)):
			bad("scopes[%d]: %q is not an NRPS or AGS scope", i, sc)
		case slices.Contains(req.Scopes[:i], sc):
			bad("scopes[%d]: %q is listed twice", i, sc)
		default:
			spec.Scopes = append(spec.Scopes, ltiv1.Scope(sc))
		}
	}
	if e := ltiplatform.CheckCustom("custom", req.Custom); e != nil {
		bad("%s", strings.TrimSuffix(e.Description, "."))
	}
	if len(problems) > 0 {
		return nil, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, strings.Join(problems, "; ")+".")
	}
	return spec, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// toolAPIServerError is APIServerError for a tool.
func toolAPIServerError(ctx context.Context, err error) *httpapi.Error {
	switch {
	case apierrors.IsNotFound(err):
		return httpapi.Errorf(http.StatusNotFound, CodeToolNotFound, "The tool does not exist (any more).")
	case apierrors.IsConflict(err), apierrors.IsInvalid(err) && strings.Contains(err.Error(), "test operation"):
		return httpapi.Errorf(http.StatusConflict, httpapi.CodeConflict, "The tool was changed meanwhile; read it and try again.")
	}
	return writes.APIServerError(ctx, err)
}
