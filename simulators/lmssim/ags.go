package lmssim

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	maxLineItems = 500
	maxScores    = 5000
)

// lineItem is one gradebook column. Its fields are guarded by LMS.mu.
type lineItem struct {
	n      int
	fields map[string]any // the representation, without id
	scores []map[string]any
	last   map[string]time.Time      // user → timestamp of the latest score
	latest map[string]map[string]any // user → latest score
	users  []string                  // in the order of their first score
}

func newLineItem(n int, fields map[string]any) *lineItem {
	return &lineItem{n: n, fields: fields, last: map[string]time.Time{}, latest: map[string]map[string]any{}}
}

func (l *LMS) lineItemURL(n int) string {
	return fmt.Sprintf("%s%s/%d/lineitem?%s", l.Issuer, LineItemsPath, n, TypeIDQuery)
}

func (l *LMS) resultsURL(n int) string {
	return fmt.Sprintf("%s%s/%d/lineitem/results?%s", l.Issuer, LineItemsPath, n, TypeIDQuery)
}

// representation is the line item as served: its fields and its id. l.mu must be held.
func (l *LMS) representation(li *lineItem) map[string]any {
	out := maps.Clone(li.fields)
	out["id"] = l.lineItemURL(li.n)
	return out
}

// itemLocked finds line item n; l.mu must be held.
func (l *LMS) itemLocked(n int) *lineItem {
	for _, li := range l.svc.lineItems {
		if li.n == n {
			return li
		}
	}
	return nil
}

// itemByID finds a line item by its id URL or its number; l.mu must be held.
func (l *LMS) itemByID(id string) *lineItem {
	for _, li := range l.svc.lineItems {
		if id == l.lineItemURL(li.n) || id == strconv.Itoa(li.n) {
			return li
		}
	}
	return nil
}

// LineItemIDs returns the id URLs of the line items, in creation order.
func (l *LMS) LineItemIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return nil
	}
	ids := []string{}
	for _, li := range l.svc.lineItems {
		ids = append(ids, l.lineItemURL(li.n))
	}
	return ids
}

// LineItem returns the line item with this id URL (or number) as served, nil if none.
func (l *LMS) LineItem(id string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return nil
	}
	if li := l.itemByID(id); li != nil {
		return l.representation(li)
	}
	return nil
}

// Scores returns every score posted to the line item with this id URL (or number), in the
// order received, as the tool sent them (JSON numbers are float64).
func (l *LMS) Scores(lineItemID string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return nil
	}
	li := l.itemByID(lineItemID)
	if li == nil {
		return nil
	}
	out := make([]map[string]any, len(li.scores))
	for i, s := range li.scores {
		out[i] = maps.Clone(s)
	}
	return out
}

// agsRequest checks what every AGS request needs: the type_id query (404 without it, as
// Moodle's services.php cannot find the service then) and an access token with one of scopes.
func (l *LMS) agsRequest(w http.ResponseWriter, r *http.Request, scopes ...string) bool {
	if r.URL.Query().Get("type_id") != "4" {
		http.Error(w, "not found: the type_id query parameter is missing", http.StatusNotFound)
		return false
	}
	return l.bearer(w, r, scopes...)
}

// itemNumber reads {n} of a line item URL; 404 when it is not a number.
func itemNumber(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		http.NotFound(w, r)
		return 0, false
	}
	return n, true
}

func (l *LMS) listLineItems(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeLineItem, ScopeLineItemReadOnly) || !requireAccept(w, r, MediaLineItemContainer) {
		return
	}
	q := r.URL.Query()
	filters := map[string]string{}
	for param, field := range map[string]string{"resource_link_id": "resourceLinkId", "resource_id": "resourceId", "tag": "tag"} {
		if q.Has(param) {
			filters[field] = q.Get(param)
		}
	}
	l.mu.Lock()
	list := []map[string]any{}
	for _, li := range l.svc.lineItems {
		match := true
		for field, want := range filters {
			if v, _ := li.fields[field].(string); v != want {
				match = false
			}
		}
		if match {
			list = append(list, l.representation(li))
		}
	}
	l.mu.Unlock()
	start, end, next, err := l.paginate(r, len(list))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	setNext(w, next)
	writeJSON(w, http.StatusOK, MediaLineItemContainer, list[start:end])
}

// checkLineItem validates a posted or put line item (AGS §3.2).
func checkLineItem(li map[string]any) error {
	if label, ok := li["label"].(string); !ok || strings.TrimSpace(label) == "" {
		return errors.New("label is required")
	}
	if maxScore, ok := li["scoreMaximum"].(float64); !ok || !(maxScore > 0) {
		return errors.New("scoreMaximum must be a number greater than 0")
	}
	for _, k := range []string{"resourceId", "tag", "resourceLinkId"} {
		if v, ok := li[k]; ok && v != nil {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s must be a string", k)
			}
		}
	}
	for _, k := range []string{"startDateTime", "endDateTime"} {
		if v, ok := li[k]; ok && v != nil && v != "" {
			if s, ok := v.(string); !ok || !isISO8601(s) {
				return fmt.Errorf("%s must be an ISO 8601 date and time with a time zone", k)
			}
		}
	}
	if v, ok := li["gradesReleased"]; ok && v != nil {
		if _, ok := v.(bool); !ok {
			return errors.New("gradesReleased must be a boolean")
		}
	}
	return checkSubmissionReview(li["submissionReview"])
}

// readLineItem reads a line item body of a create or a replace and checks it; a bad one is
// answered 400.
func readLineItem(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	body, err := decodeObject(w, r)
	if err == nil {
		err = checkLineItem(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

func isISO8601(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func (l *LMS) createLineItem(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeLineItem) || !requireContentType(w, r, MediaLineItem) {
		return
	}
	body, ok := readLineItem(w, r)
	if !ok {
		return
	}
	delete(body, "id") // the platform names it
	if rl, _ := body["resourceLinkId"].(string); rl != "" && !knownResourceLink(rl, l.members()) {
		http.Error(w, "no resource link "+rl, http.StatusNotFound)
		return
	}
	l.mu.Lock()
	if len(l.svc.lineItems) >= maxLineItems {
		l.mu.Unlock()
		http.Error(w, "too many line items", http.StatusInsufficientStorage)
		return
	}
	li := newLineItem(l.svc.nextItem, body)
	l.svc.nextItem++
	l.svc.lineItems = append(l.svc.lineItems, li)
	out := l.representation(li)
	l.mu.Unlock()
	w.Header().Set("Location", out["id"].(string))
	writeJSON(w, http.StatusCreated, MediaLineItem, out)
}

func (l *LMS) getLineItem(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeLineItem, ScopeLineItemReadOnly) {
		return
	}
	n, ok := itemNumber(w, r)
	if !ok {
		return
	}
	l.mu.Lock()
	var out map[string]any
	if li := l.itemLocked(n); li != nil {
		out = l.representation(li)
	}
	l.mu.Unlock()
	if out == nil {
		http.NotFound(w, r)
		return
	}
	if !requireAccept(w, r, MediaLineItem) {
		return
	}
	writeJSON(w, http.StatusOK, MediaLineItem, out)
}

// putLineItem replaces a line item; its id and resourceLinkId must not change (AGS §3.2.6).
func (l *LMS) putLineItem(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeLineItem) {
		return
	}
	n, ok := itemNumber(w, r)
	if !ok || !requireContentType(w, r, MediaLineItem) {
		return
	}
	body, ok := readLineItem(w, r)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	li := l.itemLocked(n)
	if li == nil {
		http.NotFound(w, r)
		return
	}
	if id, ok := body["id"]; ok && id != l.lineItemURL(n) {
		http.Error(w, fmt.Sprintf("id must not change: %v is not %s", id, l.lineItemURL(n)), http.StatusBadRequest)
		return
	}
	was, _ := li.fields["resourceLinkId"].(string)
	if now, _ := body["resourceLinkId"].(string); now != was {
		http.Error(w, fmt.Sprintf("resourceLinkId must not change: %q is not %q", now, was), http.StatusBadRequest)
		return
	}
	delete(body, "id")
	li.fields = body
	writeJSON(w, http.StatusOK, MediaLineItem, l.representation(li))
}

func (l *LMS) deleteLineItem(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeLineItem) {
		return
	}
	n, ok := itemNumber(w, r)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.svc.lineItems, func(li *lineItem) bool { return li.n == n })
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	l.svc.scores -= len(l.svc.lineItems[i].scores)
	l.svc.lineItems = slices.Delete(l.svc.lineItems, i, i+1)
	w.WriteHeader(http.StatusNoContent)
}

// scoreTimestamp is ISO 8601 with sub-second precision and a time zone (AGS §3.4.3).
var scoreTimestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{1,9}(Z|[+-]\d{2}:\d{2})$`)

var (
	activityProgress = []string{"Initialized", "Started", "InProgress", "Submitted", "Completed"}
	gradingProgress  = []string{"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
)

// checkScore validates a score (AGS §3.4) and returns its timestamp.
func checkScore(s map[string]any) (time.Time, error) {
	if u, ok := s["userId"].(string); !ok || u == "" {
		return time.Time{}, errors.New("userId is required")
	}
	if v, _ := s["activityProgress"].(string); !slices.Contains(activityProgress, v) {
		return time.Time{}, fmt.Errorf("activityProgress must be one of %v", activityProgress)
	}
	if v, _ := s["gradingProgress"].(string); !slices.Contains(gradingProgress, v) {
		return time.Time{}, fmt.Errorf("gradingProgress must be one of %v", gradingProgress)
	}
	ts, _ := s["timestamp"].(string)
	if !scoreTimestamp.MatchString(ts) {
		return time.Time{}, errors.New("timestamp is required, ISO 8601 with sub-second precision and a time zone")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, errors.New("timestamp is not a valid date and time")
	}
	if v, ok := s["scoreMaximum"]; ok && v != nil {
		if maxScore, ok := v.(float64); !ok || !(maxScore > 0) {
			return time.Time{}, errors.New("scoreMaximum must be a number greater than 0")
		}
	}
	if v, ok := s["scoreGiven"]; ok && v != nil {
		if given, ok := v.(float64); !ok || given < 0 {
			return time.Time{}, errors.New("scoreGiven must be a number ≥ 0")
		}
		if _, ok := s["scoreMaximum"].(float64); !ok {
			return time.Time{}, errors.New("scoreMaximum is required with scoreGiven")
		}
	}
	if v, ok := s["comment"]; ok && v != nil {
		if _, ok := v.(string); !ok {
			return time.Time{}, errors.New("comment must be a string")
		}
	}
	if v, ok := s["submission"]; ok && v != nil {
		sub, ok := v.(map[string]any)
		if !ok {
			return time.Time{}, errors.New("submission must be an object")
		}
		var times [2]time.Time
		for i, k := range []string{"startedAt", "submittedAt"} {
			if v, ok := sub[k]; ok && v != nil {
				str, _ := v.(string)
				if times[i], err = time.Parse(time.RFC3339Nano, str); err != nil {
					return time.Time{}, fmt.Errorf("submission.%s must be ISO 8601 with a time zone", k)
				}
			}
		}
		if !times[0].IsZero() && !times[1].IsZero() && times[1].Before(times[0]) {
			return time.Time{}, errors.New("submission.submittedAt is before startedAt")
		}
	}
	return t, nil
}

func (l *LMS) postScore(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeScore) {
		return
	}
	n, ok := itemNumber(w, r)
	if !ok || !requireContentType(w, r, MediaScore) {
		return
	}
	body, err := decodeObject(w, r)
	var ts time.Time
	if err == nil {
		ts, err = checkScore(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	user := body["userId"].(string)
	l.mu.Lock()
	defer l.mu.Unlock()
	li := l.itemLocked(n)
	if li == nil {
		http.NotFound(w, r)
		return
	}
	if prev, ok := li.last[user]; ok && !ts.After(prev) {
		http.Error(w, fmt.Sprintf("timestamp %s is not later than the previous score's (%s)",
			body["timestamp"], prev.Format(time.RFC3339Nano)), http.StatusBadRequest)
		return
	}
	if l.svc.scores >= maxScores {
		http.Error(w, "too many scores", http.StatusInsufficientStorage)
		return
	}
	l.svc.scores++
	if _, ok := li.last[user]; !ok {
		li.users = append(li.users, user)
	}
	li.last[user], li.latest[user] = ts, body
	li.scores = append(li.scores, body)
	w.WriteHeader(http.StatusNoContent)
}

// results serves the results of a line item, derived from the latest score of each user;
// resultScore is scaled to the line item's scoreMaximum, which is resultMaximum.
func (l *LMS) results(w http.ResponseWriter, r *http.Request) {
	if !l.agsRequest(w, r, ScopeResultReadOnly) {
		return
	}
	n, ok := itemNumber(w, r)
	if !ok {
		return
	}
	user, filter := r.URL.Query().Get("user_id"), r.URL.Query().Has("user_id")
	l.mu.Lock()
	li := l.itemLocked(n)
	list := []map[string]any{}
	if li != nil {
		itemMax, _ := li.fields["scoreMaximum"].(float64)
		for _, u := range li.users {
			if filter && u != user {
				continue
			}
			s := li.latest[u]
			res := map[string]any{
				"id":        l.resultsURL(n) + "&user_id=" + url.QueryEscape(u),
				"scoreOf":   l.lineItemURL(n),
				"userId":    u,
				"timestamp": s["timestamp"],
			}
			if given, ok := s["scoreGiven"].(float64); ok {
				res["resultScore"] = given * itemMax / s["scoreMaximum"].(float64)
				res["resultMaximum"] = itemMax
			}
			if c, _ := s["comment"].(string); c != "" {
				res["comment"] = c
			}
			if v, ok := s["scoringUserId"].(string); ok {
				res["scoringUserId"] = v
			}
			list = append(list, res)
		}
	}
	l.mu.Unlock()
	if li == nil {
		http.NotFound(w, r)
		return
	}
	if !requireAccept(w, r, MediaResultContainer) {
		return
	}
	start, end, next, err := l.paginate(r, len(list))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	setNext(w, next)
	writeJSON(w, http.StatusOK, MediaResultContainer, list[start:end])
}
