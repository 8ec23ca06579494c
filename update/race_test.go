//go:build race

package update

// raceEnabled: the race detector slows adds tenfold, and tests shrink.
const raceEnabled = true
