package toolmode

import (
	"context"
	"net/http"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// Groups serves GET /api/groups: a page of the context's groups (Course Groups Service),
// all of them or those of one user (userId, or its LTI spelling user_id).
func (t *Tool) Groups(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	if g.GroupsURL == "" {
		httpapi.WriteError(w, notAvailable("The Course Groups Service is not available in this launch's context."))
		return
	}
	q := r.URL.Query()
	limit, herr := queryLimit(q.Get("limit"))
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	user := q.Get("userId")
	if user == "" {
		user = q.Get("user_id")
	}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		return t.services.Groups(ctx, cred, g.GroupsURL, advantage.GroupsQuery{UserID: user, Limit: limit, URL: q.Get("url")})
	})
}

// GroupSets serves GET /api/groupsets: a page of the context's group sets.
func (t *Tool) GroupSets(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	if g.GroupSetsURL == "" {
		httpapi.WriteError(w, notAvailable("The launch names no group sets URL (Course Groups Service)."))
		return
	}
	q := r.URL.Query()
	limit, herr := queryLimit(q.Get("limit"))
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		return t.services.GroupSets(ctx, cred, g.GroupSetsURL, advantage.GroupSetsQuery{Limit: limit, URL: q.Get("url")})
	})
}
