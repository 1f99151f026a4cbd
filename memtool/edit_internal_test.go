package memtool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gatedFS counts WriteFile calls and holds the first one until gate is
// closed, having said so on entered.
type gatedFS struct {
	FS
	writes  atomic.Int32
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedFS) WriteFile(ctx context.Context, name string, data []byte, ifMatch Version) (Version, error) {
	if g.writes.Add(1) == 1 {
		close(g.entered)
		<-g.gate
	}
	return g.FS.WriteFile(ctx, name, data, ifMatch)
}

// gatedTool returns a Tool over a gatedFS of a new directory holding f.md
// with content, and the directory.
func gatedTool(t *testing.T, content string, combine bool) (*Tool, *gatedFS, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.md"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := NewDirFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	g := &gatedFS{FS: d, entered: make(chan struct{}), gate: make(chan struct{})}
	return New(g, Options{CombineEdits: combine}), g, dir
}

// TestCombineEdits: with Options.CombineEdits, the edits of one file that
// queue while its first edit is being written are written together, once,
// each applied to what the ones before it left and answered on its own;
// without it, each applied edit is a write of its own. An edit withdrawn
// (its call cancelled) while it waits is not applied.
func TestCombineEdits(t *testing.T) {
	const start = "s0\ns1\ns2\ns3\ndup\n"
	call := func(cmd string, kv ...any) []byte {
		m := map[string]any{"command": cmd, "path": "/memories/f.md"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	// The first call is written alone while the others queue behind it.
	first := call("str_replace", "old_str", "s0", "new_str", "S0")
	rest := [][]byte{
		call("str_replace", "old_str", "s1", "new_str", "S1"),
		call("str_replace", "old_str", "absent", "new_str", "x"),
		call("str_replace", "old_str", "dup", "new_str", "once"),
		call("str_replace", "old_str", "dup", "new_str", "twice"), // the one before took it
		call("insert", "insert_line", 0, "insert_text", "top"),
		call("str_replace", "old_str", "s3", "new_str", "S3"),
	}
	wantErr := []bool{false, true, false, true, false, false}
	const want = "top\nS0\nS1\ns2\nS3\nonce\n"
	for _, tc := range []struct {
		name       string
		combine    bool
		wantWrites int32
	}{
		{"combined", true, 2},
		{"one write per edit", false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, g, dir := gatedTool(t, start, tc.combine)
			ctx := context.Background()
			var wg sync.WaitGroup
			var r0 Result
			wg.Go(func() { r0 = tool.Execute(ctx, first) })
			<-g.entered
			res := make([]Result, len(rest))
			for i, in := range rest {
				wg.Go(func() { res[i] = tool.Execute(ctx, in) })
				// Each in its turn: wait until it waits for the lock.
				for tool.locks.waitingCount() != i+1 {
					runtime.Gosched()
				}
			}
			close(g.gate)
			wg.Wait()
			if r0.IsError {
				t.Errorf("first edit: %s", r0.Text())
			}
			for i, r := range res {
				if r.IsError != wantErr[i] {
					t.Errorf("edit %d (%s): error %v, want %v: %s", i, rest[i], r.IsError, wantErr[i], r.Text())
				}
			}
			if got := res[3].Text(); !strings.Contains(got, "did not appear verbatim") {
				t.Errorf("the second replacement of the same text: %q", got)
			}
			if got := res[0].Text(); !strings.Contains(got, "2\tS1") {
				t.Errorf("the snippet of an edit shows the file as it left it: %q", got)
			}
			b, err := os.ReadFile(filepath.Join(dir, "f.md"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, string(b)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if n := g.writes.Load(); n != tc.wantWrites {
				t.Errorf("%d writes, want %d", n, tc.wantWrites)
			}
		})
	}

	t.Run("withdrawn while waiting", func(t *testing.T) {
		t.Parallel()
		tool, g, dir := gatedTool(t, start, true)
		var wg sync.WaitGroup
		wg.Go(func() { tool.Execute(context.Background(), first) })
		<-g.entered
		cctx, cancel := context.WithCancel(context.Background())
		var r Result
		wg.Go(func() { r = tool.Execute(cctx, rest[0]) })
		for tool.locks.waitingCount() != 1 {
			runtime.Gosched()
		}
		cancel()
		for tool.locks.waitingCount() != 0 {
			runtime.Gosched()
		}
		close(g.gate)
		wg.Wait()
		if !r.IsError || !strings.Contains(r.Text(), "cancelled") {
			t.Errorf("cancelled edit: %s", r.Text())
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "f.md")); string(b) != strings.Replace(start, "s0", "S0", 1) {
			t.Errorf("content %q: the withdrawn edit was applied", b)
		}
		if n := len(tool.edits.pending); n != 0 {
			t.Errorf("%d files left with waiting edits", n)
		}
	})
}

// waitingCount is how many lock requests wait.
func (l *lockTable) waitingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}
