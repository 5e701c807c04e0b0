//go:build !linux

package transform

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
