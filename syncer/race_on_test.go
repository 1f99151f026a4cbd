//go:build race

package syncer_test

const raceEnabled = true
