package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// troveBin is the trove command tests run as a real process (kill -9,
// stdio MCP): this test binary, which testscript.Main (TestMain) copied as
// "trove" into a directory it put at the head of PATH, and which, run under
// that name, is exactly cmd/trove's main: os.Exit(Main(args, stdio)). It
// replaces a `go build ./cmd/trove` per test: that build recompiled every
// package without -race (the test binary's are compiled with it) and, on a
// cold build cache, cost more than the tests themselves.
var troveBin string

// findTroveBin sets troveBin from PATH once testscript.Main has set it up.
func findTroveBin() {
	p, err := exec.LookPath("trove")
	if err != nil {
		return
	}
	if first := filepath.SplitList(os.Getenv("PATH"))[0]; filepath.Dir(p) != first {
		return // a trove installed on this machine, not this test binary
	}
	troveBin = p
}

// buildTrove returns the path of the trove command to run as a process
// (troveBin). The long ones among them (kill -9 soaks) call skipnote.Long.
func buildTrove(t testing.TB) string {
	t.Helper()
	if troveBin == "" {
		t.Fatal("testscript.Main put no trove command at the head of PATH")
	}
	return troveBin
}

// startServeProcess starts `bin serve` on a free loopback port over the SQLite
// database in data and returns the process and its URL once it listens.
// The caller kills or stops the process. extra are more serve flags.
func startServeProcess(t testing.TB, bin, data string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	return startServeProcessAt(t, bin, data, "127.0.0.1:0", extra...)
}

// startServeProcessAt is startServeProcess listening on addr (a restart
// on the address a previous process had).
func startServeProcessAt(t testing.TB, bin, data, addr string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--data", data, "--addr", addr}, extra...)...)
	cmd.Env = append(os.Environ(), "TROVE_DATA=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stdout)
			return cmd, m[1]
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatal("child serve printed no address")
	return nil, ""
}
