package storefs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
)

func in(kv map[string]any) []byte {
	b, err := json.Marshal(kv)
	if err != nil {
		panic(err)
	}
	return b
}

func create(path, text string) []byte {
	return in(map[string]any{"command": "create", "path": path, "file_text": text})
}
func view(path string) []byte { return in(map[string]any{"command": "view", "path": path}) }
func strReplace(path, o, n string) []byte {
	return in(map[string]any{"command": "str_replace", "path": path, "old_str": o, "new_str": n})
}
func insert(path string, line int, text string) []byte {
	return in(map[string]any{"command": "insert", "path": path, "insert_line": line, "insert_text": text})
}
func del(path string) []byte { return in(map[string]any{"command": "delete", "path": path}) }
func rename(o, n string) []byte {
	return in(map[string]any{"command": "rename", "old_path": o, "new_path": n})
}

// newTool returns a tool for the agent acting through svc on storeID.
func newTool(svc trove.Services, storeID string) *memtool.Tool {
	return memtool.New(storefs.New(svc, storeID, storefs.Options{}), memtool.Options{})
}

func mustOK(t *testing.T, ctx context.Context, tool *memtool.Tool, input []byte) string {
	t.Helper()
	r := tool.Execute(ctx, input)
	if r.IsError {
		t.Fatalf("Execute(%s): %s", input, r.String())
	}
	return r.String()
}

// content reads the memory at path straight from the store.
func content(t *testing.T, ctx context.Context, svc trove.Services, storeID, path string) (string, *trove.Memory) {
	t.Helper()
	page, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100, View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Data {
		if it.Memory != nil && it.Memory.Path == path {
			return *it.Memory.Content, it.Memory
		}
	}
	t.Fatalf("no memory at %s", path)
	return "", nil
}

// TestLostRaceReapplied makes another agent's write land between an edit's
// read and its conditional write, and checks that the edit is re-applied on
// the fresh content when it still applies, and refused with a clear message
// when it does not; never a lost update.
func TestLostRaceReapplied(t *testing.T) {
	const f = "/memories/notes.md"
	tests := []struct {
		name      string
		initial   string
		other     []byte // agent B's call, run inside agent A's call
		mine      []byte // agent A's call
		wantErr   string // "" when A's edit must succeed
		wantFinal string
	}{
		{name: "str_replace-still-applies", initial: "a: todo\nb: todo\n",
			other: strReplace(f, "b: todo", "b: done"), mine: strReplace(f, "a: todo", "a: done"),
			wantFinal: "a: done\nb: done\n"},
		{name: "str_replace-no-longer-applies", initial: "a: todo\nb: todo\n",
			other: strReplace(f, "a: todo", "a: taken by B"), mine: strReplace(f, "a: todo", "a: done"),
			wantErr:   "Error: /memories/notes.md was changed by another writer while this str_replace ran, and the edit no longer applies to the new content: No replacement was performed, old_str `a: todo` did not appear verbatim in /memories/notes.md. Nothing was written; view the file again and retry.",
			wantFinal: "a: taken by B\nb: todo\n"},
		{name: "str_replace-now-ambiguous", initial: "a: todo\n",
			other: insert(f, 0, "a: todo"), mine: strReplace(f, "a: todo", "a: done"),
			wantErr:   "Error: /memories/notes.md was changed by another writer while this str_replace ran, and the edit no longer applies to the new content: No replacement was performed. Multiple occurrences of old_str `a: todo` in lines: 1, 2. Please ensure it is unique Nothing was written; view the file again and retry.",
			wantFinal: "a: todo\na: todo\n"},
		{name: "insert-still-in-range", initial: "one\ntwo\n",
			other: insert(f, 0, "zero"), mine: insert(f, 2, "mine"),
			wantFinal: "zero\none\nmine\ntwo\n"},
		{name: "insert-out-of-range", initial: "one\ntwo\nthree",
			other: strReplace(f, "one\ntwo\nthree", "one"), mine: insert(f, 3, "mine"),
			wantErr:   "Error: /memories/notes.md was changed by another writer while this insert ran, and the edit no longer applies to the new content: Error: Invalid `insert_line` parameter: 3. It should be within the range of lines of the file: [0, 1] Nothing was written; view the file again and retry.",
			wantFinal: "one"},
	}
	svc := newCore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctxA, ctxB := agent("apikey_A"), agent("apikey_B")
			storeID := newStore(t, ctxA, svc)
			b := newTool(svc, storeID)
			mustOK(t, ctxB, b, create(f, tt.initial))
			h := &hooked{Services: svc}
			h.hook = func() { mustOK(t, ctxB, b, tt.other) }
			a := newTool(h, storeID)
			r := a.Execute(ctxA, tt.mine)
			if tt.wantErr == "" && r.IsError {
				t.Errorf("A's edit failed: %s", r.String())
			}
			if tt.wantErr != "" {
				if diff := cmp.Diff(tt.wantErr, r.String()); diff != "" || !r.IsError {
					t.Errorf("A's result IsError=%v (-want +got):\n%s", r.IsError, diff)
				}
			}
			if h.hook != nil {
				t.Fatal("the other agent's write never ran: the race was not exercised")
			}
			got, m := content(t, ctxA, svc, storeID, "/notes.md")
			if diff := cmp.Diff(tt.wantFinal, got); diff != "" {
				t.Errorf("final content (-want +got):\n%s", diff)
			}
			// Versions: B created, B edited, then A's edit if it applied.
			vs, err := svc.ListVersions(ctxA, storeID, trove.ListVersionsParams{MemoryID: m.ID, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var who []string
			for i := len(vs.Data) - 1; i >= 0; i-- {
				v := vs.Data[i]
				who = append(who, string(v.Operation)+" by "+v.CreatedBy.APIKeyID)
			}
			want := []string{"created by apikey_B", "modified by apikey_B"}
			if tt.wantErr == "" {
				want = append(want, "modified by apikey_A")
			}
			if diff := cmp.Diff(want, who); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTwoAgentsConcurrent runs two agents, each with its own engine and
// backend instance, editing the same memories at once, over core+SQLite,
// over the HTTP API on loopback, and over core+PostgreSQL
// (pgtest.URL). Every call must either apply (and then be
// visible in the final content: no lost update) or fail with a clear
// message.
func TestTwoAgentsConcurrent(t *testing.T) {
	for _, name := range []string{"core-sqlite", "httpapi-sqlite", "core-postgres"} {
		t.Run(name, func(t *testing.T) {
			svc := newCore(t)
			if name == "core-postgres" {
				svc = newPostgresCore(t)
			}
			ctx := agent("apikey_setup")
			storeID := newStore(t, ctx, svc)
			var backend trove.Services = svc
			if name == "httpapi-sqlite" {
				backend = newRemote(t, svc)
			}
			const files, perAgent = 2, 12
			agents := []string{"A", "B"}
			setup := newTool(backend, storeID)
			for i := range files {
				var lines []string
				for _, a := range agents {
					for k := range perAgent {
						lines = append(lines, fmt.Sprintf("%s-%02d: todo", a, k))
					}
				}
				mustOK(t, ctx, setup, create(fmt.Sprintf("/memories/shared/f%d.md", i), strings.Join(lines, "\n")+"\n"))
			}
			type call struct {
				input []byte
				want  string // text the final content must contain if the call succeeded
			}
			results := make(map[string][]memtool.Result)
			calls := make(map[string][]call)
			for _, a := range agents {
				for i := range files {
					p := fmt.Sprintf("/memories/shared/f%d.md", i)
					for k := range perAgent {
						calls[a] = append(calls[a],
							call{strReplace(p, fmt.Sprintf("%s-%02d: todo", a, k), fmt.Sprintf("%s-%02d: done", a, k)), fmt.Sprintf("%s-%02d: done", a, k)},
							call{insert(p, 0, fmt.Sprintf("note from %s #%d", a, k)), fmt.Sprintf("note from %s #%d\n", a, k)})
					}
				}
				results[a] = make([]memtool.Result, len(calls[a]))
			}
			var wg sync.WaitGroup
			for _, a := range agents {
				tool := newTool(backend, storeID) // own engine + backend instance
				actx := agent("apikey_" + a)
				res := results[a]
				for i, c := range calls[a] {
					wg.Go(func() { res[i] = tool.Execute(actx, c.input) })
				}
			}
			wg.Wait()
			final := map[string]string{}
			for i := range files {
				final[fmt.Sprintf("/memories/shared/f%d.md", i)], _ = content(t, ctx, svc, storeID, fmt.Sprintf("/shared/f%d.md", i))
			}
			okCount, errCount := 0, 0
			for _, a := range agents {
				for _, r := range results[a] {
					if r.IsError {
						errCount++
						if !strings.Contains(r.String(), "view the file again") && !strings.Contains(r.String(), "View the file again") {
							t.Errorf("agent %s: unclear error %q", a, r.String())
						}
						continue
					}
					okCount++
				}
				// Every edit is distinct and still applies after any other
				// edit, so with re-application all of them must succeed and
				// be visible.
				for i, c := range calls[a] {
					var ci struct{ Path string }
					_ = json.Unmarshal(c.input, &ci)
					if results[a][i].IsError {
						if strings.Contains(final[ci.Path], c.want) {
							t.Errorf("agent %s: %s failed but was applied", a, c.input)
						}
						continue
					}
					if !strings.Contains(final[ci.Path], c.want) {
						t.Errorf("agent %s: lost update: %s not in %s", a, strings.TrimSpace(c.want), ci.Path)
					}
				}
			}
			// Every edit here still applies after any race, so with
			// re-application nearly all succeed; an edit may still give up
			// after losing memtool.DefaultEditAttempts races in a row (a clear error,
			// nothing written). Without re-application about half fail.
			if errCount*10 > okCount+errCount {
				t.Errorf("%d of %d calls failed; lost races are not being re-applied", errCount, okCount+errCount)
			}
		})
	}
}

// TestVersionsKeepHistory checks that every tool write is one version with
// the caller's actor, and that renaming a directory renames its memories
// (same IDs, a path-only version) rather than re-creating them.
func TestVersionsKeepHistory(t *testing.T) {
	svc := newCore(t)
	ctx := agent("apikey_writer")
	storeID := newStore(t, ctx, svc)
	tool := newTool(svc, storeID)
	mustOK(t, ctx, tool, create("/memories/proj/a.md", "alpha\n"))
	mustOK(t, ctx, tool, create("/memories/proj/sub/b.md", "beta\n"))
	_, a0 := content(t, ctx, svc, storeID, "/proj/a.md")
	mustOK(t, ctx, tool, strReplace("/memories/proj/a.md", "alpha", "ALPHA"))
	mustOK(t, ctx, tool, rename("/memories/proj", "/memories/archive/proj"))
	got, a1 := content(t, ctx, svc, storeID, "/archive/proj/a.md")
	if got != "ALPHA\n" || a1.ID != a0.ID {
		t.Fatalf("after rename: %q id %s, want ALPHA and id %s", got, a1.ID, a0.ID)
	}
	if _, b := content(t, ctx, svc, storeID, "/archive/proj/sub/b.md"); b == nil {
		t.Fatal("b.md not moved")
	}
	mustOK(t, ctx, tool, del("/memories/archive"))
	vs, err := svc.ListVersions(ctx, storeID, trove.ListVersionsParams{MemoryID: a0.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got2 []string
	for i := len(vs.Data) - 1; i >= 0; i-- {
		v := vs.Data[i]
		p := ""
		if v.Path != nil {
			p = *v.Path
		}
		got2 = append(got2, fmt.Sprintf("%s %s by %s", v.Operation, p, v.CreatedBy.APIKeyID))
	}
	want := []string{
		"created /proj/a.md by apikey_writer",
		"modified /proj/a.md by apikey_writer",
		"modified /archive/proj/a.md by apikey_writer",
		"deleted /archive/proj/a.md by apikey_writer",
	}
	if diff := cmp.Diff(want, got2); diff != "" {
		t.Errorf("versions of a.md (-want +got):\n%s", diff)
	}
	page, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{})
	if err != nil || len(page.Data) != 0 {
		t.Errorf("memories left after deleting the directory: %v, %v", page, err)
	}
}

// TestEmptyDirectories checks that a directory emptied through an instance
// stays visible to that instance only, and goes when a file takes its name.
func TestEmptyDirectories(t *testing.T) {
	svc := newCore(t)
	ctx := agent("apikey_dirs")
	storeID := newStore(t, ctx, svc)
	tool := newTool(svc, storeID)
	other := newTool(svc, storeID)
	mustOK(t, ctx, tool, create("/memories/d/f.md", "x"))
	mustOK(t, ctx, tool, del("/memories/d/f.md"))
	head := "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories"
	if diff := cmp.Diff(head+"\n4.0K\t/memories/d/", mustOK(t, ctx, tool, view("/memories"))); diff != "" {
		t.Errorf("view from the deleting instance (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(head, mustOK(t, ctx, other, view("/memories"))); diff != "" {
		t.Errorf("view from another instance (-want +got):\n%s", diff)
	}
	if r := tool.Execute(ctx, create("/memories/d", "file now")); r.String() != "Error: File /memories/d already exists" {
		t.Errorf("create over the remembered directory: %s", r.String())
	}
	mustOK(t, ctx, other, create("/memories/d", "file now")) // the other agent sees no directory
	if diff := cmp.Diff(head+"\n8B\t/memories/d", mustOK(t, ctx, tool, view("/memories"))); diff != "" {
		t.Errorf("the store's file wins over a remembered directory (-want +got):\n%s", diff)
	}
}

// TestStoreRefusals checks that what the store refuses reaches the model as
// the store's message rather than a generic storage error.
func TestStoreRefusals(t *testing.T) {
	svc := newCore(t)
	ctx := agent("apikey_refused")
	storeID := newStore(t, ctx, svc)
	tool := newTool(svc, storeID)
	mustOK(t, ctx, tool, create("/memories/kept.md", "k"))
	tests := []struct {
		name  string
		setup func()
		input []byte
		want  string
	}{
		{name: "nfd-path", input: create("/memories/cafe\u0301.md", "x"),
			want: "Error: The memory store refused the create of /memories/cafe\u0301.md: path must be in Unicode NFC form. Nothing was written."},
		{name: "view-nfd-path-does-not-exist", input: view("/memories/cafe\u0301.md"),
			want: "The path /memories/cafe\u0301.md does not exist. Please provide a valid path."},
		{name: "archived-store", setup: func() {
			if _, err := svc.ArchiveStore(ctx, storeID); err != nil {
				t.Fatal(err)
			}
		}, input: create("/memories/new.md", "x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			r := tool.Execute(ctx, tt.input)
			if !r.IsError {
				t.Fatalf("Execute(%s) succeeded: %s", tt.input, r.String())
			}
			if tt.want == "" {
				if !strings.HasPrefix(r.String(), "Error: The memory store refused the create of /memories/new.md: ") {
					t.Errorf("got %q, want the store's refusal", r.String())
				}
				return
			}
			if diff := cmp.Diff(tt.want, r.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestMux checks several stores under /memories/<slug>/.
func TestMux(t *testing.T) {
	svc := newCore(t)
	ctx := agent("apikey_mux")
	s1, s2 := newStore(t, ctx, svc), newStore(t, ctx, svc)
	mux := storefs.NewMux(map[string]*storefs.FS{
		"prefs": storefs.New(svc, s1, storefs.Options{}),
		"work":  storefs.New(svc, s2, storefs.Options{}),
	})
	tool := memtool.New(mux, memtool.Options{})
	mustOK(t, ctx, tool, create("/memories/work/todo.md", "ship it"))
	if got, _ := content(t, ctx, svc, s2, "/todo.md"); got != "ship it" {
		t.Errorf("work store holds %q", got)
	}
	tests := []struct {
		input []byte
		want  string
	}{
		{view("/memories"), "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n4.0K\t/memories/prefs/\n4.0K\t/memories/work/\n7B\t/memories/work/todo.md"},
		{create("/memories/top.md", "x"), "Error: The memory store refused the create of /memories/top.md: files can only be written inside a store's directory: /memories/prefs/, /memories/work/. Nothing was written."},
		{rename("/memories/work/todo.md", "/memories/prefs/todo.md"), "Error: The memory store refused the rename of /memories/work/todo.md: memories cannot be moved between stores; create the file in the other store and delete this one."},
		{del("/memories/work"), "Error: The memory store refused the delete of /memories/work: a store's directory cannot be deleted; delete the files inside it instead."},
		{rename("/memories/work/todo.md", "/memories/work/done.md"), "Successfully renamed /memories/work/todo.md to /memories/work/done.md"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tool.Execute(ctx, tt.input).String()); diff != "" {
			t.Errorf("Execute(%s) (-want +got):\n%s", tt.input, diff)
		}
	}
}
