package oauthbroker

import "time"

// SetClock replaces the broker's clock (not the keyring's: tokens are sealed at real time).
func SetClock(b *Broker, now func() time.Time) { b.now = now }

// PKCEChallenge exposes the S256 transform.
var PKCEChallenge = pkceChallenge
