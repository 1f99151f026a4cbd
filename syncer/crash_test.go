package syncer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// crashAfter lets the k-th mutating call reach the store and then "kills"
// the engine before it can record the outcome: the call's effect is durable
// in the store, the manifest on disk is whatever the last completed pass
// wrote, exactly as after kill -9 between an upload and the manifest write.
type crashAfter struct {
	trove.Services
	k, n int
}

type crashed struct{}

func (c *crashAfter) hit() {
	c.n++
	if c.n == c.k {
		panic(crashed{})
	}
}

func (c *crashAfter) CreateMemory(ctx context.Context, s string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	m, err := c.Services.CreateMemory(ctx, s, p)
	c.hit()
	return m, err
}

func (c *crashAfter) UpdateMemory(ctx context.Context, s, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	m, err := c.Services.UpdateMemory(ctx, s, id, p)
	c.hit()
	return m, err
}

func (c *crashAfter) DeleteMemory(ctx context.Context, s, id, sha string) error {
	err := c.Services.DeleteMemory(ctx, s, id, sha)
	c.hit()
	return err
}

// TestCrashAndRestart kills the engine after each mutating call of a pass
// that uploads, creates, renames, merges, makes a conflict copy and deletes,
// then restarts it with the same manifest: the next pass must settle on the
// same end state as an uninterrupted run, with no duplicate memory, no
// duplicate version and no lost byte.
func TestCrashAndRestart(t *testing.T) {
	base := map[string]string{"/a": "A\n", "/c": "1\n2\n3\n", "/d": "D\n", "/old": "O\n", "/gone": "G\n"}
	want := map[string]string{
		"/a": "A2\n", "/new": "N\n", "/moved": "O\n", "/c": "X\n2\nY\n",
		"/d": "theirs\n", copyName("/d", ""): "mine\n",
	}
	for k := 1; ; k++ {
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

		ca := &crashAfter{Services: e.svc, k: k}
		victim := e.engine("dir", func(o *syncer.Options) { o.Services = ca })
		didCrash := func() (c bool) {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(crashed); !ok {
						panic(r)
					}
					c = true
				}
			}()
			if _, err := victim.Flush(e.ctx); err != nil {
				t.Fatalf("k=%d: flush: %v", k, err)
			}
			return false
		}()
		victim.Close()

		restarted := e.engine("dir", nil)
		rep, err := restarted.Flush(e.ctx)
		if err != nil || len(rep.Errors) > 0 {
			t.Fatalf("k=%d: restart: %v %+v", k, err, rep.Errors)
		}
		e.sync(restarted)
		t.Run(fmt.Sprintf("crash after write %d", k), func(t *testing.T) {
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
		if !didCrash {
			if k < 6 {
				t.Fatalf("only %d mutating calls: the scenario did not exercise every action", k-1)
			}
			return
		}
	}
}
