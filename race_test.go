//go:build race

package pkbf

// raceEnabled: the race detector makes sync.Pool drop items and
// instruments allocations, so allocation counts mean nothing.
const raceEnabled = true
