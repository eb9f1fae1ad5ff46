package toolmode

import (
	"time"

	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// ForgetOpenedLtiks empties the cache of opened ltiks, so a benchmark can measure the
// cold path of a request.
func ForgetOpenedLtiks(t *Tool) {
	c := t.auth.ltiks
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.order {
		delete(c.entries, k)
	}
	c.order, c.next = c.order[:0], 0
}

// SetClock replaces the tool's clock. Call it before the tool serves a request.
func SetClock(t *Tool, now func() time.Time) { t.now = now }

// SetReplayStore replaces the tool's replay store. Call it before the tool serves a request.
func SetReplayStore(t *Tool, s replay.Store) { t.replay = s }

// ResealState opens a state this tool issued and seals the same login again: a second
// state (another token id) with the same nonce, so that the nonce replay check can be
// reached without the state replay check answering first.
func ResealState(t *Tool, state string) (string, error) {
	payload, _, err := t.keyring.Open(sessions.PurposeState, state, t.now())
	if err != nil {
		return "", err
	}
	return t.keyring.Seal(sessions.PurposeState, payload, stateTTL)
}

// ResealWithServiceKey opens an ltik this tool issued and seals the same launch again with
// key in it, as an ltiop that made service keys at launch sealed it.
func ResealWithServiceKey(t *Tool, ltik, key string) (string, error) {
	payload, _, err := t.keyring.Open(sessions.PurposeLTIK, ltik, t.now())
	if err != nil {
		return "", err
	}
	l, err := decodeLaunch(payload)
	if err != nil {
		return "", err
	}
	l.ServiceKey = key
	return t.keyring.Seal(sessions.PurposeLTIK, encodeLaunch(*l), ltikTTL)
}
