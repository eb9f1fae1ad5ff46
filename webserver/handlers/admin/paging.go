package admin

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Paging of GET /api/platforms. Without limit and cursor the answer is the whole list, as
// the service interface shows it. With them it is one page in ID order and, when more
// remain, "next" (and a Link header): the URL of the following page, whose cursor is the
// last ID served, sealed with the sealing keyring. Sealed, a cursor opens on every replica
// and cannot be forged or edited; keyed by ID rather than by position, a registration
// added or deleted between pages moves no other one.
const (
	// MaxPageLimit is the largest limit a page may ask for.
	MaxPageLimit = 1000
	// cursorLifetime is how long a cursor opens: long enough for any sane paging loop.
	cursorLifetime = 24 * time.Hour
)

// listQuery is what a list request asks for.
type listQuery struct {
	Filters map[string]string // exact-match filters by query parameter; "" for any
	Limit   int               // page size; 0: the whole list, unpaged
	After   string            // the page starts after this ID
}

// matches reports whether v passes the filter name (an empty filter passes everything).
func (lq *listQuery) matches(name, v string) bool {
	f := lq.Filters[name]
	return f == "" || f == v
}

// cursor is the sealed payload: where the next page starts and what list it belongs to.
type cursor struct {
	After   string            `json:"a"`
	Limit   int               `json:"l"`
	Filters map[string]string `json:"f,omitempty"`
}

func badParameter(description string) *httpapi.Error {
	return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, description)
}

// pager reads and writes the limit and cursor of a list (/api/platforms, /api/tools).
type pager struct {
	cursors   *sessions.Keyring
	publicURL string
}

// parse reads the filters, limit and cursor. A cursor must come from a list with the same
// filters; its limit applies unless limit is given again.
func (pg pager) parse(q url.Values, filters ...string) (listQuery, *httpapi.Error) {
	lq := listQuery{Filters: map[string]string{}}
	for _, name := range filters {
		if v := q.Get(name); v != "" {
			lq.Filters[name] = v
		}
	}
	for _, name := range []string{"limit", "cursor"} {
		if len(q[name]) > 1 {
			return lq, badParameter(name + ": given more than once.")
		}
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxPageLimit {
			return lq, badParameter("limit: must be a whole number from 1 to " + strconv.Itoa(MaxPageLimit) + ".")
		}
		lq.Limit = n
	}
	v, ok := q["cursor"]
	if !ok {
		return lq, nil
	}
	if pg.cursors == nil {
		return lq, badParameter("cursor: this server issues no cursors.")
	}
	payload, _, err := pg.cursors.Open(sessions.PurposeListCursor, v[0], time.Now())
	var c cursor
	switch {
	case errors.Is(err, sessions.ErrExpired):
		return lq, badParameter("cursor: expired; list again without it.")
	case err != nil, json.Unmarshal(payload, &c) != nil, c.After == "", c.Limit < 1 || c.Limit > MaxPageLimit:
		return lq, badParameter("cursor: not a cursor of this list; pass next back as it came, or list again without it.")
	case !maps.Equal(c.Filters, lq.Filters) && len(c.Filters)+len(lq.Filters) > 0:
		return lq, badParameter("cursor: issued for other filters; keep " + strings.Join(filters, ", ") + " as they were.")
	}
	lq.After = c.After
	if lq.Limit == 0 {
		lq.Limit = c.Limit
	}
	return lq, nil
}

// next is the address of the page after the one that ended with the ID last.
func (pg pager) next(r *http.Request, lq listQuery, last string) (string, *httpapi.Error) {
	c := cursor{After: last, Limit: lq.Limit}
	if len(lq.Filters) > 0 {
		c.Filters = lq.Filters
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The next page could not be described.")
	}
	if pg.cursors == nil {
		return "", sessions.ErrSealingNotReady
	}
	sealed, err := pg.cursors.Seal(sessions.PurposeListCursor, payload, cursorLifetime)
	if err != nil {
		return "", sessions.ErrSealingNotReady
	}
	q := url.Values{"limit": {strconv.Itoa(lq.Limit)}, "cursor": {sealed}}
	for name, v := range lq.Filters {
		q.Set(name, v)
	}
	return strings.TrimRight(pg.publicURL, "/") + r.URL.Path + "?" + q.Encode(), nil
}

// parseListQuery reads a platforms list query (filters id, url and clientId).
func (h *Platforms) parseListQuery(q url.Values) (listQuery, *httpapi.Error) {
	return pager{h.Cursors, h.PublicURL}.parse(q, "id", "url", "clientId")
}

// nextURL is the next page's address of a platforms list.
func (h *Platforms) nextURL(r *http.Request, lq listQuery, last string) (string, *httpapi.Error) {
	return pager{h.Cursors, h.PublicURL}.next(r, lq, last)
}
