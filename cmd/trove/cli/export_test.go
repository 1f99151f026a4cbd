package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/archive"
	"github.com/trovehq/trove/httpapi"
)

// servedKey starts `trove serve` on a fresh data directory and returns it
// with its first key.
func servedKey(t *testing.T) (*server, string) {
	t.Helper()
	data := t.TempDir()
	s := startServe(t, "--data", data)
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(b))
}

// storeFiles returns path → content of a store's live memories.
func storeFiles(t *testing.T, svc trove.Services, storeID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := archive.Services(svc, storeID).EachMemory(context.Background(), func(m *trove.Memory) error {
		out[m.Path] = *m.Content
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExportImportCLI exports a store from one `trove serve` and imports it
// into a second, by name, with the archive checked, re-imported (a no-op),
// exported again through the official SDK (--from), and imported into an
// existing store that differs.
func TestExportImportCLI(t *testing.T) {
	s1, key1 := servedKey(t)
	s2, key2 := servedKey(t)
	ctx := context.Background()
	c1, c2 := httpapi.NewClient(s1.url, key1), httpapi.NewClient(s2.url, key2)
	st, err := c1.CreateStore(ctx, trove.CreateStoreParams{Name: "Team Notes", Description: "d", Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/todo.md": "- tea\n", "/a/b/c.md": "deep", "/a/x.md": "x"}
	var first *trove.Memory
	for p, c := range want {
		m, err := c1.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c})
		if err != nil {
			t.Fatal(err)
		}
		if p == "/todo.md" {
			first = m
		}
	}
	newer := "- coffee\n"
	want["/todo.md"] = newer
	if _, err := c1.UpdateMemory(ctx, st.ID, first.ID, trove.UpdateMemoryParams{Content: &newer}); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.RedactVersion(ctx, st.ID, first.VersionID); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.tar.gz")

	t.Setenv("TROVE_API_KEY", key1)
	code, out, errOut := runTrove(t, "export", "Team Notes", "--url", s1.url, "-o", file)
	if code != 0 || !strings.Contains(errOut, `exported store "Team Notes"`) || !strings.Contains(errOut, "3 memories, 4 versions (1 redacted)") {
		t.Fatalf("export = %d\nstdout:%s\nstderr:%s", code, out, errOut)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("archive: %v %v", fi, err)
	}
	m, err := archive.ReadManifest(file)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	if m.Source != s1.url || strings.Contains(string(raw), key1) {
		t.Errorf("manifest source = %q (and the key must not be in the archive)", m.Source)
	}
	// Unknown store: not found (exit 3), an error naming the stores, no file.
	code, _, errOut = runTrove(t, "export", "nope", "--url", s1.url, "-o", filepath.Join(dir, "nope.tar.gz"))
	if code != 3 || !strings.Contains(errOut, `no store named "nope"`) {
		t.Errorf("export of an unknown store = %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.tar.gz")); err == nil {
		t.Errorf("a failed export left a file")
	}

	t.Setenv("TROVE_API_KEY", key2)
	code, out, errOut = runTrove(t, "import", file, "--url", s2.url)
	if code != 0 || !strings.Contains(out, `created store "Team Notes"`) || !strings.Contains(out, "3 memories written, 0 already there") {
		t.Fatalf("import = %d\nstdout:%s\nstderr:%s", code, out, errOut)
	}
	stores, err := c2.ListStores(ctx, trove.ListStoresParams{})
	if err != nil || len(stores.Data) != 1 {
		t.Fatalf("stores on the second server: %v %v", stores, err)
	}
	imported := stores.Data[0]
	if diff := cmp.Diff(want, storeFiles(t, c2, imported.ID)); diff != "" {
		t.Errorf("imported memories (-want +got):\n%s", diff)
	}
	if imported.Description != "d" || !cmp.Equal(imported.Metadata, map[string]string{"k": "v"}) {
		t.Errorf("imported store = %+v", imported)
	}
	// Again: nothing written, the same store.
	code, out, _ = runTrove(t, "import", file, "--url", s2.url, "-o", "json")
	if code != 0 || !strings.Contains(out, `"store_id": "`+imported.ID+`"`) || !strings.Contains(out, `"written": []`) || !strings.Contains(out, `"resumed": true`) {
		t.Errorf("second import = %d:\n%s", code, out)
	}

	// --from: the same store through the official SDK.
	t.Setenv("TROVE_API_KEY", "")
	fromFile := filepath.Join(dir, "from.tar.gz")
	code, out, errOut = runTrove(t, "export", "Team Notes", "--from", s1.url, "--api-key", key1, "-o", fromFile)
	if code != 0 {
		t.Fatalf("export --from = %d\nstdout:%s\nstderr:%s", code, out, errOut)
	}
	viaSDK, err := archive.ReadManifest(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, viaSDK, cmpopts.IgnoreFields(archive.Manifest{}, "ExportID", "ExportedAt")); diff != "" {
		t.Errorf("manifest via --from (-services +sdk):\n%s", diff)
	}
	code, _, errOut = runTrove(t, "export", "Team Notes", "--from", s1.url, "-o", fromFile)
	if code != 2 || !strings.Contains(errOut, "needs an API key") {
		t.Errorf("export --from without a key = %d: %s", code, errOut)
	}

	// Into an existing store that differs: reported, exit 1, not overwritten.
	t.Setenv("TROVE_API_KEY", key2)
	mine, err := c2.CreateStore(ctx, trove.CreateStoreParams{Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CreateMemory(ctx, mine.ID, trove.CreateMemoryParams{Path: "/todo.md", Content: "mine"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runTrove(t, "import", file, "--url", s2.url, "--store", "mine")
	if code != 1 || !strings.Contains(out, "not imported: /todo.md differs") || !strings.Contains(errOut, "1 memory of the archive differs from the store and was left as it is") {
		t.Errorf("import into a differing store = %d\nstdout:%s\nstderr:%s", code, out, errOut)
	}
	if got := storeFiles(t, c2, mine.ID); got["/todo.md"] != "mine" || len(got) != 3 {
		t.Errorf("store after import = %v", got)
	}

	// A file that is not an archive.
	junk := filepath.Join(dir, "junk.tar.gz")
	os.WriteFile(junk, []byte("junk"), 0o644)
	code, _, errOut = runTrove(t, "import", junk, "--url", s2.url)
	if code != 1 || !strings.Contains(errOut, "is not a gzip-compressed trove archive") {
		t.Errorf("import of junk = %d: %s", code, errOut)
	}
}
