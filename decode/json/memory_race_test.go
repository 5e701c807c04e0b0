//go:build race

package json

// raceEnabled: the race detector's own allocations are counted too.
const raceEnabled = true
