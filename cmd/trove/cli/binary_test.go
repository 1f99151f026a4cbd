package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildTrove builds the trove binary into a temporary directory of t and
// returns its path. Tests that need a real process (kill -9, stdio MCP)
// use it; they skip under -short.
func buildTrove(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "trove")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/trovehq/trove/cmd/trove").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startServeProcess starts `bin serve` on a free loopback port over the SQLite
// database in data and returns the process and its URL once it listens.
// The caller kills or stops the process. extra are more serve flags.
func startServeProcess(t *testing.T, bin, data string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	return startServeProcessAt(t, bin, data, "127.0.0.1:0", extra...)
}

// startServeProcessAt is startServeProcess listening on addr (a restart
// on the address a previous process had).
func startServeProcessAt(t *testing.T, bin, data, addr string, extra ...string) (*exec.Cmd, string) {
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
