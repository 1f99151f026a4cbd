package syncer_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkSyncProcessVsSDK: the first download of a store by `trove sync
// --once` as a user runs it (a process of the trove binary built from this
// module with `go build`, over HTTP to a trove serve in the benchmark's
// process), against the official Go SDK worker's Download
// (lib/environments.SessionMemoryStores) of a store seeded with the same
// memories on the same server. Each operation times one of each, their
// order alternating (so the machine's drift falls on both), and logs both
// times; the metrics are trove-ms/op (from start to exit of the process),
// sdk-ms/op, x-sdk (the sum of Trove's times over the SDK's) and
// worst-x-sdk (the largest ratio of one operation), with the process's
// CPU (trove-user-ms/op, trove-sys-ms/op, from its rusage).
//
// No directory is deleted before the end: on ext4 without a journal (this
// project's shared machine) a file created within a minute or so of many
// deletions in the same block group pays for skipping each recently
// deleted inode (recently_deleted in the inode allocator), so a download
// made right after the previous one's 10,000 files were removed costs
// several times more system time, whichever engine it is.
//
// With SYNCER_BENCH_BASELINE_BIN set to another trove binary (an older
// build, to compare), each operation also times that binary's download
// (base-ms/op, base-x-sdk, base-worst-x-sdk, base-user-ms/op,
// base-sys-ms/op). The three runs of an operation rotate their order.
//
// With SYNCER_BENCH_STRACE=1 and strace installed, one more download, not
// timed, runs under `strace -f -c` and its syncfs, fsync (+ fdatasync)
// and rename (all variants) counts are reported (syncfs/dl, fsync/dl,
// rename/dl).
//
//	go test -run '^$' -bench SyncProcessVsSDK -benchtime 5x ./syncer
//	SYNCER_BENCH_SMALL=1 …   # 1,000 memories instead of 10,000
func BenchmarkSyncProcessVsSDK(b *testing.B) {
	n := 10000
	if os.Getenv("SYNCER_BENCH_SMALL") != "" {
		n = 1000
	}
	bin := troveBinary(b)
	s := newSDKBench(b, n)
	b.Run(fmt.Sprintf("download/n=%d", n), func(b *testing.B) {
		base := os.Getenv("SYNCER_BENCH_BASELINE_BIN")
		var tr, sd, bt, user, sys, buser, bsys time.Duration
		worst, bworst := 0.0, 0.0
		op := 0
		for b.Loop() {
			op++
			var t1, s1 time.Duration
			runTrove := func() {
				r := s.troveProcess(b, bin, "", n)
				t1, user, sys = r.wall, user+r.user, sys+r.sys
			}
			runSDK := func() {
				t0 := time.Now()
				w, dir := s.sdkDownload(b)
				s1 = time.Since(t0)
				b.StopTimer()
				checkFiles(b, dir, n+1) // + the SDK's marker file
				b.StartTimer()
				_ = w // not Disposed: that would delete its directory (see below)
			}
			var b1 time.Duration
			runBase := func() {
				if base != "" {
					r := s.troveProcess(b, base, "", n)
					b1, buser, bsys = r.wall, buser+r.user, bsys+r.sys
				}
			}
			runs := []func(){runTrove, runSDK, runBase}
			for i := range runs {
				runs[(i+op)%len(runs)]()
			}
			tr, sd, bt = tr+t1, sd+s1, bt+b1
			worst = max(worst, t1.Seconds()/s1.Seconds())
			bworst = max(bworst, b1.Seconds()/s1.Seconds())
			b.Logf("op %d: trove sync --once %d ms, SDK Download %d ms (x %.2f); baseline binary %d ms", op, t1.Milliseconds(), s1.Milliseconds(), t1.Seconds()/s1.Seconds(), b1.Milliseconds())
		}
		b.ReportMetric(float64(tr.Milliseconds())/float64(b.N), "trove-ms/op")
		b.ReportMetric(float64(sd.Milliseconds())/float64(b.N), "sdk-ms/op")
		b.ReportMetric(tr.Seconds()/sd.Seconds(), "x-sdk")
		b.ReportMetric(worst, "worst-x-sdk")
		if base != "" {
			b.ReportMetric(float64(bt.Milliseconds())/float64(b.N), "base-ms/op")
			b.ReportMetric(bt.Seconds()/sd.Seconds(), "base-x-sdk")
			b.ReportMetric(bworst, "base-worst-x-sdk")
			b.ReportMetric(float64(buser.Milliseconds())/float64(b.N), "base-user-ms/op")
			b.ReportMetric(float64(bsys.Milliseconds())/float64(b.N), "base-sys-ms/op")
		}
		b.ReportMetric(float64(user.Milliseconds())/float64(b.N), "trove-user-ms/op")
		b.ReportMetric(float64(sys.Milliseconds())/float64(b.N), "trove-sys-ms/op")
		b.ReportMetric(0, "ns/op")
		if os.Getenv("SYNCER_BENCH_STRACE") == "1" {
			b.StopTimer()
			counts := s.straceDownload(b, bin, n)
			b.Logf("strace -f -c of one download: %v", counts)
			b.ReportMetric(float64(counts["syncfs"]), "syncfs/dl")
			b.ReportMetric(float64(counts["fsync"]+counts["fdatasync"]), "fsync/dl")
			b.ReportMetric(float64(counts["rename"]+counts["renameat"]+counts["renameat2"]), "rename/dl")
			b.ReportMetric(float64(counts["openat"]), "openat/dl")
			if base != "" {
				bc := s.straceDownload(b, base, n)
				b.Logf("strace -f -c of one download by the baseline binary: %v", bc)
				b.ReportMetric(float64(bc["syncfs"]), "base-syncfs/dl")
				b.ReportMetric(float64(bc["rename"]+bc["renameat"]+bc["renameat2"]), "base-rename/dl")
			}
		}
	})
}

var (
	troveBinOnce sync.Once
	troveBin     string
	troveBinErr  error
)

// troveBinary builds the trove command of this module (go build, as a user
// installs it) once per test binary, into a directory TestMain removes at
// exit (removeTroveBinary).
func troveBinary(b *testing.B) string {
	troveBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trove-bench-bin")
		if err != nil {
			troveBinErr = err
			return
		}
		troveBin = filepath.Join(dir, "trove")
		out, err := exec.Command("go", "build", "-o", troveBin, "github.com/trovehq/trove/cmd/trove").CombinedOutput()
		if err != nil {
			troveBinErr = fmt.Errorf("go build ./cmd/trove: %v\n%s", err, out)
		}
	})
	if troveBinErr != nil {
		b.Fatal(troveBinErr)
	}
	return troveBin
}

// removeTroveBinary removes what troveBinary built, if anything.
func removeTroveBinary() {
	if troveBin != "" {
		os.RemoveAll(filepath.Dir(troveBin))
	}
}

// procRun is one finished trove process: wall-clock time from start to
// exit and its CPU.
type procRun struct{ wall, user, sys time.Duration }

// troveProcess runs `trove sync --once` into a new directory (prefixed by
// wrap, e.g. strace, when not ""), checks it downloaded n memories and
// returns its times; the directory is kept until the benchmark ends.
func (s *sdkBench) troveProcess(b *testing.B, bin string, wrap string, n int, wrapArgs ...string) procRun {
	s.troveSeq++
	dir := filepath.Join(s.e.root, fmt.Sprintf("proc%d", s.troveSeq))
	args := []string{"sync", "--once", "--store", s.troveStore, "--dir", dir, "--state", dir + ".state"}
	name := bin
	if wrap != "" {
		name, args = wrap, append(append(wrapArgs, bin), args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "TROVE_URL="+s.url, "TROVE_API_KEY="+s.key,
		"TROVE_DATA=", "TROVE_DATABASE=", "XDG_CONFIG_HOME="+s.e.root)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		b.Fatalf("trove sync --once: %v\n%s", err, out.String())
	}
	if want := fmt.Sprintf("sync: %d download\n", n); !strings.Contains(out.String(), want) {
		b.Fatalf("trove sync --once did not report %q:\n%s", want, out.String())
	}
	b.StopTimer()
	checkFiles(b, dir, n)
	b.StartTimer()
	return procRun{wall: wall, user: cmd.ProcessState.UserTime(), sys: cmd.ProcessState.SystemTime()}
}

// straceDownload runs one download under strace -f -c and returns the
// number of calls per system call name.
func (s *sdkBench) straceDownload(b *testing.B, bin string, n int) map[string]int {
	st, err := exec.LookPath("strace")
	if err != nil {
		b.Fatalf("SYNCER_BENCH_STRACE=1 needs strace: %v", err)
	}
	out := filepath.Join(s.e.root, "strace.txt")
	s.troveProcess(b, bin, st, n, "-f", "-c", "-o", out)
	f, err := os.Open(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	return parseStraceSummary(f)
}

// parseStraceSummary reads strace -c's table: "% time seconds usecs/call
// calls [errors] syscall".
func parseStraceSummary(f *os.File) map[string]int {
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		if _, err := strconv.ParseFloat(fs[0], 64); err != nil {
			continue
		}
		if calls, err := strconv.Atoi(fs[3]); err == nil {
			counts[fs[len(fs)-1]] = calls
		}
	}
	return counts
}
