package toolmode

import (
	"context"
	"net/http"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// maxNoticeTypeLength bounds a notice type name in the integrator's requests.
const maxNoticeTypeLength = 100

// NoticeHandlerView is one notice type of the deployment's catalog, as the integrator sees
// it: Registered says whether the platform sends it to ltiop (and so to the webhook).
type NoticeHandlerView struct {
	NoticeType   string `json:"noticeType"`
	Registered   bool   `json:"registered"`
	Handler      string `json:"handler"`
	MaxBatchSize *int   `json:"maxBatchSize,omitempty"`
}

// NoticeHandlersView is the answer of GET /api/notices/handlers.
type NoticeHandlersView struct {
	DeploymentID string              `json:"deploymentId"`
	Endpoint     string              `json:"endpoint"` // ltiop's notice endpoint for this registration
	Handlers     []NoticeHandlerView `json:"handlers"`
}

// noticeHandlerRequest is the body of PUT /api/notices/handlers. It has no handler field:
// ltiop registers its own notice endpoint, never a URL from the request (T-PNS-08).
type noticeHandlerRequest struct {
	NoticeType   string `json:"noticeType"`
	MaxBatchSize *int   `json:"maxBatchSize,omitempty"`
}

// noticeEndpoint is ltiop's notice endpoint for the grant's registration.
func (t *Tool) noticeEndpoint(g *grant) string {
	return t.publicURL.String() + paths.NoticeEndpoint(g.PlatformID)
}

func (t *Tool) requirePNS(w http.ResponseWriter, g *grant) (string, bool) {
	u := g.pnsURL()
	if u == "" {
		httpapi.WriteError(w, notAvailable("The Platform Notification Service is not available in this launch (no platformnotificationservice claim)."))
		return "", false
	}
	return u, true
}

// NoticeHandlers serves GET /api/notices/handlers: the deployment's notice catalog.
func (t *Tool) NoticeHandlers(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	pns, ok := t.requirePNS(w, g)
	if !ok {
		return
	}
	ours := t.noticeEndpoint(g)
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		cat, err := t.services.NoticeHandlers(ctx, cred, pns)
		if err != nil {
			return nil, err
		}
		out := NoticeHandlersView{DeploymentID: cat.DeploymentID, Endpoint: ours, Handlers: make([]NoticeHandlerView, 0, len(cat.Handlers))}
		if out.DeploymentID == "" {
			out.DeploymentID = g.DeploymentID
		}
		for _, h := range cat.Handlers {
			out.Handlers = append(out.Handlers, NoticeHandlerView{NoticeType: h.NoticeType, Registered: h.Handler == ours,
				Handler: h.Handler, MaxBatchSize: h.MaxBatchSize})
		}
		return out, nil
	})
}

// SetNoticeHandler serves PUT /api/notices/handlers: the platform sends noticeType to ltiop.
func (t *Tool) SetNoticeHandler(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	pns, ok := t.requirePNS(w, g)
	if !ok {
		return
	}
	var req noticeHandlerRequest
	if !httpapi.ReadJSON(w, r, &req) {
		return
	}
	if herr := checkNoticeType(req.NoticeType); herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	if req.MaxBatchSize != nil && (*req.MaxBatchSize < 1 || *req.MaxBatchSize > 1000) {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "maxBatchSize: must be from 1 to 1000."))
		return
	}
	ours := t.noticeEndpoint(g)
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		h, err := t.services.SetNoticeHandler(ctx, cred, pns, advantage.NoticeHandler{
			NoticeType: req.NoticeType, Handler: ours, MaxBatchSize: req.MaxBatchSize})
		if err != nil {
			return nil, err
		}
		return NoticeHandlerView{NoticeType: h.NoticeType, Registered: h.Handler == ours, Handler: h.Handler, MaxBatchSize: h.MaxBatchSize}, nil
	})
}

// DeleteNoticeHandler serves DELETE /api/notices/handlers?noticeType=…: the platform stops
// sending that type (PNS: a handler set to "").
func (t *Tool) DeleteNoticeHandler(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	pns, ok := t.requirePNS(w, g)
	if !ok {
		return
	}
	noticeType := r.URL.Query().Get("noticeType")
	if herr := checkNoticeType(noticeType); herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusNoContent, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		_, err := t.services.SetNoticeHandler(ctx, cred, pns, advantage.NoticeHandler{NoticeType: noticeType, Handler: ""})
		return nil, err
	})
}

// checkNoticeType accepts a notice type name: letters and digits, as the spec's types are.
func checkNoticeType(s string) *httpapi.Error {
	bad := httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
		"noticeType: required, letters and digits only, at most 100 characters (e.g. LtiAssetProcessorSubmissionNotice).")
	if s == "" || len(s) > maxNoticeTypeLength {
		return bad
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return bad
		}
	}
	return nil
}
