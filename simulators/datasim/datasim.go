// Package datasim is an integrator's platform data API in memory: what ltiop calls in
// platform mode to serve Names and Roles and Assignment and Grades to tools
// (docs/platform-services.md, "The platform data API"). It checks every call's Standard
// Webhooks signature and that the body's operation is the one of its path, keeps members,
// line items and scores per context, and can be told to fail.
//
// Line items and scores are scoped as an integrator must scope them: by context, and each
// line item belongs to one tool, the tool that created it or the one it was given to
// (AddLineItem). A line item of another context or of another tool is 404; a tool's list
// holds its own line items only.
package datasim

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ltiop/ltiop/simulators/stdwebhook"
)

// API is the simulated data API. Its zero value is not usable: call New.
type API struct {
	key []byte

	mu       sync.Mutex
	contexts map[string]*course
	nextID   int
	calls    []Request
	failWith int           // answer every call with this status (0: serve)
	delay    time.Duration // wait before answering

	// Served counts the calls answered 2xx.
	Served atomic.Int64
}

type course struct {
	title     string
	members   []Member
	lineItems []ownedLineItem
	scores    map[string][]Score // by line item id
}

// ownedLineItem is a line item and the tool (ToolRegistration name) it belongs to.
type ownedLineItem struct {
	LineItem
	tool string
}

// New returns a data API that accepts calls signed with key (the decoded webhook secret).
func New(key []byte) *API {
	return &API{key: key, contexts: map[string]*course{}}
}

func (a *API) course(id string) *course {
	c := a.contexts[id]
	if c == nil {
		c = &course{scores: map[string][]Score{}}
		a.contexts[id] = c
	}
	return c
}

// AddMembers adds members to a context.
func (a *API) AddMembers(contextID, title string, members ...Member) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.course(contextID)
	c.title = title
	c.members = append(c.members, members...)
}

// AddLineItem adds a line item of toolID (the ToolRegistration's name) to a context, as an
// integrator does for the line item it names in that tool's launches, and returns its id.
func (a *API) AddLineItem(contextID, toolID string, li LineItem) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.add(a.course(contextID), toolID, li).ID
}

func (a *API) add(c *course, toolID string, li LineItem) LineItem {
	a.nextID++
	li.ID = "li-" + strconv.Itoa(a.nextID)
	c.lineItems = append(c.lineItems, ownedLineItem{LineItem: li, tool: toolID})
	return li
}

// Scores returns the scores received for a line item of a context.
func (a *API) Scores(contextID, lineItemID string) []Score {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.course(contextID).scores[lineItemID])
}

// Calls returns the calls received (signature checked), oldest first.
func (a *API) Calls() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// Fail makes every call answer status (0: serve again).
func (a *API) Fail(status int) {
	a.mu.Lock()
	a.failWith = status
	a.mu.Unlock()
}

// Delay makes every call wait d before answering.
func (a *API) Delay(d time.Duration) {
	a.mu.Lock()
	a.delay = d
	a.mu.Unlock()
}

// Handler serves the data API under its base URL.
func (a *API) Handler() http.Handler { return http.HandlerFunc(a.serve) }

func refuse(w http.ResponseWriter, status int, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"status": status, "error": http.StatusText(status),
		"details": map[string]string{"message": "REFUSED", "description": desc}})
	_, _ = w.Write(b)
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || r.Method != http.MethodPost {
		refuse(w, http.StatusBadRequest, "POST a JSON body")
		return
	}
	if err := stdwebhook.Verify(a.key, r.Header, body, time.Now()); err != nil {
		refuse(w, http.StatusUnauthorized, "bad signature")
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil || !strings.HasSuffix(r.URL.Path, Path(req.Operation)) || Path(req.Operation) == "" {
		refuse(w, http.StatusBadRequest, "the operation is not the one of the path")
		return
	}
	a.mu.Lock()
	a.calls = append(a.calls, req)
	fail, delay := a.failWith, a.delay
	a.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if fail != 0 {
		refuse(w, fail, "told to fail")
		return
	}
	status, out := a.answer(&req)
	if status >= 300 {
		refuse(w, status, out.(string))
		return
	}
	a.Served.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if out != nil {
		_ = json.NewEncoder(w).Encode(out)
	}
}

// page cuts list at cursor (an index) and limit.
func page[T any](list []T, cursor string, limit int) ([]T, string) {
	start, _ := strconv.Atoi(cursor)
	start = min(max(start, 0), len(list))
	end := len(list)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	next := ""
	if end < len(list) {
		next = strconv.Itoa(end)
	}
	return list[start:end], next
}

func (a *API) answer(req *Request) (int, any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.contexts[req.ContextID]
	if !ok {
		return http.StatusNotFound, "no such context"
	}
	find := func() int { // the tool's own line item only
		for i := range c.lineItems {
			if c.lineItems[i].ID == req.LineItemID && c.lineItems[i].tool == req.Tool.ID {
				return i
			}
		}
		return -1
	}
	switch req.Operation {
	case OpMemberships:
		var list []Member
		for _, m := range c.members {
			if req.Role == "" || hasRole(m.Roles, req.Role) {
				list = append(list, m)
			}
		}
		members, next := page(list, req.Cursor, req.Limit)
		return http.StatusOK, MembersPage{Context: &Context{ID: req.ContextID, Title: c.title}, Members: members, Next: next}
	case OpLineItems:
		var list []LineItem
		for _, li := range c.lineItems {
			if li.tool == req.Tool.ID && (req.ResourceLinkID == "" || li.ResourceLinkID == req.ResourceLinkID) && (req.ResourceID == "" || li.ResourceID == req.ResourceID) &&
				(req.Tag == "" || li.Tag == req.Tag) {
				list = append(list, li.LineItem)
			}
		}
		items, next := page(list, req.Cursor, req.Limit)
		return http.StatusOK, LineItemsPage{LineItems: items, Next: next}
	case OpCreateLineItem:
		return http.StatusCreated, a.add(c, req.Tool.ID, *req.LineItem)
	case OpGetLineItem, OpUpdateLineItem, OpDeleteLineItem:
		i := find()
		if i < 0 {
			return http.StatusNotFound, "no such line item of this tool in this context"
		}
		switch req.Operation {
		case OpUpdateLineItem:
			li := *req.LineItem
			li.ID = req.LineItemID
			c.lineItems[i].LineItem = li
		case OpDeleteLineItem:
			c.lineItems = slices.Delete(c.lineItems, i, i+1)
			return http.StatusNoContent, nil
		}
		return http.StatusOK, c.lineItems[i].LineItem
	case OpScore:
		if find() < 0 {
			return http.StatusNotFound, "no such line item of this tool in this context"
		}
		prev := c.scores[req.LineItemID]
		for _, s := range prev { // AGS §3.4: an older timestamp does not replace a newer one
			if s.UserID == req.Score.UserID && s.Timestamp >= req.Score.Timestamp {
				return http.StatusConflict, "a newer score is on record"
			}
		}
		c.scores[req.LineItemID] = append(prev, *req.Score)
		return http.StatusNoContent, nil
	case OpResults:
		if find() < 0 {
			return http.StatusNotFound, "no such line item of this tool in this context"
		}
		latest := map[string]Score{}
		var order []string
		for _, s := range c.scores[req.LineItemID] {
			if _, seen := latest[s.UserID]; !seen {
				order = append(order, s.UserID)
			}
			latest[s.UserID] = s
		}
		var results []Result
		for _, u := range order {
			s := latest[u]
			if req.UserID != "" && u != req.UserID {
				continue
			}
			results = append(results, Result{UserID: u, ResultScore: s.ScoreGiven, ResultMaximum: s.ScoreMaximum,
				Comment: s.Comment, Timestamp: s.Timestamp})
		}
		list, next := page(results, req.Cursor, req.Limit)
		return http.StatusOK, ResultsPage{Results: list, Next: next}
	}
	return http.StatusBadRequest, "unknown operation"
}

// membershipRole is the LIS namespace of the context roles a short role name stands for.
const membershipRole = "http://purl.imsglobal.org/vocab/lis/v2/membership#"

// hasRole reports whether roles, full LIS URIs or short context role names
// (service-interface §2.1), include role, a full URI.
func hasRole(roles []string, role string) bool {
	for _, r := range roles {
		if r == "Student" {
			r = "Learner"
		}
		if r == role || (!strings.Contains(r, ":") && membershipRole+r == role) {
			return true
		}
	}
	return false
}
