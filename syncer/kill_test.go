package syncer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/syncer"
)

// TestLongKillDuringSync kills a real `trove sync --once` process (the binary
// built from this module, syncing over HTTP from a server in this process)
// with SIGKILL at random moments, first during the batched first download
// of 1,200 memories, then during passes that create 300 memories from new
// files, upload 30 edited ones and pull 30 remote edits, and re-runs it
// each time (until five kills landed with work left in each phase). After every kill the
// manifest claims nothing the disk and the store do not hold; the run that
// is let finish converges: the directory equals the store, no engine temp
// file is left, no memory is duplicated and no version is written twice.
func TestLongKillDuringSync(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	bin := buildTrove(t)
	e := newEnv(t)
	const n = 1200
	e.seed(n)
	_, key, err := e.svc.CreateKey(e.ctx, "wrkspc_test", "kill")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.Config{Services: e.svc, Sessions: e.svc, Auth: e.svc}).HTTPServer()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir, state := filepath.Join(e.root, "dir"), filepath.Join(e.root, "state")
	seed := time.Now().UnixNano()
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	sync := func(kill time.Duration) (killed bool) {
		cmd := exec.Command(bin, "sync", "--once", "--store", e.storeID, "--dir", dir, "--state", state)
		cmd.Env = append(os.Environ(), asTroveEnv+"=1", "TROVE_URL=http://"+ln.Addr().String(), "TROVE_API_KEY="+key,
			"TROVE_DATA=", "TROVE_DATABASE=", "XDG_CONFIG_HOME="+e.root)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if kill <= 0 {
			if err := <-done; err != nil {
				t.Fatalf("trove sync: %v\n%s", err, out.String())
			}
			return false
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("trove sync: %v\n%s", err, out.String())
			}
			return false // finished before the kill
		case <-time.After(kill):
			_ = cmd.Process.Kill()
			err := <-done
			var ee *exec.ExitError
			return errors.As(err, &ee) && !ee.Exited()
		}
	}

	// killRounds kills sync at random moments up to max after its start,
	// checking the manifest after each kill, until five kills landed while
	// work was left (unfinished reports that); then lets one run finish. A
	// run that finished before its kill tested nothing: renew makes new
	// work and the next kills come sooner.
	var before map[string]string // the agreed contents when the work began
	killRounds := func(phase string, max time.Duration, unfinished func() bool, renew func()) {
		kills, mid := 0, 0
		for attempt := 0; mid < 5 && attempt < 40; attempt++ {
			d := time.Duration(rng.Int64N(int64(max))) + 5*time.Millisecond
			if !sync(d) {
				max = max/2 + 5*time.Millisecond
				renew()
				continue
			}
			kills++
			if unfinished() {
				mid++
			}
			checkManifest(t, e, dir, state, before)
		}
		t.Logf("%s: %d runs killed, %d of them with work left", phase, kills, mid)
		if mid < 5 {
			t.Errorf("%s: only %d kills landed while work was left", phase, mid)
		}
		sync(0)
	}

	killRounds("first download", 600*time.Millisecond, func() bool { return len(localFiles(t, dir)) < n }, func() {
		// Finished: start the first download over.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(state); err != nil {
			t.Fatal(err)
		}
	})
	want := e.remote()
	if len(want) != n {
		t.Fatalf("store holds %d memories, want %d", len(want), n)
	}
	checkConverged(t, e, dir, want)

	// Creates, uploads and pulls in one pass, killed and re-run; each
	// batch: 300 new files, 30 local and 30 remote edits (other files).
	wantVersions := map[string]int{}
	for p := range want {
		wantVersions[p] = 1
	}
	batch := 0
	work := func() {
		batch++
		before = maps.Clone(want)
		for i := range 300 {
			p := fmt.Sprintf("/new/b%d/n%03d.md", batch, i)
			writeFile(t, dir, p, fmt.Sprintf("new %d %d\n", batch, i))
			want[p] = fmt.Sprintf("new %d %d\n", batch, i)
			wantVersions[p] = 1
		}
		for i := (2 * batch) % 40; i < n; i += 40 {
			p := fmt.Sprintf("/d%02d/f%05d.md", i%50, i)
			want[p] += fmt.Sprintf("local edit %d\n", batch)
			writeFile(t, dir, p, want[p])
			wantVersions[p]++
		}
		for i := (2*batch + 1) % 40; i < n; i += 40 {
			p := fmt.Sprintf("/d%02d/f%05d.md", i%50, i)
			c := want[p] + fmt.Sprintf("remote edit %d\n", batch)
			if _, err := e.svc.UpdateMemory(e.ctx, e.storeID, e.memory2(p).ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
				t.Fatal(err)
			}
			want[p] = c
			wantVersions[p]++
		}
	}
	work()
	killRounds("creates, uploads and pulls", 400*time.Millisecond, func() bool {
		return !cmp.Equal(want, e.remote()) || !cmp.Equal(want, localFiles(t, dir))
	}, work)
	checkConverged(t, e, dir, want)
	for p, n := range wantVersions {
		if got := len(versions(t, e, e.memory2(p).ID)); got != n {
			t.Errorf("%s has %d versions, want %d", p, got, n)
		}
	}
}

// checkManifest: every path the manifest records as agreed on bytes other
// than those agreed before the phase (before) holds them locally and in the
// store: a crash may leave the manifest behind, never ahead.
func checkManifest(t *testing.T, e *env, dir, state string, before map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var m syncer.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest after a kill: %v", err)
	}
	remote := map[string]string{}
	for p, c := range e.remote() {
		remote[p] = sha(c)
	}
	for p, en := range m.Entries {
		if c, ok := before[p]; en.BaseSHA == "" || ok && sha(c) == en.BaseSHA {
			continue
		}
		local, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/"))))
		if err != nil {
			t.Errorf("manifest agrees on %s, which is not on disk: %v", p, err)
			continue
		}
		if sha(string(local)) != en.BaseSHA {
			t.Errorf("manifest agrees on %s = %s, the disk holds other bytes", p, en.BaseSHA)
		}
		if remote[p] != en.BaseSHA {
			t.Errorf("manifest agrees on %s = %s, the store holds %q", p, en.BaseSHA, remote[p])
		}
	}
}

// checkConverged: the directory holds exactly want, with no temp file.
func checkConverged(t *testing.T, e *env, dir string, want map[string]string) {
	t.Helper()
	if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
		t.Errorf("local after convergence (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store after convergence (-want +got):\n%s", diff)
	}
}

// memory2 finds the memory at path by paging the whole listing (memory
// looks at the first page only).
func (e *env) memory2(path string) *trove.Memory {
	e.t.Helper()
	cursor := ""
	for {
		pg, err := e.svc.ListMemories(e.ctx, e.storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor, PathPrefix: path[:strings.LastIndex(path, "/")+1]})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range pg.Data {
			if it.Memory != nil && it.Memory.Path == path {
				return it.Memory
			}
		}
		if pg.NextPage == "" {
			e.t.Fatalf("no memory at %s", path)
		}
		cursor = pg.NextPage
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// buildTrove returns the trove command to run as a process: this test
// binary, which runs as cmd/trove's main when asTroveEnv is set in its
// environment (TestMain). The child is the CLI this module builds, with
// -race like the tests, without a `go build ./cmd/trove` that on a cold
// build cache recompiled every package without -race.
func buildTrove(t *testing.T) string {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// localFiles is readDir without the engine's temp files (none when dir is
// not there yet).
func localFiles(t *testing.T, dir string) map[string]string {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return map[string]string{}
	}
	out := readDir(t, dir)
	for p := range out {
		if strings.HasPrefix(filepath.Base(p), ".trove-sync-") {
			delete(out, p)
		}
	}
	return out
}
