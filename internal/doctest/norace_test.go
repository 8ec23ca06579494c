//go:build !race

package doctest_test

const raceEnabled = false
