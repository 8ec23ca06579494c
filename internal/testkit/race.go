//go:build race

package testkit

// RaceEnabled is true in a build with the race detector, which makes
// sync.Pool drop items and instruments allocations: allocation counts mean
// nothing there.
const RaceEnabled = true
