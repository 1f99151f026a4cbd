package memtool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove/memtool"
)

// fuzzTree is the pre-seeded tree every FuzzExecute input runs on.
var fuzzTree = map[string]string{
	"notes.md":       "line one\nline two\nline three\n",
	"dir/a.txt":      "alpha\nbeta\n",
	"dir/sub/b.md":   "deep\n",
	"unicode-é.md":   "héllo wörld\n",
	"empty.txt":      "",
	"dir/dup.txt":    "x\nx\nx\n",
	"dir/sub/c.json": "{\"k\": 1}\n",
}

func seedFS(t testing.TB, ctx context.Context, fsys memtool.FS) {
	t.Helper()
	for name, content := range fuzzTree {
		if _, err := fsys.Stat(ctx, name); err == nil {
			continue
		}
		if _, err := fsys.WriteFile(ctx, name, []byte(content), ""); err != nil {
			t.Fatalf("seeding %s: %v", name, err)
		}
	}
}

// FuzzExecute feeds arbitrary tool inputs to Execute over a fresh MemFS
// holding a small tree, and over one DirFS in a temp dir shared by the whole
// run. Invariants: no panic; an error result has IsError and exactly one
// text block; no result ever contains the DirFS's host path; a successful
// create, str_replace or insert leaves valid UTF-8 within MaxFileSize.
func FuzzExecute(f *testing.F) {
	// The seeds are in testdata/fuzz/FuzzExecute.
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	hostDir := f.TempDir()
	dfs, err := memtool.NewDirFS(hostDir)
	if err != nil {
		f.Fatalf("NewDirFS: %v", err)
	}
	f.Cleanup(func() { dfs.Close() })
	seedFS(f, ctx, dfs)
	dirTool := memtool.New(dfs, memtool.Options{Now: now})

	f.Fuzz(func(t *testing.T, input []byte) {
		mfs := memtool.NewMemFS(now)
		seedFS(t, ctx, mfs)
		memTool := memtool.New(mfs, memtool.Options{Now: now})
		// Put back what earlier inputs deleted from the shared DirFS, where
		// the tree still allows it.
		for name, content := range fuzzTree {
			if _, err := dfs.Stat(ctx, name); err != nil {
				_, _ = dfs.WriteFile(ctx, name, []byte(content), "")
			}
		}
		for _, c := range []struct {
			name string
			tool *memtool.Tool
			fsys memtool.FS
		}{{"MemFS", memTool, mfs}, {"DirFS", dirTool, dfs}} {
			res := c.tool.Execute(ctx, input)
			checkFuzzResult(t, c.name, c.fsys, hostDir, input, res)
		}
	})
}

func checkFuzzResult(t *testing.T, backend string, fsys memtool.FS, hostDir string, input []byte, res memtool.Result) {
	t.Helper()
	for _, b := range res.Content {
		if strings.Contains(b.Text, hostDir) {
			t.Fatalf("%s: %s: result contains the host path %q: %q", backend, input, hostDir, b.Text)
		}
	}
	if res.IsError {
		if len(res.Content) != 1 || res.Content[0].Type != memtool.BlockText || res.Content[0].Text == "" {
			t.Fatalf("%s: %s: error result is not one non-empty text block: %+v", backend, input, res)
		}
		return
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %s: success with %d blocks", backend, input, len(res.Content))
	}
	// Execute reads its input as a map, so keys match exactly and the last
	// duplicate wins; read it the same way.
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		t.Fatalf("%s: %s: success on input that is not a JSON object: %q", backend, input, res.Text())
	}
	var in struct{ Command, Path string }
	_ = json.Unmarshal(m["command"], &in.Command)
	_ = json.Unmarshal(m["path"], &in.Path)
	switch in.Command {
	case "create", "str_replace", "insert":
	default:
		return
	}
	p, err := memtool.ParsePath(in.Path)
	if err != nil {
		t.Fatalf("%s: %s: %s succeeded on an invalid path: %v", backend, input, in.Command, err)
	}
	data, _, err := fsys.ReadFile(context.Background(), p.Rel, -1)
	if err != nil {
		t.Fatalf("%s: %s: reading %s after a successful %s: %v", backend, input, p.Rel, in.Command, err)
	}
	if !utf8.Valid(data) {
		t.Fatalf("%s: %s: %s left invalid UTF-8 in %s: %q", backend, input, in.Command, p.Rel, data)
	}
	if len(data) > memtool.DefaultMaxFileSize {
		t.Fatalf("%s: %s: %s left %d bytes in %s, above the limit", backend, input, in.Command, len(data), p.Rel)
	}
}
