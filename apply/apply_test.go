package apply_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/apply"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// newClient serves core over SQLite on loopback and returns a client.
func newClient(t *testing.T) *httpapi.Client {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	svc := core.New(db, core.Options{})
	_, key, err := svc.CreateKey(ctx, "wrkspc_test", "test")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
	t.Cleanup(func() {
		hs.Close()
		db.Close()
	})
	return httpapi.NewClient(hs.URL, key)
}

// writeSpec writes a spec and the files it names to a temp dir.
func writeSpec(t *testing.T, dir, yaml string, files map[string]string) string {
	t.Helper()
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "stores.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const specV1 = `
stores:
  - name: Team Notes
    description: What the team learned
    metadata: {team: core}
    memories:
      - path: /README.md
        content: |
          # Team notes
      - path: /style.md
        file: style.md
      - path: /prefs/editor.md
        content: "vim"
  - name: Empty
`

// short is an action without the IDs and details, for comparison.
type short struct {
	Kind        apply.Kind
	Store, Path string
}

func shorten(r *apply.Result) []short {
	out := make([]short, len(r.Actions))
	for i, a := range r.Actions {
		out[i] = short{a.Kind, a.Store, a.Path}
	}
	return out
}

func run(t *testing.T, c trove.Services, specPath string, st *apply.State, dry bool) *apply.Result {
	t.Helper()
	spec, err := apply.Load(specPath)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	res, err := apply.Apply(context.Background(), c, spec, apply.Options{Target: "t", State: st, DryRun: dry})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func versionCount(t *testing.T, c trove.Services, storeID string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		page, err := c.ListVersions(context.Background(), storeID, trove.ListVersionsParams{Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Data)
		if page.NextPage == "" {
			return n
		}
		cursor = page.NextPage
	}
}

func TestApplyTwiceIsNoOp(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	spec := writeSpec(t, t.TempDir(), specV1, map[string]string{"style.md": "tabs, not spaces\n"})
	st := &apply.State{Targets: map[string]map[string]map[string]string{}}

	// A dry run plans everything and writes nothing.
	plan := run(t, c, spec, st, true)
	want := []short{
		{apply.CreateStore, "Team Notes", ""},
		{apply.Create, "Team Notes", "/README.md"},
		{apply.Create, "Team Notes", "/style.md"},
		{apply.Create, "Team Notes", "/prefs/editor.md"},
		{apply.CreateStore, "Empty", ""},
	}
	if diff := cmp.Diff(want, shorten(plan)); diff != "" {
		t.Errorf("dry-run plan (-want +got):\n%s", diff)
	}
	if page, _ := c.ListStores(ctx, trove.ListStoresParams{}); len(page.Data) != 0 || len(st.Targets) != 0 {
		t.Fatalf("a dry run wrote: %d stores, state %v", len(page.Data), st.Targets)
	}

	first := run(t, c, spec, st, false)
	if diff := cmp.Diff(want, shorten(first)); diff != "" {
		t.Errorf("first apply (-want +got):\n%s", diff)
	}
	storeID := first.Actions[0].StoreID
	s, err := c.GetStore(ctx, storeID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Description != "What the team learned" || !cmp.Equal(s.Metadata, map[string]string{"team": "core"}) {
		t.Errorf("created store = %+v", s)
	}
	versions := versionCount(t, c, storeID)

	// Through a saved and reloaded state, as the CLI does.
	statePath := filepath.Join(t.TempDir(), "state.json")
	if err := st.Save(statePath); err != nil {
		t.Fatal(err)
	}
	st2, err := apply.LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	second := run(t, c, spec, st2, false)
	for _, a := range second.Actions {
		if a.Kind != apply.Unchanged {
			t.Errorf("second apply: %+v, want unchanged", a)
		}
	}
	if len(second.Actions) != 5 {
		t.Errorf("second apply has %d actions, want 5", len(second.Actions))
	}
	if n := versionCount(t, c, storeID); n != versions {
		t.Errorf("second apply wrote %d versions", n-versions)
	}
	if page, _ := c.ListStores(ctx, trove.ListStoresParams{}); len(page.Data) != 2 {
		t.Errorf("%d stores after two applies, want 2", len(page.Data))
	}
}

func TestApplyKeepsChangedMemories(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	dir := t.TempDir()
	spec := writeSpec(t, dir, specV1, map[string]string{"style.md": "tabs\n"})
	st := &apply.State{Targets: map[string]map[string]map[string]string{}}
	first := run(t, c, spec, st, false)
	storeID := first.Actions[0].StoreID
	mems := map[string]trove.Memory{}
	page, err := c.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Data {
		mems[it.Memory.Path] = *it.Memory
	}
	// Someone edits README.md and deletes prefs/editor.md; someone else
	// created /notes.md before it was declared.
	edited := "# Team notes, edited by hand\n"
	if _, err := c.UpdateMemory(ctx, storeID, mems["/README.md"].ID, trove.UpdateMemoryParams{Content: &edited}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteMemory(ctx, storeID, mems["/prefs/editor.md"].ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: "/notes.md", Content: "theirs"}); err != nil {
		t.Fatal(err)
	}
	// The spec changes every memory and declares /notes.md and a new one.
	v2 := strings.NewReplacer(
		"# Team notes", "# Team notes v2",
		`content: "vim"`, `content: "emacs"`,
		"description: What the team learned", "description: v2",
		"{team: core}", "{team: core, tier: gold}",
	).Replace(specV1) + `
  - name: Team Notes 2
`
	v2 = strings.Replace(v2, "        file: style.md\n", "        file: style.md\n      - path: /notes.md\n        content: mine\n      - path: /new.md\n        content: new\n", 1)
	spec = writeSpec(t, dir, v2, map[string]string{"style.md": "spaces\n"})

	dry := run(t, c, spec, st, true)
	got := run(t, c, spec, st, false)
	want := []short{
		{apply.UpdateStore, "Team Notes", ""},
		{apply.Kept, "Team Notes", "/README.md"},
		{apply.Update, "Team Notes", "/style.md"},
		{apply.Kept, "Team Notes", "/notes.md"},
		{apply.Create, "Team Notes", "/new.md"},
		{apply.Kept, "Team Notes", "/prefs/editor.md"},
		{apply.Unchanged, "Empty", ""},
		{apply.CreateStore, "Team Notes 2", ""},
	}
	if diff := cmp.Diff(want, shorten(got)); diff != "" {
		t.Errorf("apply after changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(shorten(dry), shorten(got)); diff != "" {
		t.Errorf("the dry run planned otherwise (-dry +applied):\n%s", diff)
	}
	details := map[string]string{}
	for _, a := range got.Actions {
		details[a.Path] = a.Detail
	}
	for p, w := range map[string]string{
		"/README.md":       "changed since last applied",
		"/notes.md":        "apply did not write",
		"/prefs/editor.md": "deleted since last applied",
	} {
		if !strings.Contains(details[p], w) {
			t.Errorf("%s: detail %q, want it to say %q", p, details[p], w)
		}
	}
	files := map[string]string{}
	page, err = c.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 20, View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Data {
		files[it.Memory.Path] = *it.Memory.Content
	}
	wantFiles := map[string]string{"/README.md": edited, "/style.md": "spaces\n", "/notes.md": "theirs", "/new.md": "new"}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("store after apply (-want +got):\n%s", diff)
	}
	s, err := c.GetStore(ctx, storeID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Description != "v2" || !cmp.Equal(s.Metadata, map[string]string{"team": "core", "tier": "gold"}) {
		t.Errorf("store after apply = %q %v", s.Description, s.Metadata)
	}
	// Reported again on the next run, still not overwritten.
	again := run(t, c, spec, st, false)
	if n := again.Count(apply.Kept); n != 3 {
		t.Errorf("third apply keeps %d memories, want 3: %+v", n, again.Actions)
	}
	if n := again.Count(apply.Update) + again.Count(apply.Create) + again.Count(apply.CreateStore) + again.Count(apply.UpdateStore); n != 0 {
		t.Errorf("third apply wrote %d things: %+v", n, again.Actions)
	}
}

func TestApplyLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "stores:\n  - name: a\n    colour: red\n", "colour"},
		{"no stores", "stores: []\n", "declares no stores"},
		{"no name", "stores:\n  - description: x\n", "has no name"},
		{"twice", "stores:\n  - name: a\n  - name: a\n", "declared twice"},
		{"both", "stores:\n  - name: a\n    memories:\n      - {path: /x.md, content: a, file: f}\n", "exactly one of content and file"},
		{"neither", "stores:\n  - name: a\n    memories:\n      - {path: /x.md}\n", "exactly one of content and file"},
		{"bad path", "stores:\n  - name: a\n    memories:\n      - {path: x.md, content: a}\n", "path must start with '/'"},
		{"dup path", "stores:\n  - name: a\n    memories:\n      - {path: /x.md, content: a}\n      - {path: /x.md, content: b}\n", "declared twice"},
		{"missing file", "stores:\n  - name: a\n    memories:\n      - {path: /x.md, file: nope.md}\n", "nope.md"},
		{"not yaml", "stores: [\n", "stores.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := apply.Load(writeSpec(t, t.TempDir(), tt.yaml, nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestApplyStateFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := apply.LoadState(filepath.Join(dir, "missing.json"))
	if err != nil || len(st.Targets) != 0 {
		t.Fatalf("missing state = %v, %v", st, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	if _, err := apply.LoadState(bad); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged state: %v", err)
	}
	st.Targets["t"] = map[string]map[string]string{"memstore_1": {"/a.md": "h"}}
	p := filepath.Join(dir, "s.json")
	if err := st.Save(p); err != nil {
		t.Fatal(err)
	}
	back, err := apply.LoadState(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, back, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("state round trip (-saved +loaded):\n%s", diff)
	}
}

// racingWriter is the real services with another writer changing a memory
// just before apply's update of it reaches the server.
type racingWriter struct {
	trove.Services
	theirs string
}

func (r *racingWriter) UpdateMemory(ctx context.Context, storeID, memoryID string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	if _, err := r.Services.UpdateMemory(ctx, storeID, memoryID, trove.UpdateMemoryParams{Content: &r.theirs}); err != nil {
		return nil, err
	}
	return r.Services.UpdateMemory(ctx, storeID, memoryID, p)
}

// TestApplyLosesRaceToAnotherWriter: the update carries the applied hash as
// a precondition, so a write that lands between apply's read and its update
// wins and is reported.
func TestApplyLosesRaceToAnotherWriter(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	dir := t.TempDir()
	spec := writeSpec(t, dir, "stores:\n  - name: s\n    memories:\n      - {path: /a.md, content: one}\n", nil)
	st := &apply.State{Targets: map[string]map[string]map[string]string{}}
	first := run(t, c, spec, st, false)
	spec = writeSpec(t, dir, "stores:\n  - name: s\n    memories:\n      - {path: /a.md, content: two}\n", nil)
	got := run(t, &racingWriter{Services: c, theirs: "theirs"}, spec, st, false)
	a := got.Actions[1]
	if a.Kind != apply.Kept || !strings.Contains(a.Detail, "another writer") {
		t.Errorf("action = %+v, want kept: changed by another writer", a)
	}
	page, err := c.ListMemories(context.Background(), first.Actions[0].StoreID, trove.ListMemoriesParams{View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || *page.Data[0].Memory.Content != "theirs" {
		t.Errorf("store holds %+v, want the other writer's content", page.Data)
	}
	// The record still names what apply wrote: the next run reports it too.
	again := run(t, c, spec, st, false)
	if again.Actions[1].Kind != apply.Kept || !strings.Contains(again.Actions[1].Detail, "changed since last applied") {
		t.Errorf("next run: %+v", again.Actions[1])
	}
}
