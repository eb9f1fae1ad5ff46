package datasim

import (
	"encoding/json"
	"slices"
)

// The wire types of the platform data API, written from its contract
// (docs/platform-services.md, "The platform data API") and not taken from ltiop's client
// (webserver/clients/platformdata): the simulator is an integrator's implementation. A test
// of that client sends each through both, so the two cannot drift apart unnoticed.

// Operations, and the path under the base URL each is posted to.
const (
	OpMemberships    = "memberships.list"
	OpLineItems      = "lineitems.list"
	OpCreateLineItem = "lineitems.create"
	OpGetLineItem    = "lineitems.get"
	OpUpdateLineItem = "lineitems.update"
	OpDeleteLineItem = "lineitems.delete"
	OpScore          = "scores.post"
	OpResults        = "results.list"
)

var operationPaths = map[string]string{
	OpMemberships: "/memberships", OpLineItems: "/lineitems/list", OpCreateLineItem: "/lineitems/create",
	OpGetLineItem: "/lineitems/get", OpUpdateLineItem: "/lineitems/update", OpDeleteLineItem: "/lineitems/delete",
	OpScore: "/scores", OpResults: "/results",
}

// Path is the path of an operation ("" for an unknown one).
func Path(op string) string { return operationPaths[op] }

// Tool names the tool a call is made for.
type Tool struct {
	ID           string `json:"id"`
	ClientID     string `json:"clientId"`
	DeploymentID string `json:"deploymentId"`
}

// Request is the body of every call; an operation leaves out the members it does not use.
type Request struct {
	Operation      string    `json:"operation"`
	Tool           Tool      `json:"tool"`
	ContextID      string    `json:"contextId"`
	LineItemID     string    `json:"lineItemId,omitempty"`
	Role           string    `json:"role,omitempty"`
	ResourceLinkID string    `json:"resourceLinkId,omitempty"`
	ResourceID     string    `json:"resourceId,omitempty"`
	Tag            string    `json:"tag,omitempty"`
	UserID         string    `json:"userId,omitempty"`
	Limit          int       `json:"limit,omitempty"`
	Cursor         string    `json:"cursor,omitempty"`
	LineItem       *LineItem `json:"lineItem,omitempty"`
	Score          *Score    `json:"score,omitempty"`
}

// Member is a member of a context (service-interface §2.4).
type Member struct {
	UserID             string   `json:"userId"`
	Roles              []string `json:"roles"`
	Status             string   `json:"status,omitempty"`
	Email              string   `json:"email,omitempty"`
	Name               string   `json:"name,omitempty"`
	GivenName          string   `json:"givenName,omitempty"`
	FamilyName         string   `json:"familyName,omitempty"`
	MiddleName         string   `json:"middleName,omitempty"`
	LisPersonSourcedID string   `json:"lisPersonSourcedId,omitempty"`
	Picture            string   `json:"picture,omitempty"`
	LTI11LegacyUserID  string   `json:"lti11LegacyUserId,omitempty"`
}

// Context is the context of a memberships answer.
type Context struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	Title string `json:"title,omitempty"`
}

// MembersPage answers memberships.list.
type MembersPage struct {
	Context *Context `json:"context,omitempty"`
	Members []Member `json:"members"`
	Next    string   `json:"next,omitempty"`
}

// LineItem is AGS's line item without URLs. Extensions are the other members (full URLs,
// submissionReview), kept as they came.
type LineItem struct {
	ID             string                     `json:"id,omitempty"`
	Label          string                     `json:"label"`
	ScoreMaximum   float64                    `json:"scoreMaximum"`
	ResourceLinkID string                     `json:"resourceLinkId,omitempty"`
	ResourceID     string                     `json:"resourceId,omitempty"`
	Tag            string                     `json:"tag,omitempty"`
	StartDateTime  string                     `json:"startDateTime,omitempty"`
	EndDateTime    string                     `json:"endDateTime,omitempty"`
	GradesReleased *bool                      `json:"gradesReleased,omitempty"`
	Extensions     map[string]json.RawMessage `json:"-"`
}

// LineItemsPage answers lineitems.list.
type LineItemsPage struct {
	LineItems []LineItem `json:"lineItems"`
	Next      string     `json:"next,omitempty"`
}

// Score is a score as the tool posted it (after ltiop's checks). Extensions are the other
// members, kept as they came.
type Score struct {
	UserID           string                     `json:"userId"`
	ScoreGiven       *float64                   `json:"scoreGiven,omitempty"`
	ScoreMaximum     *float64                   `json:"scoreMaximum,omitempty"`
	Comment          string                     `json:"comment,omitempty"`
	ActivityProgress string                     `json:"activityProgress"`
	GradingProgress  string                     `json:"gradingProgress"`
	Timestamp        string                     `json:"timestamp"`
	ScoringUserID    string                     `json:"scoringUserId,omitempty"`
	Submission       *Submission                `json:"submission,omitempty"`
	Extensions       map[string]json.RawMessage `json:"-"`
}

// Submission dates the work a score is for.
type Submission struct {
	StartedAt   string `json:"startedAt,omitempty"`
	SubmittedAt string `json:"submittedAt,omitempty"`
}

// Result is one learner's latest result.
type Result struct {
	UserID        string   `json:"userId"`
	ResultScore   *float64 `json:"resultScore,omitempty"`
	ResultMaximum *float64 `json:"resultMaximum,omitempty"`
	Comment       string   `json:"comment,omitempty"`
	ScoringUserID string   `json:"scoringUserId,omitempty"`
	Timestamp     string   `json:"timestamp,omitempty"`
}

// ResultsPage answers results.list.
type ResultsPage struct {
	Results []Result `json:"results"`
	Next    string   `json:"next,omitempty"`
}

type (
	lineItemFields LineItem // LineItem without its methods
	scoreFields    Score
)

var (
	lineItemNames = []string{"id", "label", "scoreMaximum", "resourceLinkId", "resourceId", "tag", "startDateTime", "endDateTime", "gradesReleased"}
	scoreNames    = []string{"userId", "scoreGiven", "scoreMaximum", "comment", "activityProgress", "gradingProgress", "timestamp", "scoringUserId", "submission"}
)

// MarshalJSON writes the line item's members and its extensions.
func (li LineItem) MarshalJSON() ([]byte, error) {
	return withExtensions(lineItemFields(li), li.Extensions, lineItemNames)
}

// UnmarshalJSON reads the line item's members and keeps the others as extensions.
func (li *LineItem) UnmarshalJSON(data []byte) error {
	var f lineItemFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	ext, err := extensions(data, lineItemNames)
	f.Extensions = ext
	*li = LineItem(f)
	return err
}

// MarshalJSON writes the score's members and its extensions.
func (s Score) MarshalJSON() ([]byte, error) {
	return withExtensions(scoreFields(s), s.Extensions, scoreNames)
}

// UnmarshalJSON reads the score's members and keeps the others as extensions.
func (s *Score) UnmarshalJSON(data []byte) error {
	var f scoreFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	ext, err := extensions(data, scoreNames)
	f.Extensions = ext
	*s = Score(f)
	return err
}

// withExtensions marshals v and adds the extension members not named in known.
func withExtensions(v any, ext map[string]json.RawMessage, known []string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(ext) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, raw := range ext {
		if !slices.Contains(known, k) {
			all[k] = raw
		}
	}
	return json.Marshal(all)
}

// extensions returns the members of the object data not named in known (nil for none).
func extensions(data []byte, known []string) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var ext map[string]json.RawMessage
	for k, raw := range all {
		if !slices.Contains(known, k) {
			if ext == nil {
				ext = map[string]json.RawMessage{}
			}
			ext[k] = raw
		}
	}
	return ext, nil
}
