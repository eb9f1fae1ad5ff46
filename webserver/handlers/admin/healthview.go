package admin

// The launch health both registration views show: status.launchHealth, read-only.

import (
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// LaunchHealth is a registration's status.launchHealth as the API shows it, so that an
// onboarding page can tell when the first launch arrived or why it was refused. Each
// replica writes it at most once a minute, so it may be up to a minute behind.
type LaunchHealth struct {
	LastLaunchTime *time.Time     `json:"lastLaunchTime,omitempty"`
	LastRefusal    *LaunchRefusal `json:"lastRefusal,omitempty"`
}

// LaunchRefusal is the last refused launch or request: when, its stable error code and
// the conformance rule of the failed check.
type LaunchRefusal struct {
	Time time.Time `json:"time"`
	Code string    `json:"code"`
	Rule string    `json:"rule,omitempty"`
}

// healthToAPI returns nil when nothing was recorded yet, so the field is left out.
func healthToAPI(h *ltiv1.LaunchHealth) *LaunchHealth {
	if h == nil || (h.LastLaunchTime == nil && h.LastRefusal == nil) {
		return nil
	}
	out := &LaunchHealth{}
	if h.LastLaunchTime != nil {
		t := h.LastLaunchTime.UTC()
		out.LastLaunchTime = &t
	}
	if r := h.LastRefusal; r != nil {
		out.LastRefusal = &LaunchRefusal{Time: r.Time.UTC(), Code: r.Code, Rule: r.Rule}
	}
	return out
}
