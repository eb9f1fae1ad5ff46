package onboarding

import "time"

// SetClock replaces the clock that pending registrations expire by. Call it before the
// handlers serve a request.
func SetClock(o *Onboarding, now func() time.Time) { o.now = now }
