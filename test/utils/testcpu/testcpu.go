// Package testcpu reads the CPU time of the test process, for benchmarks on a shared
// machine: wall time there says more about the neighbours than about the code, CPU time
// per operation does not.
package testcpu

import (
	"syscall"
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
