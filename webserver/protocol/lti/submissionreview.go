package lti

import "github.com/ltiop/ltiop/webserver/protocol/apierr"

// Submission review (AGS 2.0, "Submission Review Message"): the platform launches the
// tool so that someone (an instructor, or the learner) sees one learner's submission for
// a line item. Beyond the rules of every message (T-TOK-01…20), an
// LtiSubmissionReviewRequest must carry (T-TOK-21):
//
//   - T-SR-02 target_link_uri, which is compared with the login's (T-TOK-22): the
//     platform sends the line item's submissionReview.url there when it has one;
//   - T-SR-03 the AGS endpoint claim with lineitem, the line item under review;
//   - T-SR-04 for_user with user_id (at most 255 bytes), the learner whose submission it is;
//   - T-SR-05 resource_link and roles when sent must be of the right JSON type (they are
//     optional: the line item may have no resource link).

// submissionReviewBits are the claims of the wrong JSON type that fail a submission
// review, in the order Validate checks them.
var submissionReviewBits = []claimBits{badTargetLinkURI, badAGS, badAGSLineItem, badForUser, badForUserID,
	badResourceLink, badResourceLinkID, badRoles}

func checkSubmissionReview(c *Claims) *apierr.Error {
	const mt = MessageSubmissionReview
	for _, b := range submissionReviewBits {
		if c.bad&b != 0 {
			return c.errorFor(b)
		}
	}
	switch {
	case c.TargetLinkURI == "": // T-SR-02
		return errMissingClaim("target_link_uri", mt)
	case c.AGS == nil: // T-SR-03
		return errMissingClaim("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint", mt)
	case c.AGS.LineItem == "":
		return errMissingClaim("endpoint.lineitem", mt)
	case c.ForUser == nil: // T-SR-04
		return errMissingClaim("for_user", mt)
	case c.ForUser.UserID == "":
		return errMissingClaim("for_user.user_id", mt)
	case len(c.ForUser.UserID) > MaxIdentifierLength:
		return errTooLong("for_user.user_id", "T-TOK-21")
	case c.ResourceLink != nil && len(c.ResourceLink.ID) > MaxIdentifierLength: // T-SR-05
		return errTooLong("resource_link.id", "T-TOK-21")
	}
	return nil
}

// submissionReviewTypeError is errorFor of the bits only a submission review checks.
func submissionReviewTypeError(b claimBits) *apierr.Error {
	switch b {
	case badAGS:
		return errInvalidClaim("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint", "an object")
	case badAGSLineItem:
		return errInvalidClaim("endpoint.lineitem", "a string")
	case badForUser:
		return errInvalidClaim("for_user", "an object")
	case badForUserID:
		return errInvalidClaim("for_user.user_id", "a string")
	}
	return nil
}

// decodeAGSClaim reads the AGS endpoint claim, flagging what a submission review
// requires; other messages keep tolerating any shape (T-QUIRK-04).
func (c *Claims) decodeAGSClaim(sc *scanner) {
	c.AGS = nil
	c.bad &^= badAGS | badAGSLineItem
	if !enterObject(sc) {
		c.bad |= badAGS
		return
	}
	a := slot(sc, func(m *claimMem) *AGSClaim { return &m.ags })
	for sc.NextMember() {
		switch sc.Key() {
		case "scope":
			a.Scope = readScope(sc)
		case "lineitems":
			a.LineItems = readOptString(sc)
		case "lineitem":
			s, bad := readRequiredMember(sc)
			a.LineItem = s
			c.flag(badAGSLineItem, bad)
		}
	}
	c.AGS = a
}

// decodeForUserClaim reads the for_user claim, flagging a wrong JSON type.
func (c *Claims) decodeForUserClaim(sc *scanner) {
	c.bad &^= badForUser | badForUserID
	c.ForUser = decodeForUser(sc, c)
	if c.ForUser == nil {
		c.bad |= badForUser
	}
}

// IDTokenForUser is idtoken.launch.forUser (submission review, report review): the
// for_user claim in the shape of
// idtoken.user, roles normalised the same way (NormaliseRoles).
type IDTokenForUser struct {
	ID              string   `json:"id"`
	Roles           []string `json:"roles"`
	Email           string   `json:"email,omitempty"`
	Name            string   `json:"name,omitempty"`
	GivenName       string   `json:"givenName,omitempty"`
	FamilyName      string   `json:"familyName,omitempty"`
	PersonSourcedID string   `json:"personSourcedId,omitempty"`
}

// forUserOf is the simplified for_user claim, or nil when the launch names no user.
func forUserOf(c *Claims) *IDTokenForUser {
	f := c.ForUser
	if f == nil || f.UserID == "" {
		return nil
	}
	return &IDTokenForUser{ID: f.UserID, Roles: NormaliseRoles(f.Roles), Email: f.Email, Name: f.Name,
		GivenName: f.GivenName, FamilyName: f.FamilyName, PersonSourcedID: f.PersonSourcedID}
}
