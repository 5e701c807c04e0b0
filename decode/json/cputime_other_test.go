//go:build !linux

package json

import "time"

// threadCPU is not available off Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
