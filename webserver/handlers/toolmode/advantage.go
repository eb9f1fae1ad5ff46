package toolmode

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// Memberships serves GET /api/memberships: a page of the context's roster (NRPS).
func (t *Tool) Memberships(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	if g.MembershipsURL == "" {
		httpapi.WriteError(w, notAvailable("Names and Role Provisioning is not available in this launch's context."))
		return
	}
	q := r.URL.Query()
	limit, herr := queryLimit(q.Get("limit"))
	var role string
	if herr == nil {
		role, herr = queryRole(q.Get("role"))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		page, err := t.services.Memberships(ctx, cred, g.MembershipsURL, advantage.MembersQuery{
			Role: role, Limit: limit, ResourceLinkID: q.Get("resourceLinkId"), URL: q.Get("url"),
		})
		if err != nil {
			return nil, err
		}
		return normaliseMembers(page), nil
	})
}

// LineItems serves GET /api/lineitems.
func (t *Tool) LineItems(w http.ResponseWriter, r *http.Request) {
	container, herr := grantFrom(r.Context()).lineItemsContainer()
	q := r.URL.Query()
	var limit int
	if herr == nil {
		limit, herr = queryLimit(q.Get("limit"))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		return t.services.LineItems(ctx, cred, container, advantage.LineItemsQuery{
			ResourceLinkID: q.Get("resourceLinkId"), ResourceID: q.Get("resourceId"), Tag: q.Get("tag"),
			Limit: limit, URL: q.Get("url"),
		})
	})
}

// CreateLineItem serves POST /api/lineitems.
func (t *Tool) CreateLineItem(w http.ResponseWriter, r *http.Request) {
	container, herr := grantFrom(r.Context()).lineItemsContainer()
	var item advantage.LineItem
	if herr == nil {
		herr = decodeValid(r, &item, func() *advantage.FieldError { return t.validateLineItem(&item) })
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusCreated, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		return t.services.CreateLineItem(ctx, cred, container, item)
	})
}

// GetLineItem serves GET /api/lineitems/{id}.
func (t *Tool) GetLineItem(w http.ResponseWriter, r *http.Request) {
	t.onLineItem(w, r, http.StatusOK, nil, func(ctx context.Context, cred advantage.Credentials, id string) (any, error) {
		return t.services.GetLineItem(ctx, cred, id)
	})
}

// UpdateLineItem serves PUT /api/lineitems/{id}: a full replacement.
func (t *Tool) UpdateLineItem(w http.ResponseWriter, r *http.Request) {
	var item advantage.LineItem
	decode := func() *httpapi.Error {
		return decodeValid(r, &item, func() *advantage.FieldError { return t.validateLineItem(&item) })
	}
	t.onLineItem(w, r, http.StatusOK, decode, func(ctx context.Context, cred advantage.Credentials, id string) (any, error) {
		return t.services.UpdateLineItem(ctx, cred, id, item)
	})
}

// DeleteLineItem serves DELETE /api/lineitems/{id}.
func (t *Tool) DeleteLineItem(w http.ResponseWriter, r *http.Request) {
	t.onLineItem(w, r, http.StatusNoContent, nil, func(ctx context.Context, cred advantage.Credentials, id string) (any, error) {
		return nil, t.services.DeleteLineItem(ctx, cred, id)
	})
}

// PostScore serves POST /api/lineitems/{id}/scores; ltiop sets the timestamp.
func (t *Tool) PostScore(w http.ResponseWriter, r *http.Request) {
	var score advantage.Score
	decode := func() *httpapi.Error {
		return decodeValid(r, &score, func() *advantage.FieldError { return advantage.ValidateScore(&score) })
	}
	t.onLineItem(w, r, http.StatusNoContent, decode, func(ctx context.Context, cred advantage.Credentials, id string) (any, error) {
		return nil, t.services.PostScore(ctx, cred, id, score)
	})
}

// Scores serves GET /api/lineitems/{id}/scores, from the AGS results service.
func (t *Tool) Scores(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var limit int
	decode := func() (herr *httpapi.Error) { limit, herr = queryLimit(q.Get("limit")); return herr }
	t.onLineItem(w, r, http.StatusOK, decode, func(ctx context.Context, cred advantage.Credentials, id string) (any, error) {
		return t.services.Results(ctx, cred, id, advantage.ResultsQuery{UserID: q.Get("userId"), Limit: limit, URL: q.Get("url")})
	})
}

// onLineItem runs a call on the line item {id}: prepare reads the request (nil: nothing
// to read), then call talks to the platform.
func (t *Tool) onLineItem(w http.ResponseWriter, r *http.Request, status int, prepare func() *httpapi.Error,
	call func(context.Context, advantage.Credentials, string) (any, error)) {
	id, herr := grantFrom(r.Context()).lineItemID(r)
	if herr == nil && prepare != nil {
		herr = prepare()
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, status, func(ctx context.Context, cred advantage.Credentials) (any, error) { return call(ctx, cred, id) })
}

// respond calls the platform with the launch's credentials and writes the answer: the
// result as JSON, nothing for 204, or the upstream failure in the envelope.
func (t *Tool) respond(w http.ResponseWriter, r *http.Request, status int, call func(context.Context, advantage.Credentials) (any, error)) {
	cred, p, herr := t.credentials(grantFrom(r.Context()))
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	out, err := call(r.Context(), cred)
	switch {
	case err != nil:
		e := upstreamError(err)
		t.serviceFailed(p, e)
		if e.Code == httpapi.CodeURLNotAllowed {
			// The integrator is not told where the platform pointed; the operator is.
			// Errors from the advantage client carry no query string (outbound.Redact).
			log.FromContext(r.Context()).Info("platform URL refused by the outbound policy", "platform", cred.PlatformID, "error", err.Error())
		}
		httpapi.WriteError(w, e)
	case status == http.StatusNoContent:
		w.WriteHeader(status)
	default:
		httpapi.WriteJSON(w, status, out)
	}
}

// decodeValid reads a JSON body into v and validates it, naming the bad field.
func decodeValid(r *http.Request, v any, validate func() *advantage.FieldError) *httpapi.Error {
	if herr := httpapi.DecodeJSON(r, v); herr != nil {
		return herr
	}
	if e := validate(); e != nil {
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, e.Field+": "+e.Message+".")
	}
	return nil
}

// lineItemsContainer is the launch's line item container URL.
func (g *grant) lineItemsContainer() (string, *httpapi.Error) {
	if g.LineItemsURL == "" {
		return "", notAvailable("The launch has no line item container (Assignment and Grade Services).")
	}
	return g.LineItemsURL, nil
}

// lineItemID reads {id}, a URL-encoded line item URL. The client refuses one that is not
// on the host of the launch's services (ErrForeignURL → 400).
func (g *grant) lineItemID(r *http.Request) (string, *httpapi.Error) {
	if g.LineItemsURL == "" && g.LineItemURL == "" {
		return "", notAvailable("Assignment and Grade Services are not available in this launch's context.")
	}
	return r.PathValue("id"), nil
}

func queryLimit(v string) (int, *httpapi.Error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 10000 {
		return 0, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "limit: must be a whole number from 1 to 10000.")
	}
	return n, nil
}

// validateLineItem is advantage.ValidateLineItem, and a submissionReview.url on ltiop's
// origin: the platform starts the review launch at ltiop's login with that URL as the
// target, which ltiop accepts only on its own origin (T-LOGIN-05), and hands the
// validated review to the Submission Review URL (T-SR-06).
func (t *Tool) validateLineItem(item *advantage.LineItem) *advantage.FieldError {
	if fe := advantage.ValidateLineItem(item); fe != nil {
		return fe
	}
	sr, _ := item.SubmissionReview() // valid: checked above
	if sr == nil || sr.URL == "" {
		return nil
	}
	if u, err := url.Parse(sr.URL); err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, t.origin) {
		return &advantage.FieldError{Field: "submissionReview.url",
			Message: "must be on ltiop's origin (" + t.origin + "), e.g. " + t.opts.PublicURL + paths.Launch + "; ltiop hands the review to its Submission Review URL"}
	}
	return nil
}
