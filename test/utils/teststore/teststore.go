// Package teststore opens replay stores for handler tests. It sits apart from testredis,
// which internal/replay's own tests use, so that neither imports the other's package.
package teststore

import (
	"time"

	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/test/utils/testredis"
)

// Redis is a replay store on srv, as ltiop opens one for a shared Redis, with a short time
// bound so that outage tests answer fast; it is closed at the end of the test.
func Redis(tb testredis.TB, srv *testredis.Server) *replay.Redis {
	tb.Helper()
	store, err := replay.NewRedis(replay.RedisOptions{URL: srv.URL, Password: srv.Password, KeyPrefix: "ltiop:test:", Timeout: 50 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	return store
}
