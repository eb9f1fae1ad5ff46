package advantage

import (
	"context"
	"fmt"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// Course Groups Service 1.0 media types (the groups and group sets containers).
const (
	MediaTypeGroupContainer    = "application/vnd.ims.lti-gs.v1.contextgroupcontainer+json"
	MediaTypeGroupSetContainer = "application/vnd.ims.lti-gs.v1.contextgroupsetcontainer+json"
)

// Operation names of the groups calls, in errors and in the outbound metrics.
const (
	opGroups    = "groups"
	opGroupSets = "group sets"
)

// GroupsQuery selects one page of a context's groups.
type GroupsQuery struct {
	UserID string // user_id: only the groups this user belongs to
	Limit  int    // page size hint; 0: the platform's default
	// URL is a next link from an earlier page. When set, the other fields are ignored (the
	// link already carries them) and it must be on the host of the groups URL.
	URL string
}

// GroupSetsQuery selects one page of a context's group sets.
type GroupSetsQuery struct {
	Limit int
	URL   string // a next link from an earlier page, as GroupsQuery.URL
}

// GroupsPage is one page of groups, in the integrator-facing (camelCase) shape.
type GroupsPage struct {
	ID     string  `json:"id,omitempty"`
	Groups []Group `json:"groups"`
	Next   string  `json:"next,omitempty"` // the LMS's next-page URL, checked to be on its host
}

// Group is one course group. SetIDs are the group sets it belongs to, never nil (empty
// for a group outside any set).
type Group struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Tag    string   `json:"tag,omitempty"`
	SetIDs []string `json:"setIds"`
}

// GroupSetsPage is one page of group sets.
type GroupSetsPage struct {
	ID   string     `json:"id,omitempty"`
	Sets []GroupSet `json:"sets"`
	Next string     `json:"next,omitempty"`
}

// GroupSet is one group set (Canvas's group category, Moodle's grouping, Blackboard's
// group set).
type GroupSet struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

// Groups fetches one page of the groups of the context whose context_groups_url (from the
// launch's groups service claim) is groupsURL.
func (c *Client) Groups(ctx context.Context, cred Credentials, groupsURL string, q GroupsQuery) (*GroupsPage, error) {
	var page *GroupsPage
	decode := func(body []byte) (err error) { page, err = MapGroups(body); return err }
	next, err := c.groupsPage(ctx, cred, opGroups, groupsURL, q.URL, MediaTypeGroupContainer, decode,
		"user_id", q.UserID, "limit", itoa(q.Limit))
	if err != nil {
		return nil, err
	}
	page.Next = next
	return page, nil
}

// GroupSets fetches one page of the group sets of the context whose
// context_group_sets_url is setsURL.
func (c *Client) GroupSets(ctx context.Context, cred Credentials, setsURL string, q GroupSetsQuery) (*GroupSetsPage, error) {
	var page *GroupSetsPage
	decode := func(body []byte) (err error) { page, err = MapGroupSets(body); return err }
	next, err := c.groupsPage(ctx, cred, opGroupSets, setsURL, q.URL, MediaTypeGroupSetContainer, decode, "limit", itoa(q.Limit))
	if err != nil {
		return nil, err
	}
	page.Next = next
	return page, nil
}

// groupsPage GETs one page of a groups service container (the first, with the query kv,
// or the caller's next link pageURL), decodes it, and returns its next link.
func (c *Client) groupsPage(ctx context.Context, cred Credentials, op, serviceURL, pageURL, mediaType string,
	decode func([]byte) error, kv ...string) (string, error) {
	if _, err := parseHTTPURL(serviceURL); err != nil {
		return "", fmt.Errorf("advantage: %s: service URL: %w", op, err)
	}
	target := pageURL
	if target != "" {
		if err := checkPageURL(op, serviceURL, target); err != nil {
			return "", err
		}
	} else {
		target = addQuery(serviceURL, kv...)
	}
	scopes, err := serviceScopes(op, &cred, ltiwire.ScopesGroups...)
	if err != nil {
		return "", err
	}
	body, res, err := c.get(ctx, cred, op, scopes, ltiwire.ScopesGroups, target, mediaType, maxGroupsBody) //nolint:bodyclose // get closes the body; res is returned for its status and headers
	if err != nil {
		return "", err
	}
	if err := decode(body); err != nil {
		return "", badResponse(op, res, body, err)
	}
	l := parseLinks(res.Header, target)
	if err := (links{next: l.next}).check(op, serviceURL); err != nil {
		return "", err
	}
	return l.next, nil
}
