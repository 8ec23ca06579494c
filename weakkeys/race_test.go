//go:build race

package weakkeys

// raceEnabled: the race detector makes sync.Pool drop items and
// instruments allocations, so allocation counts mean nothing.
const raceEnabled = true
