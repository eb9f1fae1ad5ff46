package advantage

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// MediaTypeMembershipContainer is the NRPS 2.0 response media type, sent as Accept (T-NRPS-01).
const MediaTypeMembershipContainer = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"

// MembersQuery selects one page of a context's members.
type MembersQuery struct {
	Role           string // a context role, short ("Learner") or full URI, passed as given
	Limit          int    // page size hint; 0: the platform's default
	ResourceLinkID string // rlid: members with access to this resource link (T-NRPS-07)
	// URL is a next link from an earlier page. When set, the other fields are ignored (the
	// link already carries them, T-NRPS-02) and it must be on the host of the memberships
	// URL (T-NRPS-03).
	URL string
}

// MembershipPage is one page of members, in the integrator-facing (camelCase) shape.
type MembershipPage struct {
	ID      string            `json:"id"`
	Context MembershipContext `json:"context"`
	Members []Member          `json:"members"`
	Next    string            `json:"next,omitempty"` // the LMS's next-page URL, checked to be on its host
}

// MembershipContext is the course (context) of a membership container.
type MembershipContext struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	Title string `json:"title,omitempty"`
}

// Member is one member. Only UserID and Roles are sure to be there: the rest depends on
// the platform's privacy settings (T-NRPS-06).
type Member struct {
	UserID             string   `json:"userId"`
	Roles              []string `json:"roles"`  // as the platform sent them: full URIs or short names (T-NRPS-05)
	Status             string   `json:"status"` // Active (the default, T-NRPS-04), Inactive or Deleted
	Email              string   `json:"email,omitempty"`
	Name               string   `json:"name,omitempty"`
	GivenName          string   `json:"givenName,omitempty"`
	FamilyName         string   `json:"familyName,omitempty"`
	MiddleName         string   `json:"middleName,omitempty"`
	LisPersonSourcedID string   `json:"lisPersonSourcedId,omitempty"`
	Picture            string   `json:"picture,omitempty"`
	// LTI11LegacyUserID is the member's LTI 1.1 user_id (NRPS lti11_legacy_user_id, sent by
	// platforms migrating 1.1 links), so rosters can be matched to 1.1 accounts.
	LTI11LegacyUserID string `json:"lti11LegacyUserId,omitempty"`
}

// Memberships fetches one page of the members of the context whose
// context_memberships_url (from the launch's NRPS claim) is membershipsURL.
func (c *Client) Memberships(ctx context.Context, cred Credentials, membershipsURL string, q MembersQuery) (*MembershipPage, error) {
	const op = "memberships"
	if _, err := parseHTTPURL(membershipsURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: memberships URL: %w", op, err)
	}
	target := q.URL
	if target != "" {
		if err := checkPageURL(op, membershipsURL, target); err != nil {
			return nil, err
		}
	} else {
		limit := ""
		if q.Limit > 0 {
			limit = strconv.Itoa(q.Limit)
		}
		target = addQuery(membershipsURL, "role", q.Role, "limit", limit, "rlid", q.ResourceLinkID)
	}
	scopes, err := serviceScopes(op, &cred, ltiwire.ScopesMemberships...)
	if err != nil {
		return nil, err
	}
	body, res, err := c.get(ctx, cred, op, scopes, ltiwire.ScopesMemberships, target, MediaTypeMembershipContainer, maxNRPSBody) //nolint:bodyclose // get closes the body; res is returned for its status and headers
	if err != nil {
		return nil, err
	}
	page, err := MapMembers(body)
	if err != nil {
		return nil, badResponse(op, res, body, err)
	}
	l := parseLinks(res.Header, target)
	if err := (links{next: l.next}).check(op, membershipsURL); err != nil {
		return nil, err
	}
	page.Next = l.next
	return page, nil
}

// get sends an authenticated GET and returns the 2xx body (at most limit bytes).
func (c *Client) get(ctx context.Context, cred Credentials, op string, scopes, need []string, target, accept string, limit int64) ([]byte, *http.Response, error) {
	res, err := c.do(ctx, cred, op, scopes, need, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err == nil {
			req.Header.Set("Accept", accept)
		}
		return req, err
	})
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := readBody(op, res, limit)
	if err != nil {
		return nil, nil, err
	}
	return body, res, nil
}
