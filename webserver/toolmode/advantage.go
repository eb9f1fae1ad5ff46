package toolmode

import (
	"net/http"
	"strconv"

	"github.com/ltiop/ltiop/webserver/advantage"
	"github.com/ltiop/ltiop/webserver/httpapi"
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
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	page, err := t.services.Memberships(r.Context(), cred, g.MembershipsURL, advantage.MembersQuery{
		Role: q.Get("role"), Limit: limit, ResourceLinkID: q.Get("resourceLinkId"), URL: q.Get("url"),
	})
	if err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

// LineItems serves GET /api/lineitems.
func (t *Tool) LineItems(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	container, herr := g.lineItemsContainer()
	q := r.URL.Query()
	var limit int
	if herr == nil {
		limit, herr = queryLimit(q.Get("limit"))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	page, err := t.services.LineItems(r.Context(), cred, container, advantage.LineItemsQuery{
		ResourceLinkID: q.Get("resourceLinkId"), ResourceID: q.Get("resourceId"), Tag: q.Get("tag"),
		Limit: limit, URL: q.Get("url"),
	})
	if err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

// CreateLineItem serves POST /api/lineitems.
func (t *Tool) CreateLineItem(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	container, herr := g.lineItemsContainer()
	var item advantage.LineItem
	if herr == nil {
		herr = httpapi.DecodeJSON(r, &item)
	}
	if herr == nil {
		herr = fieldError(advantage.ValidateLineItem(&item))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	created, err := t.services.CreateLineItem(r.Context(), cred, container, item)
	if err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, created)
}

// GetLineItem serves GET /api/lineitems/{id}.
func (t *Tool) GetLineItem(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	id, herr := g.lineItemID(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	item, err := t.services.GetLineItem(r.Context(), cred, id)
	if err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, item)
}

// UpdateLineItem serves PUT /api/lineitems/{id}: a full replacement.
func (t *Tool) UpdateLineItem(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	id, herr := g.lineItemID(r)
	var item advantage.LineItem
	if herr == nil {
		herr = httpapi.DecodeJSON(r, &item)
	}
	if herr == nil {
		herr = fieldError(advantage.ValidateLineItem(&item))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	updated, err := t.services.UpdateLineItem(r.Context(), cred, id, item)
	if err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, updated)
}

// DeleteLineItem serves DELETE /api/lineitems/{id}.
func (t *Tool) DeleteLineItem(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	id, herr := g.lineItemID(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	if err := t.services.DeleteLineItem(r.Context(), cred, id); err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// PostScore serves POST /api/lineitems/{id}/scores.
func (t *Tool) PostScore(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	id, herr := g.lineItemID(r)
	var score advantage.Score
	if herr == nil {
		herr = httpapi.DecodeJSON(r, &score)
	}
	if herr == nil {
		herr = fieldError(advantage.ValidateScore(&score))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	if err := t.services.PostScore(r.Context(), cred, id, score); err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Scores serves GET /api/lineitems/{id}/scores, from the AGS results service.
func (t *Tool) Scores(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	id, herr := g.lineItemID(r)
	q := r.URL.Query()
	var limit int
	if herr == nil {
		limit, herr = queryLimit(q.Get("limit"))
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _ := t.credentials(g)
	page, err := t.services.Results(r.Context(), cred, id, advantage.ResultsQuery{
		UserID: q.Get("userId"), Limit: limit, URL: q.Get("url"),
	})
	if err != nil {
		httpapi.WriteError(w, upstreamError(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
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

func fieldError(e *advantage.FieldError) *httpapi.Error {
	if e == nil {
		return nil
	}
	return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, e.Field+": "+e.Message+".")
}
