//go:build !race

package weakkeys

const raceEnabled = false
