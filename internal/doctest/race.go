//go:build race

package doctest

const raceEnabled = true
