package lmssim

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
)

// MessageSubmissionReview is the message type of a submission review launch (AGS
// "Submission Review Message").
const MessageSubmissionReview = "LtiSubmissionReviewRequest"

const claimForUser = "https://purl.imsglobal.org/spec/lti/claim/for_user"

// reviewTarget is the submissionReview of line item id as the platform launches it: its
// url ("" when the line item has none, or no such line item) and its custom parameters.
func (l *LMS) reviewTarget(id string) (string, map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return "", nil
	}
	li := l.itemByID(id)
	if li == nil {
		return "", nil
	}
	sr, _ := li.fields["submissionReview"].(map[string]any)
	target, _ := sr["url"].(string)
	custom, _ := sr["custom"].(map[string]any)
	return target, maps.Clone(custom)
}

// MakeSubmissionReview turns launch claims into an LtiSubmissionReviewRequest: the
// launching user reviews forUser's submission for the line item lineItemID (its id URL
// or number; "" is line item 1). The line item's submissionReview custom parameters are
// added to the launch's; its url is the target, which the login must have named too
// (start does so). forUser "" is user-2, a learner of the default roster.
func (l *LMS) MakeSubmissionReview(claims map[string]any, forUser, lineItemID string) {
	if forUser == "" {
		forUser = "user-2"
	}
	if lineItemID == "" {
		lineItemID = "1"
	}
	lineItem := lineItemID
	if _, err := url.ParseRequestURI(lineItemID); err != nil {
		var n int
		_, _ = fmt.Sscan(lineItemID, &n)
		lineItem = l.lineItemURL(n)
	}
	claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] = MessageSubmissionReview
	forUserClaim := map[string]any{"user_id": forUser, "roles": []string{RoleURI("Learner")}}
	for _, m := range l.members() {
		if m.UserID == forUser {
			forUserClaim["name"], forUserClaim["given_name"], forUserClaim["family_name"] = m.Name, m.GivenName, m.FamilyName
			forUserClaim["email"] = m.Email
			forUserClaim["roles"] = slices.Clone(m.Roles)
		}
	}
	claims[claimForUser] = forUserClaim
	if ags, ok := claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"].(map[string]any); ok {
		ags["lineitem"] = lineItem
	}
	if _, custom := l.reviewTarget(lineItem); len(custom) > 0 {
		merged, _ := claims["https://purl.imsglobal.org/spec/lti/claim/custom"].(map[string]any)
		merged = maps.Clone(merged)
		if merged == nil {
			merged = map[string]any{}
		}
		maps.Copy(merged, custom)
		claims["https://purl.imsglobal.org/spec/lti/claim/custom"] = merged
	}
}

// checkSubmissionReview validates the submissionReview member of a line item (AGS
// §3.2.8): reviewableStatus a non-empty list of activity progress values, label a string,
// url an absolute http(s) URL, custom a map of strings.
func checkSubmissionReview(v any) error {
	if v == nil {
		return nil
	}
	sr, ok := v.(map[string]any)
	if !ok {
		return errors.New("submissionReview must be an object")
	}
	statuses, ok := sr["reviewableStatus"].([]any)
	if !ok || len(statuses) == 0 {
		return errors.New("submissionReview.reviewableStatus must be a non-empty array")
	}
	for _, s := range statuses {
		if str, _ := s.(string); !slices.Contains(activityProgress, str) {
			return fmt.Errorf("submissionReview.reviewableStatus: %v is not an activity progress value", s)
		}
	}
	if label, ok := sr["label"]; ok {
		if _, ok := label.(string); !ok {
			return errors.New("submissionReview.label must be a string")
		}
	}
	if raw, ok := sr["url"]; ok {
		s, _ := raw.(string)
		if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return errors.New("submissionReview.url must be an absolute http(s) URL")
		}
	}
	if custom, ok := sr["custom"]; ok {
		m, ok := custom.(map[string]any)
		if !ok {
			return errors.New("submissionReview.custom must be an object")
		}
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("submissionReview.custom.%s must be a string", k)
			}
		}
	}
	return nil
}
