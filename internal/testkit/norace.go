//go:build !race

package testkit

// RaceEnabled is true in a build with the race detector.
const RaceEnabled = false
