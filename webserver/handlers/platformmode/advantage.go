package platformmode

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// The NRPS 2.0 and AGS 2.0 endpoints ltiop serves to tools in platform mode
// (docs/platform-services.md, rules P-NRPS and P-AGS). They keep no state: the grant in the
// URL says which tool, deployment and context a call is about, and the data comes from
// the integrator's platform data API.

// Media types (NRPS §, AGS §3.2.1, §3.3.4, §3.4.3).
const (
	mediaMembershipContainer = advantage.MediaTypeMembershipContainer
	mediaLineItem            = advantage.MediaTypeLineItem
	mediaLineItemContainer   = advantage.MediaTypeLineItemContainer
	mediaResultContainer     = advantage.MediaTypeResultContainer
	mediaScore               = advantage.MediaTypeScore
)

// Page sizes of the lists (P-NRPS-06, P-AGS-04, P-AGS-08).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
	maxCursor       = 1024
	maxFilter       = 255
	maxServiceBody  = 64 << 10
)

// nrpsMember is a member in the NRPS 2.0 wire form.
type nrpsMember struct {
	UserID             string   `json:"user_id"`
	Roles              []string `json:"roles"`
	Status             string   `json:"status"`
	Name               string   `json:"name,omitempty"`
	GivenName          string   `json:"given_name,omitempty"`
	FamilyName         string   `json:"family_name,omitempty"`
	MiddleName         string   `json:"middle_name,omitempty"`
	Email              string   `json:"email,omitempty"`
	Picture            string   `json:"picture,omitempty"`
	LisPersonSourcedID string   `json:"lis_person_sourcedid,omitempty"`
	LTI11LegacyUserID  string   `json:"lti11_legacy_user_id,omitempty"`
}

type membershipContainer struct {
	ID      string               `json:"id"`
	Context platformdata.Context `json:"context"`
	Members []nrpsMember         `json:"members"`
}

type resultJSON struct {
	ID            string   `json:"id"`
	ScoreOf       string   `json:"scoreOf"`
	UserID        string   `json:"userId"`
	ResultScore   *float64 `json:"resultScore,omitempty"`
	ResultMaximum *float64 `json:"resultMaximum,omitempty"`
	Comment       string   `json:"comment,omitempty"`
	ScoringUserID string   `json:"scoringUserId,omitempty"`
	Timestamp     string   `json:"timestamp,omitempty"`
}

// dataURL is the data API base of a tool: its own, or the installation's.
func (p *Platform) dataURL(c *call) string {
	if u := string(c.tool.Spec.PlatformDataURL); u != "" {
		return u
	}
	return p.opts.DataURL
}

// servesData reports whether the data API is configured for t (launch side: claims of
// services ltiop serves need it).
func (p *Platform) servesData(t *registry.Tool) bool {
	return p.data != nil && (t.Spec.PlatformDataURL != "" || p.opts.DataURL != "")
}

func (p *Platform) dataRequest(c *call, op string) *platformdata.Request {
	return &platformdata.Request{Operation: op, ContextID: c.grant.ContextID,
		Tool: platformdata.Tool{ID: c.tool.ID, ClientID: c.tool.ClientID, DeploymentID: c.tool.DeploymentID}}
}

// serviceError answers a refused service call and counts it; once authorised (c not
// nil), the tool's registration learns of it too.
func (p *Platform) serviceError(w http.ResponseWriter, c *call, endpoint string, e *httpapi.Error) {
	count(endpoint, e.Code)
	if c != nil {
		p.refused(c.tool, launchhealth.StepService, e)
	}
	if e.Status == http.StatusBadGateway {
		w.Header().Set("Retry-After", strconv.Itoa(platformdata.RetryAfterSeconds))
	}
	httpapi.WriteError(w, e)
}

// writeMedia writes v as JSON with the service's media type.
func writeMedia(w http.ResponseWriter, status int, media string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The answer could not be encoded."))
		return
	}
	h := w.Header()
	h.Set("Content-Type", media)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// pageQuery reads limit and cursor (P-NRPS-06): limit a positive integer (at most
// MaxPageSize; more is cut down, as the spec lets a platform send fewer), cursor as given
// in a next link.
func pageQuery(q, next url.Values, req *platformdata.Request) *httpapi.Error {
	req.Limit = DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return invalid("limit", "must be a positive integer")
		}
		req.Limit = min(n, MaxPageSize)
		next.Set("limit", strconv.Itoa(req.Limit))
	}
	req.Cursor = q.Get("cursor")
	if len(req.Cursor) > maxCursor {
		return invalid("cursor", "is not a cursor of a next link")
	}
	return nil
}

// filter reads an optional text filter of at most maxFilter bytes, and keeps it in the
// next link's query.
func filter(q, next url.Values, name string, dst *string) *httpapi.Error {
	v := q.Get(name)
	if len(v) > maxFilter {
		return invalid(name, "must be at most 255 characters")
	}
	*dst = v
	if v != "" {
		next.Set(name, v)
	}
	return nil
}

// nextLink sets Link: <base?query&cursor=next>; rel="next" when the integrator has more.
func nextLink(w http.ResponseWriter, base string, q url.Values, next string) {
	if next == "" {
		return
	}
	q.Set("cursor", next)
	w.Header().Set("Link", "<"+base+"?"+q.Encode()+`>; rel="next"`)
}

// Memberships serves GET {root}/memberships: NRPS 2.0 context membership (P-NRPS).
func (p *Platform) Memberships(w http.ResponseWriter, r *http.Request) {
	const endpoint = "memberships"
	c, e := p.authorise(w, r, ltiwire.ScopesMemberships...)
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	q := r.URL.Query()
	req := p.dataRequest(c, platformdata.OpMemberships)
	next := url.Values{}
	if role := q.Get("role"); role != "" { // P-NRPS-05: a full URI or a short name
		roles := lti.MembershipRoles([]string{role})
		if len(roles) == 0 {
			p.serviceError(w, c, endpoint, invalid("role", strconv.Quote(role)+" is not a role of the LIS vocabulary"))
			return
		}
		req.Role = roles[0]
		next.Set("role", role)
	}
	if e := filter(q, next, "rlid", &req.ResourceLinkID); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	if e := pageQuery(q, next, req); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	var page platformdata.MembersPage
	if e := p.data.Call(r.Context(), p.dataURL(c), req, &page); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	out := membershipContainer{ID: c.root + "/memberships", Context: platformdata.Context{ID: c.grant.ContextID}, Members: make([]nrpsMember, 0, len(page.Members))}
	if r.URL.RawQuery != "" {
		out.ID += "?" + r.URL.RawQuery
	}
	if pc := page.Context; pc != nil {
		out.Context.Label, out.Context.Title = pc.Label, pc.Title
	}
	for i := range page.Members {
		m := &page.Members[i]
		if m.UserID == "" {
			p.serviceError(w, c, endpoint, httpapi.Errorf(http.StatusBadGateway, platformdata.CodeUnavailable,
				"The platform's data API answered a member without userId. Nothing was written; try again."))
			return
		}
		status := m.Status
		if status == "" {
			status = "Active"
		}
		out.Members = append(out.Members, nrpsMember{UserID: m.UserID, Roles: lti.MembershipRoles(m.Roles), Status: status,
			Name: m.Name, GivenName: m.GivenName, FamilyName: m.FamilyName, MiddleName: m.MiddleName, Email: m.Email,
			Picture: m.Picture, LisPersonSourcedID: m.LisPersonSourcedID, LTI11LegacyUserID: m.LTI11LegacyUserID})
	}
	nextLink(w, c.root+"/memberships", next, page.Next)
	count(endpoint, "ok")
	writeMedia(w, http.StatusOK, mediaMembershipContainer, &out)
}

// LineItems serves GET {root}/lineitems: the line item container, filtered (P-AGS-04).
func (p *Platform) LineItems(w http.ResponseWriter, r *http.Request) {
	const endpoint = "lineitems"
	c, e := p.authorise(w, r, ltiwire.ScopesLineItemRead...)
	if e == nil {
		e = c.grant.checkLineItem("")
	}
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	q := r.URL.Query()
	req := p.dataRequest(c, platformdata.OpLineItems)
	next := url.Values{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"resource_link_id", &req.ResourceLinkID}, {"resource_id", &req.ResourceID}, {"tag", &req.Tag}} {
		if e := filter(q, next, f.name, f.dst); e != nil {
			p.serviceError(w, c, endpoint, e)
			return
		}
	}
	if e := pageQuery(q, next, req); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	var page platformdata.LineItemsPage
	if e := p.data.Call(r.Context(), p.dataURL(c), req, &page); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	items := make([]advantage.LineItem, 0, len(page.LineItems))
	for _, li := range page.LineItems {
		if li.ID == "" {
			p.serviceError(w, c, endpoint, missingID())
			return
		}
		li.ID = lineItemURL(c.root, li.ID)
		items = append(items, li)
	}
	nextLink(w, c.root+"/lineitems", next, page.Next)
	count(endpoint, "ok")
	writeMedia(w, http.StatusOK, mediaLineItemContainer, items)
}

func missingID() *httpapi.Error {
	return httpapi.Errorf(http.StatusBadGateway, platformdata.CodeUnavailable,
		"The platform's data API answered a line item without id. Try again.")
}

// readBody checks the Content-Type (P-AGS-03) and decodes the JSON body into v.
func readBody(r *http.Request, media string, v any) *httpapi.Error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != media {
		return httpapi.Errorf(http.StatusUnsupportedMediaType, httpapi.CodeUnsupportedMedia, "The body must be "+media+".")
	}
	b, err := readAllLimited(r, maxServiceBody)
	if err != nil {
		return httpapi.Errorf(http.StatusRequestEntityTooLarge, httpapi.CodePayloadTooLarge, "The body is larger than 64 KiB.")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidBody, "The body is not a JSON object of the expected shape.")
	}
	return nil
}

// readLineItem reads and checks a posted or put line item (P-AGS-05).
func readLineItem(r *http.Request) (*advantage.LineItem, *httpapi.Error) {
	var li advantage.LineItem
	if e := readBody(r, mediaLineItem, &li); e != nil {
		return nil, e
	}
	if fe := advantage.ValidateLineItem(&li); fe != nil {
		return nil, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeInvalidLineItem, fe.Error())
	}
	return &li, nil
}

// CreateLineItem serves POST {root}/lineitems (P-AGS-05): 201 with the created item.
func (p *Platform) CreateLineItem(w http.ResponseWriter, r *http.Request) {
	const endpoint = "lineitems"
	c, e := p.authorise(w, r, ltiwire.ScopesLineItemEdit...)
	if e == nil {
		e = c.grant.checkLineItem("")
	}
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	li, e := readLineItem(r)
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	li.ID = ""
	req := p.dataRequest(c, platformdata.OpCreateLineItem)
	req.LineItem = li
	p.lineItemAnswer(w, r, c, endpoint, req, http.StatusCreated)
}

// lineItemAnswer calls the data API and answers the line item it returns.
func (p *Platform) lineItemAnswer(w http.ResponseWriter, r *http.Request, c *call, endpoint string, req *platformdata.Request, status int) {
	var out advantage.LineItem
	if e := p.data.Call(r.Context(), p.dataURL(c), req, &out); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	if out.ID == "" {
		if req.LineItemID == "" {
			p.serviceError(w, c, endpoint, missingID())
			return
		}
		out.ID = req.LineItemID
	}
	out.ID = lineItemURL(c.root, out.ID)
	if status == http.StatusCreated {
		w.Header().Set("Location", out.ID)
	}
	count(endpoint, "ok")
	writeMedia(w, status, mediaLineItem, &out)
}

// lineItemCall authorises a call on {root}/lineitems/{lineItem}.
func (p *Platform) lineItemCall(w http.ResponseWriter, r *http.Request, endpoint, op string, accept []string) (*call, *platformdata.Request, bool) {
	c, e := p.authorise(w, r, accept...)
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return nil, nil, false
	}
	id := r.PathValue("lineItem")
	if id == "" || len(id) > maxCursor {
		p.serviceError(w, c, endpoint, httpapi.Errorf(http.StatusNotFound, httpapi.CodeNotFound, "No such line item."))
		return nil, nil, false
	}
	if e := c.grant.checkLineItem(id); e != nil {
		p.serviceError(w, c, endpoint, e)
		return nil, nil, false
	}
	req := p.dataRequest(c, op)
	req.LineItemID = id
	return c, req, true
}

// GetLineItem serves GET {root}/lineitems/{lineItem}.
func (p *Platform) GetLineItem(w http.ResponseWriter, r *http.Request) {
	c, req, ok := p.lineItemCall(w, r, "lineitem", platformdata.OpGetLineItem, ltiwire.ScopesLineItemRead)
	if ok {
		p.lineItemAnswer(w, r, c, "lineitem", req, http.StatusOK)
	}
}

// UpdateLineItem serves PUT {root}/lineitems/{lineItem}: the tool must not change the id
// (AGS §3.2.6); the answer is the item as applied.
func (p *Platform) UpdateLineItem(w http.ResponseWriter, r *http.Request) {
	const endpoint = "lineitem"
	c, req, ok := p.lineItemCall(w, r, endpoint, platformdata.OpUpdateLineItem, ltiwire.ScopesLineItemEdit)
	if !ok {
		return
	}
	li, e := readLineItem(r)
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	if li.ID != "" && li.ID != lineItemURL(c.root, req.LineItemID) {
		p.serviceError(w, c, endpoint, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeInvalidLineItem, "id: must be this line item's URL (a line item's id cannot change)"))
		return
	}
	li.ID = req.LineItemID
	req.LineItem = li
	p.lineItemAnswer(w, r, c, endpoint, req, http.StatusOK)
}

// DeleteLineItem serves DELETE {root}/lineitems/{lineItem}: 204.
func (p *Platform) DeleteLineItem(w http.ResponseWriter, r *http.Request) {
	const endpoint = "lineitem"
	c, req, ok := p.lineItemCall(w, r, endpoint, platformdata.OpDeleteLineItem, ltiwire.ScopesLineItemEdit)
	if !ok {
		return
	}
	if e := p.data.Call(r.Context(), p.dataURL(c), req, nil); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	count(endpoint, "ok")
	w.WriteHeader(http.StatusNoContent)
}

// scoreAnswer is the body of an accepted score (as Canvas answers): where the result is.
type scoreAnswer struct {
	ResultURL string `json:"resultUrl"`
}

// PostScore serves POST {root}/lineitems/{lineItem}/scores (P-AGS-07).
func (p *Platform) PostScore(w http.ResponseWriter, r *http.Request) {
	const endpoint = "scores"
	c, req, ok := p.lineItemCall(w, r, endpoint, platformdata.OpScore, ltiwire.ScopesScore)
	if !ok {
		return
	}
	var raw json.RawMessage
	if e := readBody(r, mediaScore, &raw); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	s, e := decodeScore(raw)
	if e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	if fe := advantage.ValidateReceivedScore(s); fe != nil {
		p.serviceError(w, c, endpoint, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeInvalidScore, fe.Error()))
		return
	}
	req.Score = s
	if e := p.data.Call(r.Context(), p.dataURL(c), req, nil); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	count(endpoint, "ok")
	httpapi.WriteJSON(w, http.StatusOK, scoreAnswer{
		ResultURL: lineItemURL(c.root, req.LineItemID) + "/results?" + url.Values{"user_id": {s.UserID}}.Encode()})
}

// decodeScore reads a posted score. scoreGiven and scoreMaximum may be numbers written as
// JSON strings ("85.00000"): Moodle's grade sync sends its grades so (P-AGS-07); they are
// read as the numbers they spell, and anything else not a number is refused.
func decodeScore(body []byte) (*advantage.Score, *httpapi.Error) {
	var s advantage.Score
	if json.Unmarshal(body, &s) == nil {
		return &s, nil
	}
	var raw map[string]json.RawMessage // the slow path, for numbers in strings
	if json.Unmarshal(body, &raw) != nil {
		return nil, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidBody, "The body is not a JSON object.")
	}
	for _, k := range []string{"scoreGiven", "scoreMaximum"} {
		if v, ok := raw[k]; ok && len(v) > 0 && v[0] == '"' {
			f, err := advantage.ParseNumber(v)
			if err != nil {
				return nil, httpapi.Errorf(http.StatusBadRequest, ltiplatform.CodeInvalidScore, k+": must be a number")
			}
			raw[k] = strconv.AppendFloat(nil, f, 'g', -1, 64)
		}
	}
	b, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return nil, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidBody, "The body is not a score of the expected shape.")
	}
	return &s, nil
}

// Results serves GET {root}/lineitems/{lineItem}/results (P-AGS-08).
func (p *Platform) Results(w http.ResponseWriter, r *http.Request) {
	const endpoint = "results"
	c, req, ok := p.lineItemCall(w, r, endpoint, platformdata.OpResults, ltiwire.ScopesResults)
	if !ok {
		return
	}
	q := r.URL.Query()
	next := url.Values{}
	if e := filter(q, next, "user_id", &req.UserID); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	if e := pageQuery(q, next, req); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	var page platformdata.ResultsPage
	if e := p.data.Call(r.Context(), p.dataURL(c), req, &page); e != nil {
		p.serviceError(w, c, endpoint, e)
		return
	}
	item := lineItemURL(c.root, req.LineItemID)
	out := make([]resultJSON, 0, len(page.Results))
	for _, res := range page.Results {
		if res.UserID == "" {
			p.serviceError(w, c, endpoint, httpapi.Errorf(http.StatusBadGateway, platformdata.CodeUnavailable,
				"The platform's data API answered a result without userId. Try again."))
			return
		}
		out = append(out, resultJSON{ID: item + "/results?" + url.Values{"user_id": {res.UserID}}.Encode(), ScoreOf: item,
			UserID: res.UserID, ResultScore: res.ResultScore, ResultMaximum: res.ResultMaximum, Comment: res.Comment,
			ScoringUserID: res.ScoringUserID, Timestamp: res.Timestamp})
	}
	nextLink(w, item+"/results", next, page.Next)
	count(endpoint, "ok")
	writeMedia(w, http.StatusOK, mediaResultContainer, out)
}

// readAllLimited reads the body up to limit bytes; more is an error.
func readAllLimited(r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = io.ErrShortBuffer
	}
	return b, err
}
