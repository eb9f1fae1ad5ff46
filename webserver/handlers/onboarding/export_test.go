package onboarding

import (
	"time"

	"github.com/ltiop/ltiop/internal/replay"
)

// SetClock replaces the clock that pending registrations expire by. Call it before the
// handlers serve a request.
func SetClock(o *Onboarding, now func() time.Time) { o.now = now }

// SetReplayStore replaces the store of completed registrations. Call it between requests.
func SetReplayStore(o *Onboarding, s replay.Store) { o.used = s }
