package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/apply"
	"github.com/trovehq/trove/httpapi"
)

// TestApplyCLI applies a YAML file to a real `trove serve`: the dry run
// writes nothing, the second apply is a no-op, and a memory changed in
// between is reported (exit 1), not overwritten.
func TestApplyCLI(t *testing.T) {
	s, key := servedKey(t)
	t.Setenv("TROVE_API_KEY", key)
	c := httpapi.NewClient(s.url, key)
	ctx := context.Background()
	dir := t.TempDir()
	spec := filepath.Join(dir, "stores.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`stores:
  - name: Agent Memory
    description: seeded
    memories:
      - path: /README.md
        content: "hello\n"
      - path: /rules.md
        content: "be kind\n"
`)
	code, out, errOut := runTrove(t, "apply", "-f", spec, "--url", s.url, "--dry-run")
	if code != 0 || !strings.Contains(out, `+ store "Agent Memory"`) || !strings.Contains(out, "+ Agent Memory /README.md") ||
		!strings.Contains(out, "plan: 3 to create, 0 to update, 0 unchanged, 0 to leave as they are (dry run: nothing written)") {
		t.Fatalf("dry run = %d\nstdout:\n%s\nstderr:%s", code, out, errOut)
	}
	if page, _ := c.ListStores(ctx, trove.ListStoresParams{}); len(page.Data) != 0 {
		t.Fatalf("the dry run created %d stores", len(page.Data))
	}
	if _, err := os.Stat(apply.StateFor(spec)); err == nil {
		t.Errorf("the dry run wrote the state file")
	}

	code, out, errOut = runTrove(t, "apply", "-f", spec, "--url", s.url)
	if code != 0 || !strings.Contains(out, "applied: 3 created, 0 updated, 0 unchanged, 0 left as they are") {
		t.Fatalf("apply = %d\nstdout:\n%s\nstderr:%s", code, out, errOut)
	}
	code, out, _ = runTrove(t, "apply", "-f", spec, "--url", s.url)
	if code != 0 || !strings.Contains(out, "applied: 0 created, 0 updated, 3 unchanged, 0 left as they are") {
		t.Fatalf("second apply = %d\nstdout:\n%s", code, out)
	}

	// Someone edits /rules.md; the spec changes both memories.
	page, err := c.ListStores(ctx, trove.ListStoresParams{})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("stores: %v %v", page, err)
	}
	storeID := page.Data[0].ID
	mems, err := c.ListMemories(ctx, storeID, trove.ListMemoriesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range mems.Data {
		if it.Memory.Path == "/rules.md" {
			mine := "be kind, and brief\n"
			if _, err := c.UpdateMemory(ctx, storeID, it.Memory.ID, trove.UpdateMemoryParams{Content: &mine}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(strings.ReplaceAll(strings.ReplaceAll(
		func() string { b, _ := os.ReadFile(spec); return string(b) }(),
		`"hello\n"`, `"hello again\n"`), `"be kind\n"`, `"be kinder\n"`))
	code, out, errOut = runTrove(t, "apply", "-f", spec, "--url", s.url, "-o", "json")
	if code != 1 || !strings.Contains(errOut, "1 memory differs from what apply last wrote and was left as it is") {
		t.Fatalf("apply after an edit = %d\nstdout:\n%s\nstderr:%s", code, out, errOut)
	}
	var res apply.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	kinds := map[string]apply.Kind{}
	for _, a := range res.Actions {
		kinds[a.Path] = a.Kind
	}
	if kinds["/README.md"] != apply.Update || kinds["/rules.md"] != apply.Kept || kinds[""] != apply.Unchanged {
		t.Errorf("actions = %+v", res.Actions)
	}
	files := storeFiles(t, c, storeID)
	if files["/README.md"] != "hello again\n" || files["/rules.md"] != "be kind, and brief\n" {
		t.Errorf("store after apply = %q", files)
	}

	// Usage and input errors.
	if code, _, errOut := runTrove(t, "apply", "--url", s.url); code != 2 || !strings.Contains(errOut, "-f stores.yaml is required") {
		t.Errorf("apply without -f = %d: %s", code, errOut)
	}
	write("stores:\n  - name: x\n    colour: red\n")
	if code, _, errOut := runTrove(t, "apply", "-f", spec, "--url", s.url); code != 1 || !strings.Contains(errOut, "colour") {
		t.Errorf("apply with an unknown field = %d: %s", code, errOut)
	}
}
