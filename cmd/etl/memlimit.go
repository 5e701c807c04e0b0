package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// setMemoryLimit sets the Go runtime's soft memory limit to the byte budget
// plus a fixed allowance, capped at 90% of the container's memory limit. A
// GOMEMLIMIT set in the environment wins.
//
// In steady state the live heap is what the budget counts (at most its high
// watermark while the source runs) plus a few tens of MiB that do not grow
// with the input: the runtime, the Kafka client's buffers, the encoders and
// the decoders' scratch. Without a limit the collector lets the heap grow to
// twice the live heap before it runs; the limit makes it run before the
// process passes the budget plus the allowance instead. The limit is soft:
// what the budget does not count and can be larger (the dead-letter buffer,
// the parse tree of a JSON value read whole, see README's memory bound) may
// take the live heap past it, and the runtime then lets the heap grow, the
// collector running more often, rather than fail.
func setMemoryLimit(budget int64, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := budget + memoryLimitAllowance
	if c := cgroupMemoryLimit(); c > 0 {
		if capped := c / 10 * 9; capped < limit {
			limit = capped
		}
	}
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set", "bytes", limit)
}

// memoryLimitAllowance is what the Go memory limit adds to the byte budget:
// the live heap that does not grow with the input (a few tens of MiB on the
// benchmarks) with room for the collector to run between cycles.
const memoryLimitAllowance = 64 << 20

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
