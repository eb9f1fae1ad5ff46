package toolmode

import (
	"context"
	"net/http"
	"net/url"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// Groups serves GET /api/groups: a page of the context's groups (Course Groups Service),
// all of them or those of one user (userId, or its LTI spelling user_id).
func (t *Tool) Groups(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	t.groupsPage(w, r, g.GroupsURL, "The Course Groups Service is not available in this launch's context.",
		func(ctx context.Context, cred advantage.Credentials, q url.Values, limit int) (any, error) {
			user := q.Get("userId")
			if user == "" {
				user = q.Get("user_id")
			}
			return t.services.Groups(ctx, cred, g.GroupsURL, advantage.GroupsQuery{UserID: user, Limit: limit, URL: q.Get("url")})
		})
}

// GroupSets serves GET /api/groupsets: a page of the context's group sets.
func (t *Tool) GroupSets(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	t.groupsPage(w, r, g.GroupSetsURL, "The launch names no group sets URL (Course Groups Service).",
		func(ctx context.Context, cred advantage.Credentials, q url.Values, limit int) (any, error) {
			return t.services.GroupSets(ctx, cred, g.GroupSetsURL, advantage.GroupSetsQuery{Limit: limit, URL: q.Get("url")})
		})
}

// groupsPage answers a page of the Course Groups Service from serviceURL, the launch's
// groups or group sets URL (empty: the service is not available, and unavailable says
// why): the limit is checked, then fetch reads the page with the platform's credentials.
func (t *Tool) groupsPage(w http.ResponseWriter, r *http.Request, serviceURL, unavailable string,
	fetch func(ctx context.Context, cred advantage.Credentials, q url.Values, limit int) (any, error)) {
	if serviceURL == "" {
		httpapi.WriteError(w, notAvailable(unavailable))
		return
	}
	q := r.URL.Query()
	limit, herr := queryLimit(q.Get("limit"))
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		return fetch(ctx, cred, q, limit)
	})
}
