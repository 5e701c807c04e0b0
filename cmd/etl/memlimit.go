package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// setMemoryLimit sets the Go runtime's soft memory limit so that garbage
// cannot push the process past what the byte budget promises: the budget
// plus a fixed allowance for the runtime, the client libraries' buffers and
// the heap's fragmentation, capped at 90% of the container's memory limit.
// A GOMEMLIMIT set in the environment wins.
func setMemoryLimit(budget int64, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	const allowance = 256 << 20
	limit := budget + allowance
	if c := cgroupMemoryLimit(); c > 0 {
		if capped := c / 10 * 9; capped < limit {
			limit = capped
		}
	}
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set", "bytes", limit)
}

// cgroupMemoryLimit reads the container's memory limit (cgroup v2, then
// v1); 0 when there is none.
func cgroupMemoryLimit() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 || v >= 1<<60 {
			return 0
		}
		return v
	}
	return 0
}
