// Package racechild takes the race detector's exit pause out of the
// processes a test starts from its own (race-built) binary.
//
// A binary built with -race sleeps atexit_sleep_ms (1 s by default) when it
// exits, so that other goroutines' race reports can finish. Tests that run
// the trove command as a child process (cmd/trove/cli's scripts and kill -9
// tests, syncer's kill test, the PostgreSQL driver's two-node tests) start
// hundreds of such children: with the default, each added a second of idle
// wall time, several minutes per run of the suite. A race in a child is
// still reported, and still fails it (exit status 66): only the pause goes.
package racechild

import (
	"os"
	"strings"
)

// Setenv sets GORACE for the children of this process to exit without the
// pause, keeping any other GORACE option, unless GORACE already names
// atexit_sleep_ms. Call it from TestMain before any child starts; it
// returns the value it set, for environments built from scratch (testscript).
func Setenv() string {
	v := os.Getenv("GORACE")
	if !strings.Contains(v, "atexit_sleep_ms") {
		v = strings.TrimSpace(v + " atexit_sleep_ms=0")
		os.Setenv("GORACE", v)
	}
	return v
}
