package skipnote

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func reset() {
	mu.Lock()
	defer mu.Unlock()
	reasons = map[string]int{}
	order = nil
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []string
		want    string
	}{
		{"nothing skipped", nil, ""},
		{"one test", []string{"no chromium: apt-get install chromium"}, "1 test (no chromium: apt-get install chromium)"},
		{"one reason", []string{"FUSE unavailable: no /dev/fuse", "FUSE unavailable: no /dev/fuse", "FUSE unavailable: no /dev/fuse"}, "3 tests (FUSE unavailable: no /dev/fuse)"},
		{"reasons in the order first seen", []string{"b", "a", "b"}, "3 tests (2: b; 1: a)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset()
			t.Cleanup(reset)
			for _, r := range tc.records {
				Record(r)
			}
			if got := Summary(); got != tc.want {
				t.Errorf("Summary() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestSkipRecordsAndSkips(t *testing.T) {
	reset()
	t.Cleanup(reset)
	var skipped bool
	t.Run("child", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Skip(t, "no tool: apt-get install tool")
	})
	if !skipped {
		t.Error("Skip did not skip the test")
	}
	if got, want := Summary(), "1 test (no tool: apt-get install tool)"; got != want {
		t.Errorf("Summary() = %q; want %q", got, want)
	}
}

func TestReportToStdout(t *testing.T) {
	reset()
	t.Cleanup(reset)
	t.Setenv("TROVE_SKIPNOTE", "stdout")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = f
	Report("example.com/pkg") // nothing skipped: no line
	Record("no chromium: apt-get install chromium")
	Report("example.com/pkg")
	os.Stdout = old
	f.Close()
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if want := "SKIPPED example.com/pkg: 1 test (no chromium: apt-get install chromium)\n"; string(got) != want {
		t.Errorf("Report wrote %q; want %q", got, want)
	}
}

func TestPkgPath(t *testing.T) {
	if got, want := PkgPath(), "github.com/trovehq/trove/internal/skipnote"; got != want {
		t.Errorf("PkgPath() = %q; want %q", got, want)
	}
}

// fakeTB is a testing.TB whose Fatalf and Skip end the goroutine as the
// real ones do, recording which was called.
type fakeTB struct {
	testing.TB
	name           string
	fatal, skipped bool
}

func (f *fakeTB) Name() string                      { return f.name }
func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = true; runtime.Goexit() }
func (f *fakeTB) Skip(args ...any)                  { f.skipped = true; runtime.Goexit() }

func TestMarkLong(t *testing.T) {
	run := func(name string) *fakeTB {
		f := &fakeTB{name: name}
		done := make(chan struct{})
		go func() { defer close(done); Long(f) }()
		<-done
		return f
	}
	for _, tc := range []struct {
		name      string
		wantFatal bool
	}{
		{"TestLongKill", false},
		{"TestLongKill/subtest", false},
		{"TestKill", true},
		{"TestKill/TestLongSub", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset()
			t.Cleanup(reset)
			f := run(tc.name)
			if f.fatal != tc.wantFatal {
				t.Fatalf("Long in %s: failed = %v, want %v", tc.name, f.fatal, tc.wantFatal)
			}
			if tc.wantFatal {
				return
			}
			if f.skipped != testing.Short() {
				t.Errorf("Long in %s: skipped = %v under -short = %v", tc.name, f.skipped, testing.Short())
			}
			want := ""
			if testing.Short() {
				want = "1 test (" + longReason + ")"
			}
			if got := Summary(); got != want {
				t.Errorf("Summary() = %q, want %q", got, want)
			}
		})
	}
}

// TestCommandsAgree checks that the commands this package names (in the
// long tests' skip reason) are the ones the README tells a newcomer to run
// and .ci/run runs: the race flags and the long tests' -run pattern.
func TestCommandsAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"README.md", []string{"go test " + RaceFlags + " -short", "go test " + RaceFlags + " " + LongRun + " ./..."}},
		{".ci/run", []string{"race=(" + RaceFlags + ")", LongRun}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s does not say %q", tc.file, w)
				}
			}
		})
	}
}
