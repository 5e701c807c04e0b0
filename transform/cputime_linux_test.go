package transform

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (the caller
// locks its goroutine to the thread), so that benchmarks on a busy machine
// can report the time the work took apart from the time it waited for a
// core.
func threadCPU() (time.Duration, bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
