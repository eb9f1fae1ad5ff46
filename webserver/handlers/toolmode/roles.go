package toolmode

import (
	"net/http"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// membershipPage is the memberships answer: each member's roles normalised exactly as
// /api/idtoken's user.roles (service interface §2.1, lti.NormaliseRoles), and the LMS's
// values as it sent them in rawRoles.
type membershipPage struct {
	ID      string                      `json:"id"`
	Context advantage.MembershipContext `json:"context"`
	Members []member                    `json:"members"`
	Next    string                      `json:"next,omitempty"`
}

type member struct {
	advantage.Member
	RawRoles []string `json:"rawRoles"`
}

func normaliseMembers(p *advantage.MembershipPage) *membershipPage {
	out := &membershipPage{ID: p.ID, Context: p.Context, Members: make([]member, len(p.Members)), Next: p.Next}
	for i, m := range p.Members {
		raw := m.Roles
		if raw == nil {
			raw = []string{}
		}
		m.Roles = lti.NormaliseRoles(raw)
		out.Members[i] = member{Member: m, RawRoles: raw}
	}
	return out
}

// queryRole checks the role filter of /api/memberships against service interface §2.1:
// a value of the vocabulary, or a form NormaliseRoles maps onto one (a deprecated URN, a
// simple context role name). What the LMS receives is the §2.1 value, except that the
// short names stay short (NRPS accepts "Learner", "Instructor", "Administrator") and
// "Student", which no NRPS platform knows, is sent as membership#Learner.
func queryRole(v string) (string, *httpapi.Error) {
	if v == "" {
		return "", nil
	}
	roles := lti.NormaliseRoles([]string{v})
	if len(roles) != 1 {
		return "", httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
			"role: must be one of the role values of service interface §2.1, e.g. Learner or http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor.")
	}
	if roles[0] == "Student" {
		return lti.RoleLearner, nil
	}
	return roles[0], nil
}
