//go:build !race

package decode

// raceEnabled: the race detector's own allocations are counted too.
const raceEnabled = false
