package syncer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// crashAfter lets the k-th mutating call reach the store and then "kills"
// the engine: every later call fails without reaching the store, and the
// test puts back the manifest of the last completed pass. The call's effect
// is durable in the store while the engine recorded nothing, exactly as after
// kill -9 between an upload and the manifest write.
type crashAfter struct {
	trove.Services
	mu   sync.Mutex
	k, n int
	dead bool
}

var errDead = trove.Errorf(trove.EUNAVAILABLE, "killed")

// before reports whether the call may proceed.
func (c *crashAfter) before() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.dead
}

func (c *crashAfter) after() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.n == c.k {
		c.dead = true
	}
}

func (c *crashAfter) crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

func (c *crashAfter) GetMemory(ctx context.Context, s, id string, v trove.View) (*trove.Memory, error) {
	if !c.before() {
		return nil, errDead
	}
	return c.Services.GetMemory(ctx, s, id, v)
}

func (c *crashAfter) ListMemories(ctx context.Context, s string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	if !c.before() {
		return nil, errDead
	}
	return c.Services.ListMemories(ctx, s, p)
}

func (c *crashAfter) CreateMemory(ctx context.Context, s string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	if !c.before() {
		return nil, errDead
	}
	m, err := c.Services.CreateMemory(ctx, s, p)
	c.after()
	if c.crashed() {
		return nil, errDead
	}
	return m, err
}

func (c *crashAfter) UpdateMemory(ctx context.Context, s, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	if !c.before() {
		return nil, errDead
	}
	m, err := c.Services.UpdateMemory(ctx, s, id, p)
	c.after()
	if c.crashed() {
		return nil, errDead
	}
	return m, err
}

func (c *crashAfter) DeleteMemory(ctx context.Context, s, id, sha string) error {
	if !c.before() {
		return errDead
	}
	err := c.Services.DeleteMemory(ctx, s, id, sha)
	c.after()
	if c.crashed() {
		return errDead
	}
	return err
}

// TestCrashAndRestart kills the engine after each mutating call of a pass
// that uploads, creates, renames, merges, makes a conflict copy and deletes,
// then restarts it with the same manifest: the next pass must settle on the
// same end state as an uninterrupted run, with no duplicate memory, no
// duplicate version and no lost byte.
func TestCrashAndRestart(t *testing.T) {
	t.Parallel()
	for k := 1; ; k++ {
		if !crashRun(t, k, true) || !crashRun(t, k, false) {
			if k < 7 {
				t.Fatalf("only %d mutating calls: the scenario did not exercise every action", k-1)
			}
			return
		}
	}
}

// crashRun runs the scenario with a crash after mutating call k; kill puts
// back the pre-pass manifest (kill -9), else the engine's own save stands
// (a lost response). It reports whether the crash happened.
func crashRun(t *testing.T, k int, kill bool) bool {
	base := map[string]string{"/a": "A\n", "/c": "1\n2\n3\n", "/d": "D\n", "/old": "O\n", "/gone": "G\n"}
	want := map[string]string{
		"/a": "A2\n", "/new": "N\n", "/moved": "O\n", "/c": "X\n2\nY\n",
		"/d": "theirs\n", copyName("/d", ""): "mine\n",
	}
	{
		e := newEnv(t)
		for p, c := range base {
			e.rwrite(p, c)
		}
		first := e.engine("dir", nil)
		e.sync(first)
		dir := first.Dir()
		writeFile(t, dir, "/a", "A2\n")
		writeFile(t, dir, "/new", "N\n")
		removeFile(t, dir, "/old")
		writeFile(t, dir, "/moved", "O\n")
		writeFile(t, dir, "/c", "X\n2\n3\n")
		e.rwrite("/c", "1\n2\nY\n")
		writeFile(t, dir, "/d", "mine\n")
		e.rwrite("/d", "theirs\n")
		removeFile(t, dir, "/gone")
		first.Close()

		manifest := filepath.Join(e.root, "dir.state", "manifest.json")
		saved, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		ca := &crashAfter{Services: e.svc, k: k}
		victim := e.engine("dir", func(o *syncer.Options) { o.Services = ca })
		_, err = victim.Flush(e.ctx)
		victim.Close()
		didCrash := ca.crashed()
		if !didCrash && err != nil {
			t.Fatalf("k=%d: flush: %v", k, err)
		}
		if didCrash && kill {
			// kill -9: the pass's manifest write never happened.
			if err := os.WriteFile(manifest, saved, 0o644); err != nil {
				t.Fatal(err)
			}
		}

		restarted := e.engine("dir", nil)
		rep, err := restarted.Flush(e.ctx)
		if err != nil || len(rep.Errors) > 0 {
			t.Fatalf("k=%d: restart: %v %+v", k, err, rep.Errors)
		}
		e.sync(restarted)
		t.Run(fmt.Sprintf("crash after write %d (kill: %v)", k, kill), func(t *testing.T) {
			if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
				t.Errorf("local (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, e.remote()); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			// No duplicate versions: every memory has exactly the versions
			// of an uninterrupted run.
			wantVersions := map[string]int{"/a": 2, "/new": 1, "/moved": 2, "/c": 3, "/d": 2, copyName("/d", ""): 1}
			for p, n := range wantVersions {
				if got := len(versions(t, e, e.memory(p).ID)); got != n {
					t.Errorf("%s has %d versions, want %d", p, got, n)
				}
			}
		})
		return didCrash
	}
}
