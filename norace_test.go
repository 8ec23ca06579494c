//go:build !race

package pkbf

const raceEnabled = false
