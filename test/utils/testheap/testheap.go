// Package testheap reads the live heap of the test process, for tests that bound what a
// piece of code keeps in memory.
package testheap

import (
	"runtime"
	"runtime/metrics"
)

// Live is the heap the collector found alive, after collections now: two, since what
// sync.Pools hold survives one.
func Live() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) //nolint:gosec // G115: a heap size fits in an int64
}
