package archive_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/archive"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

// newLimitedServer is newServer with the given limits (as trove serve
// --max-memories sets them).
func newLimitedServer(t *testing.T, lim trove.Limits) *server {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	svc := core.New(db, core.Options{Limits: lim})
	_, secret, err := svc.CreateKey(ctx, "wrkspc_test", "test")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
	t.Cleanup(func() {
		hs.Close()
		db.Close()
	})
	return &server{url: hs.URL, key: secret, svc: svc, client: httpapi.NewClient(hs.URL, secret)}
}

// rawArchive writes an archive of the given path → content, in order, with
// a manifest that agrees with them, and returns its path.
func rawArchive(t *testing.T, mems [][2]string) string {
	t.Helper()
	m := &archive.Manifest{Format: archive.Format, FormatVersion: archive.FormatVersion, ExportID: "export_test", Store: archive.Store{Name: "imported"}}
	files := map[string]string{}
	for _, pc := range mems {
		m.Memories = append(m.Memories, archive.Memory{Path: pc[0], File: archive.FileName(pc[0]), ContentSHA256: sha(pc[1]), SizeBytes: len(pc[1])})
		files[archive.FileName(pc[0])] = pc[1]
	}
	p := filepath.Join(t.TempDir(), "a.tar.gz")
	writeRaw(t, p, m, files)
	return p
}

func numbered(n int) [][2]string {
	var out [][2]string
	for i := range n {
		out = append(out, [2]string{fmt.Sprintf("/m%02d.md", i), "memory " + fmt.Sprint(i)})
	}
	return out
}

// TestImportAllOrNothing: archives the target cannot take whole create
// nothing at all — refused before the first write when the check can tell,
// undone when only the target can (a server's --max-memories) — and never
// advise a re-run that cannot succeed.
func TestImportAllOrNothing(t *testing.T) {
	t.Parallel()
	deep := "/" + strings.Repeat("d/", 20) + "x.md" // 21 segments
	long := "/" + strings.Repeat("a", 1100) + ".md" // 1,105 bytes
	tests := []struct {
		name   string
		mems   [][2]string
		server trove.Limits // the target server's limits
		opts   trove.Limits // ImportOptions.Limits
		want   string       // in the error
	}{
		{"150 kB last memory", append(numbered(5), [2]string{"/z.md", strings.Repeat("x", 150_000)}), trove.Limits{}, trove.Limits{}, "the limit is 102400 bytes"},
		{"21-segment path", append(numbered(5), [2]string{deep, "x"}), trove.Limits{}, trove.Limits{}, "segments"},
		{"1,105-byte path", append(numbered(5), [2]string{long, "x"}), trove.Limits{}, trove.Limits{}, "bytes"},
		{"25 memories, server --max-memories 20", numbered(25), trove.Limits{MaxMemoriesPerStore: 20}, trove.Limits{}, "limit of 20 memories"},
		{"25 memories, limits known", numbered(25), trove.Limits{MaxMemoriesPerStore: 20}, trove.Limits{MaxMemoriesPerStore: 20}, "a store holds at most 20"},
		{"latin-1 content", append(numbered(5), [2]string{"/z.md", "caf\xe9"}), trove.Limits{}, trove.Limits{}, "content must be valid UTF-8 text"},
		{"random bytes", append(numbered(5), [2]string{"/z.md", "\xff\xfe\x00\x81abc\xc3"}), trove.Limits{}, trove.Limits{}, "content must be valid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newLimitedServer(t, tt.server)
			ctx := context.Background()
			path := rawArchive(t, tt.mems)
			opts := archive.ImportOptions{JournalPath: archive.JournalFor(path), Target: b.url, Limits: tt.opts}
			rep, err := archive.Import(ctx, b.client, path, opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import = %v, want an error containing %q", err, tt.want)
			}
			if rep != nil && rep.Resumable {
				t.Errorf("the report says a re-run would resume: %+v", rep)
			}
			stores, err := b.client.ListStores(ctx, trove.ListStoresParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(stores.Data) != 0 {
				t.Errorf("a refused import left %d stores", len(stores.Data))
			}
			// A re-run meets the same refusal, and still creates nothing.
			if _, err := archive.Import(ctx, b.client, path, opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("re-run = %v, want the same refusal", err)
			}
			if raw, err := os.ReadFile(opts.JournalPath); err == nil && strings.Contains(string(raw), "memstore_") {
				t.Errorf("the journal still names a store: %s", raw)
			}
		})
	}
}

// TestImportRollsBackIntoExistingStore: with --store, a refused import
// deletes only the memories it created; what the store held stays.
func TestImportRollsBackIntoExistingStore(t *testing.T) {
	t.Parallel()
	b := newLimitedServer(t, trove.Limits{MaxMemoriesPerStore: 20})
	ctx := context.Background()
	st, err := b.client.CreateStore(ctx, trove.CreateStoreParams{Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/own.md", Content: "mine"}); err != nil {
		t.Fatal(err)
	}
	path := rawArchive(t, numbered(20))
	rep, err := archive.Import(ctx, b.client, path, archive.ImportOptions{StoreID: st.ID})
	if err == nil || !strings.Contains(err.Error(), "nothing was imported") || rep == nil || !rep.RolledBack {
		t.Fatalf("Import = %+v, %v; want a refusal, rolled back", rep, err)
	}
	got := contents(t, b.client, st.ID)
	if len(got) != 1 || got["/own.md"] != "mine" {
		t.Errorf("the store holds %v after the rollback, want only /own.md", got)
	}
}
