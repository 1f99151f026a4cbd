// Package pgtest gives tests a PostgreSQL database with nothing set up.
//
// URL returns $TROVE_TEST_POSTGRES when it is set, unchanged (a test that
// then cannot reach it fails, never skips). When it is unset and
// PostgreSQL's server binaries (initdb, pg_ctl, postgres) are installed, in
// PATH or in /usr/lib/postgresql/*/bin (newest version first), the first
// call starts one private throwaway cluster for the whole test process:
// initdb into a fresh directory under os.TempDir, the postmaster on a free
// port of 127.0.0.1 only (its unix socket inside that directory, fsync off),
// and a database trove_test in it. As root, whom initdb refuses, the
// cluster runs as the postgres system user. Without the binaries, URL skips
// the test with one line saying how to enable it.
//
// Main, called from each package's TestMain, stops the cluster
// (pg_ctl stop -m immediate) and removes its directory when the tests end.
// If the test process dies without reaching that (a panic, a -timeout, a
// kill), the postmaster, a direct child of the test process, gets SIGQUIT
// (an immediate shutdown) from the kernel on Linux (the parent-death
// signal); elsewhere it keeps running until stopped by hand. The directory
// it leaves is removed by the next test process that starts a cluster,
// once neither its owner nor its postmaster is alive.
//
// Only _test.go files import this package.
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/internal/skipnote"
)

// EnvVar names the variable holding the URL of an existing PostgreSQL.
const EnvVar = "TROVE_TEST_POSTGRES"

// SkipHowTo is the line a test skips with when there is no PostgreSQL.
const SkipHowTo = EnvVar + " is not set and PostgreSQL's server binaries (initdb, pg_ctl, postgres) are not installed: " +
	"set " + EnvVar + "=postgres://USER@HOST:PORT/DB?sslmode=disable, or install PostgreSQL's server package " +
	"(e.g. apt-get install postgresql) to run this test on a private throwaway cluster"

// dirPrefix starts the name of every cluster directory under os.TempDir.
const dirPrefix = "trove-pgtest-"

// kit finds the binaries and owns at most one cluster.
type kit struct {
	path   string   // the PATH searched first
	globs  []string // then these, newest version first
	osUser string   // the system user a root process runs the cluster as

	once    sync.Once
	url     string
	skip    string
	err     error
	cluster *cluster
}

// serverGlobs lists, separated like PATH, where PostgreSQL's server
// binaries are looked for after PATH. A string variable so that a build can
// point it elsewhere, e.g. to check the skip path:
//
//	PATH=/usr/bin:/bin go test -ldflags=-X=github.com/trovehq/trove/internal/pgtest.serverGlobs=/nowhere ./storage/postgres/
var serverGlobs = "/usr/lib/postgresql/*/bin"

var std = &kit{path: os.Getenv("PATH"), globs: filepath.SplitList(serverGlobs), osUser: "postgres"}

// URL returns the URL of a PostgreSQL database for t: $TROVE_TEST_POSTGRES
// when set, else the private cluster of this test process (started on the
// first call). It skips t when neither is available and fails t when the
// binaries are installed but the cluster does not start.
func URL(t testing.TB) string {
	t.Helper()
	return std.get(t)
}

// Main runs the tests of m, writes the line saying which tests skipped and
// why (skipnote.Report), then stops this process's cluster, if one was
// started, and removes its directory; it returns m's exit code for
// TestMain to pass to os.Exit. m is a *testing.M, or anything that runs
// the tests (testscript.Main's argument, for instance).
func Main(m interface{ Run() int }) int {
	code := m.Run()
	skipnote.Report(skipnote.PkgPath())
	if err := std.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func (k *kit) get(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvVar); u != "" {
		return u
	}
	k.once.Do(func() {
		k.url, k.skip, k.err = k.start()
		if k.cluster != nil {
			t.Logf("pgtest: %s is unset; started a private PostgreSQL cluster (%s) at %s in %s, removed when the tests end", EnvVar, k.cluster.bin, k.url, k.cluster.dir)
		}
	})
	switch {
	case k.err != nil:
		t.Fatalf("pgtest: %s is not set and the private PostgreSQL cluster did not start: %v", EnvVar, k.err)
	case k.skip != "":
		skipnote.Skip(t, k.skip)
	}
	return k.url
}

// stop stops the cluster, if any, and removes its directory.
func (k *kit) stop() error {
	if k.cluster == nil {
		return nil
	}
	err := k.cluster.stop()
	k.cluster = nil
	return err
}

// binDir returns the first directory holding initdb, pg_ctl and postgres:
// PATH's (symbolic links followed), then each of globs' matches from the
// highest version number down; "" when there is none.
func binDir(path string, globs []string) string {
	var cands []string
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(d, exe("initdb")))
		if err != nil {
			continue
		}
		cands = append(cands, filepath.Dir(p))
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		slices.SortFunc(m, func(a, b string) int { return versionOf(b) - versionOf(a) })
		cands = append(cands, m...)
	}
	for _, d := range cands {
		if hasAll(d, "initdb", "pg_ctl", "postgres") {
			return d
		}
	}
	return ""
}

// versionOf reads the major version in …/postgresql/<N>/bin; 0 if none.
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func hasAll(dir string, names ...string) bool {
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, exe(n)))
		if err != nil || fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode()&0o111 == 0) {
			return false
		}
	}
	return true
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// start starts the private cluster and returns its URL, or a reason to
// skip, or why it failed.
func (k *kit) start() (url, skip string, err error) {
	bin := binDir(k.path, k.globs)
	if bin == "" {
		return "", SkipHowTo, nil
	}
	var owner *account
	if isRoot() {
		u, err := user.Lookup(k.osUser)
		if err != nil {
			return "", EnvVar + " is not set and this test runs as root, whom initdb refuses, with no " + k.osUser + " system user to run a private cluster as: " +
				"set " + EnvVar + "=postgres://USER@HOST:PORT/DB?sslmode=disable, or create that user (the postgresql package does)", nil
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		owner = &account{uid: uid, gid: gid}
	}
	sweep()
	c, err := startCluster(bin, owner)
	if err != nil {
		return "", "", err
	}
	k.cluster = c
	return c.url, "", nil
}

// account is the system user the cluster runs as (nil: this process's).
type account struct{ uid, gid int }

type cluster struct {
	bin, dir string
	owner    *account
	url      string
	proc     *exec.Cmd
	exited   chan struct{} // closed when the postmaster has exited
}

func startCluster(bin string, owner *account) (*cluster, error) {
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, dir: dir, owner: owner}
	fail := func(err error) (*cluster, error) {
		_ = c.stop()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fail(err)
	}
	if owner != nil {
		if err := os.Chown(dir, owner.uid, owner.gid); err != nil {
			return fail(err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb (%s): %v\n%s", bin, err, out))
	}
	if err := c.mkdirOwned("sock"); err != nil {
		return fail(err)
	}
	// The port is free when chosen and may be taken before the postmaster
	// binds it: try a few.
	var port int
	for attempt := 0; ; attempt++ {
		port, err = freePort()
		if err == nil {
			err = c.startPostmaster(data, port)
		}
		if err == nil {
			break
		}
		if attempt == 2 {
			return fail(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fail(fmt.Errorf("connect to the private cluster: %v", err))
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE trove_test")
	conn.Close(ctx)
	if err != nil {
		return fail(fmt.Errorf("create database: %v", err))
	}
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/trove_test?sslmode=disable", port)
	return c, nil
}

// startPostmaster runs postgres in the foreground as a child of this
// process (so that it dies with it, see postmasterAttr) and returns once
// it logs that it accepts connections, or the reason it exited.
func (c *cluster) startPostmaster(data string, port int) error {
	cmd := c.command("postgres", "-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+filepath.Join(c.dir, "sock"),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "lc_messages=C", "-c", "logging_collector=off", "-c", "log_destination=stderr")
	postmasterAttr(cmd)
	logf, err := os.Create(filepath.Join(c.dir, "postgres.log"))
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	cmd.Stdout = logf
	cmd.Stderr = pw
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// The parent-death signal goes with the thread that started the
		// child: keep this one locked until the postmaster is gone.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			pw.Close()
			return
		}
		started <- nil
		_ = cmd.Wait()
		pw.Close() // the scanner below closes logf
		close(exited)
	}()
	if err := <-started; err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %v", err)
	}
	ready := make(chan struct{})
	var tail []string
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			mu.Lock()
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			mu.Unlock()
			if strings.Contains(line, "database system is ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		logf.Close()
	}()
	select {
	case <-ready:
		c.proc, c.exited = cmd, exited
		return nil
	case <-exited:
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("postgres exited on port %d: %s", port, strings.Join(tail, "\n"))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return errors.New("postgres did not accept connections within 60s")
	}
}

// stop shuts the postmaster down at once (pg_ctl stop -m immediate, or a
// kill if that fails) and removes the cluster's directory.
func (c *cluster) stop() error {
	var errs []error
	if c.proc != nil {
		out, err := c.command("pg_ctl", "stop", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w").CombinedOutput()
		if err != nil {
			errs = append(errs, fmt.Errorf("pg_ctl stop: %v: %s", err, out))
			_ = c.proc.Process.Kill()
		}
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			_ = c.proc.Process.Kill()
			<-c.exited
		}
		c.proc = nil
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// command runs a binary of the cluster's installation as its owner.
func (c *cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, exe(name)), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	if c.owner != nil {
		runAs(cmd, c.owner)
	}
	return cmd
}

func (c *cluster) mkdirOwned(name string) error {
	p := filepath.Join(c.dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		return err
	}
	if c.owner != nil {
		return os.Chown(p, c.owner.uid, c.owner.gid)
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// sweep removes the cluster directories left by test processes that died
// before stopping theirs, once neither that process nor its postmaster is
// alive.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		if pidAlive(filepath.Join(d, "owner.pid")) || pidAlive(filepath.Join(d, "data", "postmaster.pid")) {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "owner.pid")); err != nil {
			continue // not (yet) one of ours
		}
		_ = os.RemoveAll(d)
	}
}

// pidAlive reports whether the process whose ID is the first line of file
// is alive; a missing or unreadable file counts as not alive.
func pidAlive(file string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return false
	}
	return processAlive(pid)
}
