// Package testcpu reads the CPU time of the test process, for benchmarks on a shared
// machine: wall time there says more about the neighbours than about the code, CPU time
// per operation does not.
package testcpu

import (
	"syscall"
	"testing"
	"time"
)

// Process is the user and system CPU time this process has used, all threads included.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PerOp reports, beside a benchmark's wall time, "cpu-µs/op": the process's CPU time (the
// collector's threads included) per operation, which busy neighbours do not inflate. Call
// it before the loop and the returned func after it.
func PerOp(b *testing.B) func() {
	start := Process()
	return func() { b.ReportMetric(float64(Process()-start)/float64(b.N)/1e3, "cpu-µs/op") }
}
