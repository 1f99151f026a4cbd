// Package skipnote makes the tests that skip for want of something on the
// machine (PostgreSQL, Chromium, FUSE) say so without -v.
//
// go test discards everything a passing package prints unless -v is given,
// so a package whose browser or PostgreSQL tests all skipped prints the same
// "ok" line as one that ran them. A test that skips for want of a tool calls
// Skip with the reason and how to get the tool; the package's TestMain calls
// Main, which, after the tests, writes one line per package:
//
//	SKIPPED github.com/trovehq/trove/console: 14 tests (browser tests need Chromium: apt-get install chromium)
//
// With -v the line goes to standard output, after the tests' own output.
// Without -v it goes to the terminal (/dev/tty, or CONOUT$ on Windows),
// the one place go test does not swallow, so that whoever runs the README's
// test command sees it next to the package's "ok" line; when there is no
// terminal (CI, output piped) it goes to standard output, where go test
// shows it only for a failing package. Set TROVE_SKIPNOTE=stdout to always
// write to standard output (a script parsing -json output).
//
// Only _test.go files import this package.
package skipnote

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu      sync.Mutex
	reasons = map[string]int{} // skip reason → tests skipped for it
	order   []string           // reasons in the order first seen
)

// Skip records that t skips for reason (what is missing and how to get it,
// e.g. "browser tests need Chromium: apt-get install chromium") and skips
// t with that reason.
func Skip(t testing.TB, reason string) {
	t.Helper()
	Record(reason)
	t.Skip(reason)
}

// Record counts one test skipped for reason, for a caller that skips t
// itself (b.Skip in a benchmark, or a helper that skips with more words).
func Record(reason string) {
	mu.Lock()
	defer mu.Unlock()
	if reasons[reason] == 0 {
		order = append(order, reason)
	}
	reasons[reason]++
}

// Summary returns the one-line summary of what was skipped and why, without
// the package name ("" when nothing was recorded): "3 tests (FUSE
// unavailable: …)", or with several reasons "5 tests (3: reason A; 2:
// reason B)".
func Summary() string {
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range reasons {
		total += n
	}
	if total == 0 {
		return ""
	}
	noun := "tests"
	if total == 1 {
		noun = "test"
	}
	if len(order) == 1 {
		return fmt.Sprintf("%d %s (%s)", total, noun, order[0])
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%d: %s", reasons[r], r))
	}
	return fmt.Sprintf("%d %s (%s)", total, noun, strings.Join(parts, "; "))
}

// Main runs the tests of m, then writes the summary line (see the package
// comment) when a test was skipped through Skip or Record, and returns m's
// exit code for TestMain to pass to os.Exit. m is a *testing.M or anything
// that runs the tests, such as pgtest.Main's argument.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	Report(PkgPath())
	return code
}

// Report writes the summary line for the package named pkg, if any test
// was skipped; Main calls it.
func Report(pkg string) {
	s := Summary()
	if s == "" {
		return
	}
	line := "SKIPPED " + pkg + ": " + s + "\n"
	w, closeW := out()
	defer closeW()
	io.WriteString(w, line) //nolint:errcheck // nowhere better to say so
}

// out returns where the summary goes: standard output with -v or
// TROVE_SKIPNOTE=stdout, else the terminal when there is one.
func out() (io.Writer, func()) {
	if testing.Verbose() || os.Getenv("TROVE_SKIPNOTE") == "stdout" {
		return os.Stdout, func() {}
	}
	name := "/dev/tty"
	if runtime.GOOS == "windows" {
		name = "CONOUT$"
	}
	if f, err := os.OpenFile(name, os.O_WRONLY, 0); err == nil {
		return f, func() { f.Close() }
	}
	return os.Stdout, func() {}
}

// PkgPath returns the import path of the package under test: go test runs
// a test binary in its package's directory, so it is the module path plus
// that directory relative to the module root. Outside a module (a copied
// test binary), the binary's name.
func PkgPath() string {
	fallback := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	wd, err := os.Getwd()
	if err != nil {
		return fallback
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return fallback
			}
			return path.Join(modulePath, filepath.ToSlash(rel))
		}
		if filepath.Dir(dir) == dir {
			return fallback
		}
	}
}

const modulePath = "github.com/trovehq/trove"

// LongPrefix begins the name of every long test: a kill -9 soak, the
// release build, a scale run. The README's test command runs with -short,
// which leaves them out; .ci/run then runs exactly them with
// -run '^TestLong' (LongRun), so a long test must carry the prefix to be
// run anywhere but on a full `go test ./...`.
const LongPrefix = "TestLong"

// LongRun is the go test flag that runs only the long tests.
const LongRun = "-run '^" + LongPrefix + "'"

// RaceFlags are the README's flags for the race detector: SQLite's
// translated C is compiled without it (docs/testing.md).
const RaceFlags = "-race -gcflags=modernc.org/sqlite/lib=-race=false"

// longReason is what the summary says of the long tests -short left out:
// the command .ci/run runs them with.
const longReason = "long tests left out by -short; go test " + RaceFlags + " " + LongRun + " ./... runs them"

// Long marks t as a long test: under -short it is skipped, and counted in
// the package's SKIPPED line. A test whose top-level name does not begin
// with LongPrefix fails instead, since CI's run of the long tests would
// never find it.
func Long(t testing.TB) {
	t.Helper()
	if top, _, _ := strings.Cut(t.Name(), "/"); !strings.HasPrefix(top, LongPrefix) {
		t.Fatalf("skipnote.Long in %s: a long test's name must begin with %s (.ci/run runs the long tests with %s)", t.Name(), LongPrefix, LongRun)
	}
	if testing.Short() {
		Skip(t, longReason)
	}
}
