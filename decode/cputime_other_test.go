//go:build !linux

package decode

import "time"

// threadCPU is not available off Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
