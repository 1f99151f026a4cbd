package archive_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/archive"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// server is a real Trove server on loopback over SQLite in a temp dir.
type server struct {
	url, key string
	svc      *core.Service
	client   *httpapi.Client
}

func newServer(t *testing.T) *server {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	svc := core.New(db, core.Options{})
	_, secret, err := svc.CreateKey(ctx, "wrkspc_test", "test")
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	hs := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
	t.Cleanup(func() {
		hs.Close()
		db.Close()
	})
	return &server{url: hs.URL, key: secret, svc: svc, client: httpapi.NewClient(hs.URL, secret)}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// seed fills a store with nested memories, a modified one, a deleted one
// and a redacted version, and returns the store and the redacted version's
// ID.
func seed(t *testing.T, svc trove.Services) (*trove.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{
		Name: "Project notes", Description: "what we learned", Metadata: map[string]string{"team": "core", "env": "prod"},
	})
	if err != nil {
		t.Fatalf("CreateStore: %v", err)
	}
	files := map[string]string{
		"/README.md":                  "# notes\n",
		"/notes/2026/décembre.md":     "naïve café ☕\n",
		"/notes/deep/a/b/c/leaf.txt":  "leaf",
		"/prefs.md":                   "first draft with a secret",
		"/gone.md":                    "to be deleted",
		"/empty.md":                   "",
		"/with space/and-dash_x.json": `{"k": [1, 2]}`,
	}
	ids := map[string]string{}
	for p, c := range files {
		m, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c})
		if err != nil {
			t.Fatalf("CreateMemory %s: %v", p, err)
		}
		ids[p] = m.ID
	}
	first, err := svc.GetMemory(ctx, st.ID, ids["/prefs.md"], trove.ViewBasic)
	if err != nil {
		t.Fatal(err)
	}
	newContent := "second draft, no secret"
	if _, err := svc.UpdateMemory(ctx, st.ID, ids["/prefs.md"], trove.UpdateMemoryParams{Content: &newContent}); err != nil {
		t.Fatalf("UpdateMemory: %v", err)
	}
	if _, err := svc.RedactVersion(ctx, st.ID, first.VersionID); err != nil {
		t.Fatalf("RedactVersion: %v", err)
	}
	if err := svc.DeleteMemory(ctx, st.ID, ids["/gone.md"], ""); err != nil {
		t.Fatalf("DeleteMemory: %v", err)
	}
	return st, first.VersionID
}

// contents returns path → content of every live memory of a store.
func contents(t *testing.T, svc trove.Services, storeID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := archive.Services(svc, storeID).EachMemory(context.Background(), func(m *trove.Memory) error {
		if m.SHA256 != sha(*m.Content) {
			t.Errorf("%s: sha256 %s does not match its content", m.Path, m.SHA256)
		}
		out[m.Path] = *m.Content
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", storeID, err)
	}
	return out
}

func exportTo(t *testing.T, src archive.Source) (string, *archive.Manifest) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := archive.Export(context.Background(), src, f, archive.ExportOptions{Source: "test"})
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, m
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := newServer(t), newServer(t)
	ctx := context.Background()
	st, redacted := seed(t, a.client)
	path, exported := exportTo(t, archive.Services(a.client, st.ID))

	m, err := archive.ReadManifest(path)
	if err != nil {
		t.Fatalf("ReadManifest: %v", err)
	}
	if diff := cmp.Diff(exported, m); diff != "" {
		t.Errorf("manifest read back (-exported +read):\n%s", diff)
	}
	// The history: every version of the source, oldest first, the redacted
	// one without path or hash.
	var want []archive.Version
	page, err := a.client.ListVersions(ctx, st.ID, trove.ListVersionsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(page.Data) - 1; i >= 0; i-- {
		v := page.Data[i]
		av := archive.Version{ID: v.ID, MemoryID: v.MemoryID, Operation: string(v.Operation), CreatedAt: v.CreatedAt,
			CreatedBy: &archive.Actor{Type: string(v.CreatedBy.Type), APIKeyID: v.CreatedBy.APIKeyID}}
		if v.RedactedAt != nil {
			av.Redacted, av.RedactedAt = true, v.RedactedAt
			av.RedactedBy = &archive.Actor{Type: string(v.RedactedBy.Type), APIKeyID: v.RedactedBy.APIKeyID}
		} else {
			av.Path, av.ContentSHA256, av.SizeBytes = v.Path, v.SHA256, v.SizeBytes
		}
		want = append(want, av)
	}
	if diff := cmp.Diff(want, m.Versions, cmpopts.EquateApproxTime(time.Microsecond)); diff != "" {
		t.Errorf("manifest versions (-want +got):\n%s", diff)
	}
	if len(m.Versions) != 9 { // 7 created, 1 modified, 1 deleted; a redaction adds none
		t.Errorf("%d versions in the manifest, want 9", len(m.Versions))
	}
	var sawRedacted bool
	for _, v := range m.Versions {
		if v.ID == redacted {
			sawRedacted = true
			if !v.Redacted || v.Path != nil || v.ContentSHA256 != nil || v.SizeBytes != nil {
				t.Errorf("redacted version in the manifest = %+v, want redacted without path/hash/size", v)
			}
		}
	}
	if !sawRedacted {
		t.Errorf("redacted version %s missing from the manifest", redacted)
	}

	rep, err := archive.Import(ctx, b.client, path, archive.ImportOptions{JournalPath: archive.JournalFor(path), Target: b.url})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if !rep.Created || rep.Resumed || len(rep.Written) != 6 || len(rep.Present) != 0 || len(rep.Conflicts) != 0 {
		t.Errorf("report = created %v resumed %v written %v present %v conflicts %v", rep.Created, rep.Resumed, rep.Written, rep.Present, rep.Conflicts)
	}
	if diff := cmp.Diff(contents(t, a.client, st.ID), contents(t, b.client, rep.StoreID)); diff != "" {
		t.Errorf("imported memories (-source +imported):\n%s", diff)
	}
	got, err := b.client.GetStore(ctx, rep.StoreID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != st.Name || got.Description != st.Description || !cmp.Equal(got.Metadata, st.Metadata) {
		t.Errorf("imported store = %q %q %v, want %q %q %v (no import tag left)", got.Name, got.Description, got.Metadata, st.Name, st.Description, st.Metadata)
	}
	// Hashes and paths of the manifest match the imported store.
	for _, mem := range m.Memories {
		if c, ok := contents(t, b.client, rep.StoreID)[mem.Path]; !ok || sha(c) != mem.ContentSHA256 {
			t.Errorf("imported %s: present %v, hash %s, want %s", mem.Path, ok, sha(c), mem.ContentSHA256)
		}
	}

	// Importing again is a no-op: the journal names the store.
	rep2, err := archive.Import(ctx, b.client, path, archive.ImportOptions{JournalPath: archive.JournalFor(path), Target: b.url})
	if err != nil {
		t.Fatalf("second Import: %v", err)
	}
	if rep2.StoreID != rep.StoreID || !rep2.Resumed || len(rep2.Written) != 0 || len(rep2.Present) != 6 {
		t.Errorf("second import = store %s resumed %v written %v present %v; want the same store, nothing written", rep2.StoreID, rep2.Resumed, rep2.Written, rep2.Present)
	}
}

// failingCreates is the real services with CreateMemory failing after n
// successful creates as when the target stops answering: an import killed
// halfway (a kill undoes nothing; a re-run completes it).
type failingCreates struct {
	trove.Services
	n atomic.Int32
}

var errKilled error = &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached"}

func (f *failingCreates) CreateMemory(ctx context.Context, storeID string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	if f.n.Add(-1) < 0 {
		return nil, errKilled
	}
	return f.Services.CreateMemory(ctx, storeID, p)
}

func TestImportResumesAfterKill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		after   int32
		journal bool // false: the store is found by its tag
	}{
		{"journal, halfway", 3, true},
		{"journal, before any memory", 0, true},
		{"tag, halfway", 2, false},
		{"tag, before any memory", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := newServer(t), newServer(t)
			ctx := context.Background()
			st, _ := seed(t, a.client)
			path, _ := exportTo(t, archive.Services(a.client, st.ID))
			opts := archive.ImportOptions{Target: b.url}
			if tt.journal {
				opts.JournalPath = archive.JournalFor(path)
			}
			f := &failingCreates{Services: b.client}
			f.n.Store(tt.after)
			if _, err := archive.Import(ctx, f, path, opts); !errors.Is(err, errKilled) {
				t.Fatalf("first Import = %v, want the injected failure", err)
			}
			rep, err := archive.Import(ctx, b.client, path, opts)
			if err != nil {
				t.Fatalf("re-run: %v", err)
			}
			if !rep.Resumed || len(rep.Present) != int(tt.after) || len(rep.Written) != 6-int(tt.after) {
				t.Errorf("re-run: resumed %v, present %d, written %d; want resumed, %d present, %d written", rep.Resumed, len(rep.Present), len(rep.Written), tt.after, 6-tt.after)
			}
			stores, err := b.client.ListStores(ctx, trove.ListStoresParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(stores.Data) != 1 || stores.Data[0].ID != rep.StoreID {
				t.Fatalf("target has %d stores, want only %s", len(stores.Data), rep.StoreID)
			}
			if _, tagged := stores.Data[0].Metadata[archive.TagKey]; tagged {
				t.Errorf("the import tag is still on the store: %v", stores.Data[0].Metadata)
			}
			if diff := cmp.Diff(contents(t, a.client, st.ID), contents(t, b.client, rep.StoreID)); diff != "" {
				t.Errorf("imported memories (-source +imported):\n%s", diff)
			}
			// One version per memory: nothing was written twice.
			vs, err := b.client.ListVersions(ctx, rep.StoreID, trove.ListVersionsParams{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(vs.Data) != 6 {
				t.Errorf("target has %d versions, want 6 (one create each)", len(vs.Data))
			}
		})
	}
}

func TestImportIntoExistingStoreReportsConflicts(t *testing.T) {
	t.Parallel()
	a, b := newServer(t), newServer(t)
	ctx := context.Background()
	st, _ := seed(t, a.client)
	path, _ := exportTo(t, archive.Services(a.client, st.ID))

	dst, err := b.client.CreateStore(ctx, trove.CreateStoreParams{Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"/README.md": "# notes\n", "/prefs.md": "my own prefs", "/notes/deep": "a file where a dir is"} {
		if _, err := b.client.CreateMemory(ctx, dst.ID, trove.CreateMemoryParams{Path: p, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := archive.Import(ctx, b.client, path, archive.ImportOptions{StoreID: dst.ID})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	want := []archive.Conflict{
		{Path: "/notes/deep/a/b/c/leaf.txt", ArchiveSHA256: sha("leaf"), ConflictingPath: "/notes/deep"},
		{Path: "/prefs.md", ArchiveSHA256: sha("second draft, no secret"), StoreSHA256: sha("my own prefs")},
	}
	if diff := cmp.Diff(want, rep.Conflicts, cmpopts.SortSlices(func(x, y archive.Conflict) bool { return x.Path < y.Path })); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/README.md"}, rep.Present); diff != "" {
		t.Errorf("present (-want +got):\n%s", diff)
	}
	got := contents(t, b.client, dst.ID)
	if got["/prefs.md"] != "my own prefs" || got["/notes/deep"] != "a file where a dir is" {
		t.Errorf("a differing memory was overwritten: %q", got)
	}
	if len(got) != 3+3 {
		t.Errorf("target holds %d memories, want 6: %v", len(got), got)
	}
	if rep.Created {
		t.Errorf("report says a store was created")
	}
}

// TestImportKeepsSourceTagKey imports a store whose own metadata has the
// key the import uses as its tag: the key and its value survive.
func TestImportKeepsSourceTagKey(t *testing.T) {
	t.Parallel()
	a, b := newServer(t), newServer(t)
	ctx := context.Background()
	md := map[string]string{archive.TagKey: "the user's own value"}
	st, err := a.client.CreateStore(ctx, trove.CreateStoreParams{Name: "s", Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := exportTo(t, archive.Services(a.client, st.ID))
	rep, err := archive.Import(ctx, b.client, path, archive.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.client.GetStore(ctx, rep.StoreID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(md, got.Metadata); diff != "" {
		t.Errorf("imported metadata (-want +got):\n%s", diff)
	}
}

func TestImportRefusesDamagedArchive(t *testing.T) {
	t.Parallel()
	a, b := newServer(t), newServer(t)
	ctx := context.Background()
	st, err := a.client.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/x.md", Content: "original"}); err != nil {
		t.Fatal(err)
	}
	path, m := exportTo(t, archive.Services(a.client, st.ID))
	// Rewrite the archive with a changed file under the same manifest.
	m.Memories[0].ContentSHA256 = sha("tampered")
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	writeRaw(t, bad, m, map[string]string{"memories/x.md": "original"})
	for _, p := range []string{bad, filepath.Join(t.TempDir(), "missing.tar.gz"), path + ".nope"} {
		if _, err := archive.Import(ctx, b.client, p, archive.ImportOptions{}); err == nil {
			t.Errorf("Import(%s) succeeded, want an error", p)
		}
	}
	notGzip := filepath.Join(t.TempDir(), "plain.txt")
	os.WriteFile(notGzip, []byte("hello"), 0o644)
	if _, err := archive.Import(ctx, b.client, notGzip, archive.ImportOptions{}); err == nil {
		t.Errorf("Import of a text file succeeded")
	}
	stores, err := b.client.ListStores(ctx, trove.ListStoresParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stores.Data) != 0 {
		t.Errorf("a refused archive created %d stores", len(stores.Data))
	}
}

// TestExportFromSDK exports through the official SDK from a second Trove
// server standing in for the hosted API: the manifest equals the one read
// through trove.Services.
func TestExportFromSDK(t *testing.T) {
	t.Parallel()
	a := newServer(t)
	st, _ := seed(t, a.client)
	c := anthropic.NewClient(option.WithBaseURL(a.url), option.WithAPIKey(a.key))
	_, viaSDK := exportTo(t, archive.SDK(&c, st.ID))
	_, viaTrove := exportTo(t, archive.Services(a.client, st.ID))
	ignore := cmpopts.IgnoreFields(archive.Manifest{}, "ExportID", "ExportedAt")
	if diff := cmp.Diff(viaTrove, viaSDK, ignore, cmpopts.EquateApproxTime(time.Microsecond)); diff != "" {
		t.Errorf("manifest via SDK (-trove +sdk):\n%s", diff)
	}
	if len(viaSDK.Memories) != 6 {
		t.Errorf("%d memories via the SDK, want 6", len(viaSDK.Memories))
	}
	// A wrong key is an error, not an empty archive.
	bad := anthropic.NewClient(option.WithBaseURL(a.url), option.WithAPIKey("nope"), option.WithMaxRetries(0))
	if _, err := archive.Export(context.Background(), archive.SDK(&bad, st.ID), new(discard), archive.ExportOptions{}); err == nil {
		t.Errorf("export with a bad key succeeded")
	}
}

// writeRaw writes an archive with files then m, as Export lays it out.
func writeRaw(t *testing.T, path string, m *archive.Manifest, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	add := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range files {
		add(name, []byte(c))
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	add(archive.ManifestName, raw)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }
