//go:build unix

package clickhouse

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used (user and system,
// every thread, the garbage collector included), for benchmarks where the
// wall time includes the server's work and waiting for a shared core.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
