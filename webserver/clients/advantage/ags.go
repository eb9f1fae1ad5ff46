package advantage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// AGS 2.0 media types (conformance §4). The score type is v1, not v2 (T-AGS-03).
const (
	MediaTypeLineItem          = "application/vnd.ims.lis.v2.lineitem+json"
	MediaTypeLineItemContainer = "application/vnd.ims.lis.v2.lineitemcontainer+json"
	MediaTypeResultContainer   = "application/vnd.ims.lis.v2.resultcontainer+json"
	MediaTypeScore             = "application/vnd.ims.lis.v1.score+json"
)

// maxFindPages bounds the pages FindOrCreateLineItem reads before creating.
const maxFindPages = 20

// LineItem is an AGS line item (a gradebook column).
type LineItem struct {
	ID             string  `json:"id,omitempty"` // its URL, assigned by the platform
	Label          string  `json:"label"`
	ScoreMaximum   float64 `json:"scoreMaximum"`
	ResourceLinkID string  `json:"resourceLinkId,omitempty"`
	ResourceID     string  `json:"resourceId,omitempty"`
	Tag            string  `json:"tag,omitempty"`
	StartDateTime  string  `json:"startDateTime,omitempty"`
	EndDateTime    string  `json:"endDateTime,omitempty"`
	GradesReleased *bool   `json:"gradesReleased,omitempty"`
	// Extensions are the members named by fully-qualified URLs (e.g.
	// https://canvas.instructure.com/lti/submission_type), and submissionReview: kept on
	// read, written back on update.
	Extensions map[string]json.RawMessage `json:"-"`
}

// lineItemJSON has LineItem's fields and tags but not its methods.
type lineItemJSON LineItem

// lineItemWire decodes a line item tolerantly: numeric ids, a numeric-string scoreMaximum,
// nulls for absent dates.
type lineItemWire struct {
	ID             flexString `json:"id"`
	Label          string     `json:"label"`
	ScoreMaximum   flexFloat  `json:"scoreMaximum"`
	ResourceLinkID flexString `json:"resourceLinkId"`
	ResourceID     flexString `json:"resourceId"`
	Tag            flexString `json:"tag"`
	StartDateTime  string     `json:"startDateTime"`
	EndDateTime    string     `json:"endDateTime"`
	GradesReleased *bool      `json:"gradesReleased"`
}

func isLineItemField(k string) bool {
	switch k {
	case "id", "label", "scoreMaximum", "resourceLinkId", "resourceId", "tag", "startDateTime", "endDateTime", "gradesReleased":
		return true
	}
	return false
}

func isLineItemExtension(k string) bool {
	return !isLineItemField(k) && (isExtensionKey(k) || k == "submissionReview")
}

// MarshalJSON writes the line item's fields and then its extensions.
func (li LineItem) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(lineItemJSON(li))
	if err != nil {
		return nil, err
	}
	return appendMembers(out, li.Extensions, isLineItemField)
}

// UnmarshalJSON reads the line item's fields and keeps its extension members.
func (li *LineItem) UnmarshalJSON(data []byte) error {
	var w lineItemWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	ext, err := extensionMembers(data, isLineItemExtension)
	if err != nil {
		return err
	}
	*li = LineItem{
		ID: string(w.ID), Label: w.Label, ScoreMaximum: float64(w.ScoreMaximum),
		ResourceLinkID: string(w.ResourceLinkID), ResourceID: string(w.ResourceID), Tag: string(w.Tag),
		StartDateTime: w.StartDateTime, EndDateTime: w.EndDateTime, GradesReleased: w.GradesReleased,
		Extensions: ext,
	}
	return nil
}

// LineItemsQuery filters a line item container (AGS §3.2.4; filters AND together).
type LineItemsQuery struct {
	ResourceLinkID string
	ResourceID     string
	Tag            string
	Limit          int
	// URL is a paging link from an earlier page: used as is (T-AGS-10), the other fields
	// ignored; it must be on the container URL's host.
	URL string
}

// LineItemsPage is one page of a line item container, with its paging links (each
// checked to be on the container's host).
type LineItemsPage struct {
	LineItems []LineItem `json:"lineItems"`
	Next      string     `json:"next,omitempty"`
	Prev      string     `json:"prev,omitempty"`
	First     string     `json:"first,omitempty"`
	Last      string     `json:"last,omitempty"`
}

// LineItems fetches one page of the line items of the container containerURL (the
// launch's AGS lineitems URL).
func (c *Client) LineItems(ctx context.Context, cred Credentials, containerURL string, q LineItemsQuery) (*LineItemsPage, error) {
	return c.lineItems(ctx, cred, "lineitems", containerURL, q, ltiwire.ScopesLineItemRead)
}

// lineItems is LineItems asking for need's scopes (write, when a write follows: one token).
func (c *Client) lineItems(ctx context.Context, cred Credentials, op, containerURL string, q LineItemsQuery, need []string) (*LineItemsPage, error) {
	if _, err := parseHTTPURL(containerURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: container URL: %w", op, err)
	}
	target := q.URL
	if target != "" {
		if err := checkPageURL(op, containerURL, target); err != nil {
			return nil, err
		}
	} else {
		target = addQuery(containerURL, "resource_link_id", q.ResourceLinkID, "resource_id", q.ResourceID,
			"tag", q.Tag, "limit", itoa(q.Limit))
	}
	scopes, err := serviceScopes(op, &cred, need...)
	if err != nil {
		return nil, err
	}
	body, res, err := c.get(ctx, cred, op, scopes, need, target, MediaTypeLineItemContainer, maxAGSBody) //nolint:bodyclose // get closes the body; res is returned for its status and headers
	if err != nil {
		return nil, err
	}
	var items []LineItem
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, badResponse(op, res, body, fmt.Errorf("not a line item container: %w", err))
	}
	if items == nil {
		items = []LineItem{}
	}
	l := parseLinks(res.Header, target)
	if err := l.check(op, containerURL); err != nil {
		return nil, err
	}
	return &LineItemsPage{LineItems: items, Next: l.next, Prev: l.prev, First: l.first, Last: l.last}, nil
}

// CreateLineItem adds item to the container containerURL and returns it as created (with
// its id). The item is validated first (a *FieldError).
func (c *Client) CreateLineItem(ctx context.Context, cred Credentials, containerURL string, item LineItem) (*LineItem, error) {
	const op = "create lineitem"
	if _, err := parseHTTPURL(containerURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: container URL: %w", op, err)
	}
	if fe := ValidateLineItem(&item); fe != nil {
		return nil, fe
	}
	item.ID = "" // the platform assigns it
	return c.sendLineItem(ctx, cred, op, http.MethodPost, containerURL, item)
}

// FindOrCreateLineItem returns the first line item of the container with item's tag,
// resourceId and resourceLinkId (those that are set; at least one must be), creating item
// when there is none: the AGS §3.2.15 way to avoid duplicates after a course copy
// (T-AGS-08).
func (c *Client) FindOrCreateLineItem(ctx context.Context, cred Credentials, containerURL string, item LineItem) (*LineItem, error) {
	if item.Tag == "" && item.ResourceID == "" && item.ResourceLinkID == "" {
		return nil, &FieldError{Field: "tag", Message: "tag, resourceId or resourceLinkId is needed to find an existing line item"}
	}
	if fe := ValidateLineItem(&item); fe != nil {
		return nil, fe
	}
	if _, err := serviceScopes("find lineitem", &cred, ltiwire.ScopesLineItemEdit...); err != nil {
		return nil, err // before any request: the create could not be sent anyway
	}
	q := LineItemsQuery{ResourceLinkID: item.ResourceLinkID, ResourceID: item.ResourceID, Tag: item.Tag}
	for range maxFindPages {
		page, err := c.lineItems(ctx, cred, "find lineitem", containerURL, q, ltiwire.ScopesLineItemEdit)
		if err != nil {
			return nil, err
		}
		for i := range page.LineItems {
			li := &page.LineItems[i]
			// Platforms MUST filter, but do not trust that they did.
			if (item.Tag == "" || li.Tag == item.Tag) && (item.ResourceID == "" || li.ResourceID == item.ResourceID) &&
				(item.ResourceLinkID == "" || li.ResourceLinkID == item.ResourceLinkID) {
				return li, nil
			}
		}
		if page.Next == "" {
			break
		}
		q = LineItemsQuery{URL: page.Next}
	}
	return c.CreateLineItem(ctx, cred, containerURL, item)
}

// GetLineItem fetches the line item whose id (URL) is id.
func (c *Client) GetLineItem(ctx context.Context, cred Credentials, id string) (*LineItem, error) {
	const op = "get lineitem"
	if err := checkItemURL(op, &cred, id); err != nil {
		return nil, err
	}
	return c.getLineItem(ctx, cred, op, id, ltiwire.ScopesLineItemRead)
}

func (c *Client) getLineItem(ctx context.Context, cred Credentials, op, id string, need []string) (*LineItem, error) {
	scopes, err := serviceScopes(op, &cred, need...)
	if err != nil {
		return nil, err
	}
	body, res, err := c.get(ctx, cred, op, scopes, need, id, MediaTypeLineItem, maxAGSBody) //nolint:bodyclose // get closes the body; res is returned for its status and headers
	if err != nil {
		return nil, err
	}
	var li LineItem
	if err := json.Unmarshal(body, &li); err != nil {
		return nil, badResponse(op, res, body, fmt.Errorf("not a line item: %w", err))
	}
	if li.ID == "" {
		li.ID = id
	}
	return &li, nil
}

// UpdateLineItem replaces the line item id with item (PUT of the full representation,
// validated first). The tool does not change id and resourceLinkId: both are taken from
// the platform's current item, as are extension members item does not carry.
func (c *Client) UpdateLineItem(ctx context.Context, cred Credentials, id string, item LineItem) (*LineItem, error) {
	const op = "update lineitem"
	if err := checkItemURL(op, &cred, id); err != nil {
		return nil, err
	}
	if fe := ValidateLineItem(&item); fe != nil {
		return nil, fe
	}
	cur, err := c.getLineItem(ctx, cred, op, id, ltiwire.ScopesLineItemEdit) // the update's scope: one token
	if err != nil {
		return nil, err
	}
	item.ID = id
	item.ResourceLinkID = cur.ResourceLinkID
	if len(cur.Extensions) > 0 {
		ext := make(map[string]json.RawMessage, len(cur.Extensions)+len(item.Extensions))
		for k, v := range cur.Extensions {
			ext[k] = v
		}
		for k, v := range item.Extensions {
			ext[k] = v
		}
		item.Extensions = ext
	}
	return c.sendLineItem(ctx, cred, op, http.MethodPut, id, item)
}

// sendLineItem POSTs or PUTs item and returns the platform's answer (item itself, with
// the Location header as id, when the answer has no body).
func (c *Client) sendLineItem(ctx context.Context, cred Credentials, op, method, target string, item LineItem) (*LineItem, error) {
	scopes, err := serviceScopes(op, &cred, ltiwire.ScopesLineItemEdit...)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(item)
	if err != nil {
		return nil, fmt.Errorf("advantage: %s: %w", op, err)
	}
	res, err := c.do(ctx, cred, op, scopes, ltiwire.ScopesLineItemEdit, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(payload))
		if err == nil {
			req.Header.Set("Content-Type", MediaTypeLineItem)
			req.Header.Set("Accept", MediaTypeLineItem)
		}
		return req, err
	})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := readBody(op, res, maxAGSBody)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if loc := res.Header.Get("Location"); loc != "" && method == http.MethodPost {
			item.ID = loc
		}
		if item.ID == "" {
			return nil, badResponse(op, res, body, errors.New("the platform returned neither the line item nor its Location"))
		}
		return &item, nil
	}
	var out LineItem
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, badResponse(op, res, body, fmt.Errorf("not a line item: %w", err))
	}
	if out.ID == "" {
		out.ID = item.ID
	}
	return &out, nil
}

// DeleteLineItem deletes the line item id. (Canvas answers 401 for the line item it
// created with the assignment; that ends as an UpstreamError with Status 401.)
func (c *Client) DeleteLineItem(ctx context.Context, cred Credentials, id string) error {
	const op = "delete lineitem"
	if err := checkItemURL(op, &cred, id); err != nil {
		return err
	}
	scopes, err := serviceScopes(op, &cred, ltiwire.ScopesLineItemEdit...)
	if err != nil {
		return err
	}
	res, err := c.do(ctx, cred, op, scopes, ltiwire.ScopesLineItemEdit, func(ctx context.Context) (*http.Request, error) { //nolint:bodyclose // discard(res.Body) below drains and closes it
		return http.NewRequestWithContext(ctx, http.MethodDelete, id, nil)
	})
	if err != nil {
		return err
	}
	discard(res.Body)
	return nil
}

// Score is a score the tool publishes for one user on one line item (AGS §3.4).
type Score struct {
	UserID           string      `json:"userId"`
	ScoreGiven       *float64    `json:"scoreGiven,omitempty"` // absent: clears the score
	ScoreMaximum     *float64    `json:"scoreMaximum,omitempty"`
	Comment          string      `json:"comment,omitempty"`
	ActivityProgress string      `json:"activityProgress"`
	GradingProgress  string      `json:"gradingProgress"`
	Timestamp        string      `json:"timestamp"` // set by PostScore
	ScoringUserID    string      `json:"scoringUserId,omitempty"`
	Submission       *Submission `json:"submission,omitempty"`
	// Extensions are members named by fully-qualified URLs, e.g. Canvas's
	// https://canvas.instructure.com/lti/submission; sent as given.
	Extensions map[string]json.RawMessage `json:"-"`
}

// Submission dates the work a score is for.
type Submission struct {
	StartedAt   string `json:"startedAt,omitempty"`
	SubmittedAt string `json:"submittedAt,omitempty"`
}

type scoreJSON Score

func isScoreField(k string) bool {
	switch k {
	case "userId", "scoreGiven", "scoreMaximum", "comment", "activityProgress", "gradingProgress",
		"timestamp", "scoringUserId", "submission":
		return true
	}
	return false
}

// MarshalJSON writes the score's fields and then its extensions.
func (s Score) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(scoreJSON(s))
	if err != nil {
		return nil, err
	}
	return appendMembers(out, s.Extensions, isScoreField)
}

// UnmarshalJSON reads the score's fields and keeps its extension members.
func (s *Score) UnmarshalJSON(data []byte) error {
	var v scoreJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	ext, err := extensionMembers(data, func(k string) bool { return !isScoreField(k) && isExtensionKey(k) })
	if err != nil {
		return err
	}
	v.Extensions = ext
	*s = Score(v)
	return nil
}

// PostScore publishes s for the line item lineItemID: POST {lineitem}/scores (T-AGS-01)
// with Content-Type application/vnd.ims.lis.v1.score+json (T-AGS-03); any 2xx is success
// (T-AGS-04). s is validated first (a *FieldError; "Initiated" becomes "Initialized").
// Timestamp is always set here: now, in UTC with milliseconds, and strictly later than the
// previous score this process posted for the same line item and user (T-AGS-05).
func (c *Client) PostScore(ctx context.Context, cred Credentials, lineItemID string, s Score) error {
	const op = "score"
	if err := checkItemURL(op, &cred, lineItemID); err != nil {
		return err
	}
	if fe := ValidateScore(&s); fe != nil {
		return fe
	}
	scopes, err := serviceScopes(op, &cred, ltiwire.ScopesScore...)
	if err != nil {
		return err
	}
	target, err := AppendPath(lineItemID, "/scores")
	if err != nil {
		return err
	}
	s.Timestamp = c.stamps.next(lineItemID, s.UserID, c.now())
	payload, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("advantage: %s: %w", op, err)
	}
	res, err := c.do(ctx, cred, op, scopes, ltiwire.ScopesScore, func(ctx context.Context) (*http.Request, error) { //nolint:bodyclose // discard(res.Body) below drains and closes it
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
		if err == nil {
			req.Header.Set("Content-Type", MediaTypeScore)
		}
		return req, err
	})
	if err != nil {
		return err
	}
	discard(res.Body)
	return nil
}

// Result is a platform's current grade for one user on one line item (AGS §3.3).
type Result struct {
	ID            string   `json:"id"`
	UserID        string   `json:"userId"`
	ScoreOf       string   `json:"scoreOf"`
	ResultScore   *float64 `json:"resultScore,omitempty"`
	ResultMaximum *float64 `json:"resultMaximum,omitempty"`
	Comment       string   `json:"comment,omitempty"`
	ScoringUserID string   `json:"scoringUserId,omitempty"`
	Timestamp     string   `json:"timestamp,omitempty"`
}

type resultWire struct {
	ID            flexString `json:"id"`
	UserID        flexString `json:"userId"`
	ScoreOf       flexString `json:"scoreOf"`
	ResultScore   *float64   `json:"resultScore"`
	ResultMaximum *float64   `json:"resultMaximum"`
	Comment       string     `json:"comment"`
	ScoringUserID flexString `json:"scoringUserId"`
	Timestamp     string     `json:"timestamp"`
}

// UnmarshalJSON tolerates numeric ids.
func (r *Result) UnmarshalJSON(data []byte) error {
	var w resultWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Result{
		ID: string(w.ID), UserID: string(w.UserID), ScoreOf: string(w.ScoreOf),
		ResultScore: w.ResultScore, ResultMaximum: w.ResultMaximum, Comment: w.Comment,
		ScoringUserID: string(w.ScoringUserID), Timestamp: w.Timestamp,
	}
	return nil
}

// ResultsQuery filters a line item's results.
type ResultsQuery struct {
	UserID string
	Limit  int
	// URL is a paging link from an earlier page, used as is; it must be on the line
	// item's host.
	URL string
}

// ResultsPage is one page of results, with its paging links.
type ResultsPage struct {
	Scores []Result `json:"scores"`
	Next   string   `json:"next,omitempty"`
	Prev   string   `json:"prev,omitempty"`
	First  string   `json:"first,omitempty"`
	Last   string   `json:"last,omitempty"`
}

// Results fetches one page of the results of the line item lineItemID: GET
// {lineitem}/results (T-AGS-01) with user_id and limit.
func (c *Client) Results(ctx context.Context, cred Credentials, lineItemID string, q ResultsQuery) (*ResultsPage, error) {
	const op = "results"
	if err := checkItemURL(op, &cred, lineItemID); err != nil {
		return nil, err
	}
	base, err := AppendPath(lineItemID, "/results")
	if err != nil {
		return nil, err
	}
	target := q.URL
	if target != "" {
		if err := checkPageURL(op, base, target); err != nil {
			return nil, err
		}
	} else {
		target = addQuery(base, "user_id", q.UserID, "limit", itoa(q.Limit))
	}
	scopes, err := serviceScopes(op, &cred, ltiwire.ScopesResults...)
	if err != nil {
		return nil, err
	}
	body, res, err := c.get(ctx, cred, op, scopes, ltiwire.ScopesResults, target, MediaTypeResultContainer, maxAGSBody) //nolint:bodyclose // get closes the body; res is returned for its status and headers
	if err != nil {
		return nil, err
	}
	var results []Result
	if err := json.Unmarshal(body, &results); err != nil {
		return nil, badResponse(op, res, body, fmt.Errorf("not a result container: %w", err))
	}
	if results == nil {
		results = []Result{}
	}
	l := parseLinks(res.Header, target)
	if err := l.check(op, base); err != nil {
		return nil, err
	}
	return &ResultsPage{Scores: results, Next: l.next, Prev: l.prev, First: l.first, Last: l.last}, nil
}

func itoa(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// stamper issues score timestamps strictly increasing per (line item, user) (T-AGS-05).
// Its memory is bounded: an entry older than stampWindow can be forgotten, since now is
// later than it anyway (the window absorbs small clock steps back).
type stamper struct {
	mu   sync.Mutex
	last map[string]int64 // Unix milliseconds of the last timestamp, by line item + "\x00" + user
}

const (
	maxStamps   = 100_000
	stampWindow = time.Minute
)

func (s *stamper) next(lineItem, user string, now time.Time) string {
	key := lineItem + "\x00" + user
	nowMs := now.UnixMilli()
	ms := nowMs
	s.mu.Lock()
	last, seen := s.last[key]
	if seen && ms <= last {
		ms = last + 1
	}
	if !seen && len(s.last) >= maxStamps {
		s.prune(nowMs - stampWindow.Milliseconds())
		if len(s.last) >= maxStamps {
			s.prune(nowMs) // entries before now cannot clash with now
		}
		if len(s.last) >= maxStamps {
			clear(s.last)
		}
	}
	s.last[key] = ms
	s.mu.Unlock()
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func (s *stamper) prune(before int64) {
	for k, v := range s.last {
		if v < before {
			delete(s.last, k)
		}
	}
}
