//go:build !race

package archive_test

// raceEnabled: built with -race, which multiplies memory and time.
const raceEnabled = false
