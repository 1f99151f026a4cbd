package pgtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// unsetEnv unsets $TROVE_TEST_POSTGRES for t (restored afterwards).
func unsetEnv(t *testing.T) {
	t.Setenv(EnvVar, "")
	os.Unsetenv(EnvVar)
}

// getIn runs k.get in a subtest and returns its URL and whether it
// skipped or failed.
func getIn(t *testing.T, k *kit) (url string, skipped, failed bool) {
	var sub *testing.T
	t.Run("get", func(t *testing.T) {
		sub = t
		url = k.get(t)
	})
	return url, sub.Skipped(), sub.Failed()
}

// TestSkipWithoutBinaries: with the variable unset and no binaries in
// PATH or the globs, the test skips with the one line saying how to
// enable it, and no cluster is started.
func TestSkipWithoutBinaries(t *testing.T) {
	unsetEnv(t)
	k := &kit{path: t.TempDir(), globs: []string{filepath.Join(t.TempDir(), "*", "bin")}}
	_, skipped, failed := getIn(t, k)
	if !skipped || failed {
		t.Fatalf("get without binaries: skipped=%v failed=%v, want a skip", skipped, failed)
	}
	if k.skip != SkipHowTo || k.cluster != nil {
		t.Errorf("skip = %q, cluster = %v; want %q and none", k.skip, k.cluster, SkipHowTo)
	}
}

// TestSkipAsRootWithoutUser: as root, with the binaries but no system
// user to run them as, the test skips naming the missing user.
func TestSkipAsRootWithoutUser(t *testing.T) {
	unsetEnv(t)
	if !isRoot() {
		t.Skip("only root needs another user to run initdb")
	}
	k := &kit{path: std.path, globs: std.globs, osUser: "trove-no-such-user"}
	if binDir(k.path, k.globs) == "" {
		t.Skip(SkipHowTo)
	}
	_, skipped, failed := getIn(t, k)
	if !skipped || failed || !strings.Contains(k.skip, "no trove-no-such-user system user") || k.cluster != nil {
		t.Errorf("get as root without the user: skipped=%v failed=%v skip=%q cluster=%v", skipped, failed, k.skip, k.cluster)
	}
}

// TestEnvVarWins: a set variable is returned unchanged, even unreachable
// (the caller's connection then fails the test), and nothing is started.
func TestEnvVarWins(t *testing.T) {
	const u = "postgres://someone@203.0.113.1:1/db?sslmode=disable"
	t.Setenv(EnvVar, u)
	k := &kit{path: t.TempDir()}
	got, skipped, failed := getIn(t, k)
	if got != u || skipped || failed {
		t.Errorf("get = %q (skipped=%v failed=%v), want %q", got, skipped, failed, u)
	}
	if k.cluster != nil {
		t.Errorf("a cluster was started though %s is set", EnvVar)
	}
}

// fakeInstall makes dir hold executables named names.
func fakeInstall(t *testing.T, dir string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, exe(n)), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBinDir(t *testing.T) {
	root := t.TempDir()
	all := []string{"initdb", "pg_ctl", "postgres"}
	fakeInstall(t, filepath.Join(root, "pg", "9", "bin"), all...)
	fakeInstall(t, filepath.Join(root, "pg", "15", "bin"), all...)
	fakeInstall(t, filepath.Join(root, "pg", "17", "bin"), "initdb", "pg_ctl") // no server
	fakeInstall(t, filepath.Join(root, "other"), all...)
	fakeInstall(t, filepath.Join(root, "links"))
	if err := os.Symlink(filepath.Join(root, "pg", "9", "bin", exe("initdb")), filepath.Join(root, "links", exe("initdb"))); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	glob := []string{filepath.Join(root, "pg", "*", "bin")}
	tests := []struct {
		name  string
		path  string
		globs []string
		want  string
	}{
		{"nothing", filepath.Join(root, "empty"), nil, ""},
		{"newest complete version", "", glob, filepath.Join(root, "pg", "15", "bin")},
		{"PATH first", filepath.Join(root, "other"), glob, filepath.Join(root, "other")},
		{"PATH link followed", filepath.Join(root, "links"), glob, filepath.Join(root, "pg", "9", "bin")},
		{"incomplete PATH entry passed over", filepath.Join(root, "pg", "17", "bin"), glob, filepath.Join(root, "pg", "15", "bin")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := binDir(tt.path, tt.globs)
			if want, _ := filepath.EvalSymlinks(tt.want); tt.want != "" && got != want {
				t.Errorf("binDir = %q, want %q", got, want)
			} else if tt.want == "" && got != "" {
				t.Errorf("binDir = %q, want none", got)
			}
		})
	}
}

// TestSweep: a directory whose owner and postmaster are dead is removed;
// one whose owner lives is kept.
func TestSweep(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no liveness check on Windows")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, pid int) string {
		d := filepath.Join(tmp, dirPrefix+name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "owner.pid"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone := mk("dead", dead.Process.Pid)
	kept := mk("alive", os.Getpid())
	sweep()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("directory of a dead test process kept: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("directory of a live test process removed: %v", err)
	}
}

// TestPrivateCluster starts a cluster as URL does with the variable unset,
// uses it, stops it, and finds neither its postmaster nor its directory.
func TestPrivateCluster(t *testing.T) {
	unsetEnv(t)
	k := &kit{path: std.path, globs: std.globs, osUser: std.osUser}
	if binDir(k.path, k.globs) == "" {
		t.Skip(SkipHowTo)
	}
	url, skipped, failed := getIn(t, k)
	if skipped || failed {
		t.Fatalf("get: skipped=%v failed=%v (skip %q, err %v)", skipped, failed, k.skip, k.err)
	}
	t.Cleanup(func() { _ = k.stop() })
	c := k.cluster
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if db != "trove_test" {
		t.Errorf("database = %q, want trove_test", db)
	}
	if again, _, _ := getIn(t, k); again != url {
		t.Errorf("second get = %q, want the same cluster %q", again, url)
	}
	pid := c.proc.Process.Pid
	if err := k.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if processAlive(pid) {
		t.Errorf("postmaster %d still alive after stop", pid)
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s still there: %v", c.dir, err)
	}
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Errorf("%s still answers after stop", url)
	}
}
