package testenv

import (
	"syscall"
	"time"
)

// ThreadCPU returns the CPU time (user and system) the calling OS thread
// has used, so that a benchmark on a busy machine can report the time its
// work took apart from the time it waited for a core. The caller must hold
// runtime.LockOSThread between two readings. ok is false where the
// platform cannot tell.
func ThreadCPU() (d time.Duration, ok bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
