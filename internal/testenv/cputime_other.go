//go:build !linux

package testenv

import "time"

// ThreadCPU is not available off Linux: ok is false.
func ThreadCPU() (d time.Duration, ok bool) { return 0, false }
