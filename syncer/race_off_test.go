//go:build !race

package syncer_test

const raceEnabled = false
