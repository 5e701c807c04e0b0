package json

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used, for
// benchmarks on a shared machine where wall time includes waiting for a
// core. The caller must hold runtime.LockOSThread.
func threadCPU() (time.Duration, bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
