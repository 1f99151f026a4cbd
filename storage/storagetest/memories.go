package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// withoutContent returns a copy of m as a basic view returns it.
func withoutContent(m trove.Memory) trove.Memory {
	m.Content = nil
	return m
}

// ---- memories ----

// testMemoryPointRead: Driver.MemoryGet returns what Tx.MemoryGet does,
// with and without content, and the same ENOTFOUND for a memory of another
// store, an unknown ID and a deleted memory; a cancelled context fails it.
func testMemoryPointRead(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	m, _ := insertMemory(t, d, s.ID, "/notes/todo.md", "line1\r\n\u00e9", secs(1))
	gone, _ := insertMemory(t, d, s.ID, "/gone.md", "x", secs(2))
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, gone.ID) })

	got, err := d.MemoryGet(ctx, s.ID, m.ID, true)
	if err != nil {
		t.Fatalf("MemoryGet: %v", err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("MemoryGet full (-want +got):\n%s", diff)
	}
	got, err = d.MemoryGet(ctx, s.ID, m.ID, false)
	if err != nil {
		t.Fatalf("MemoryGet basic: %v", err)
	}
	if diff := cmp.Diff(withoutContent(*m), *got); diff != "" {
		t.Errorf("MemoryGet basic (-want +got):\n%s", diff)
	}
	for _, c := range []struct{ what, store, id string }{
		{"from another store", other.ID, m.ID},
		{"unknown", s.ID, "mem_missing"},
		{"deleted", s.ID, gone.ID},
	} {
		got, err := d.MemoryGet(ctx, c.store, c.id, true)
		wantCode(t, "MemoryGet "+c.what, err, trove.ENOTFOUND)
		if got != nil {
			t.Errorf("MemoryGet %s = %+v, want nil", c.what, got)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.MemoryGet(cctx, s.ID, m.ID, true); err == nil {
		t.Error("MemoryGet with a cancelled context succeeded")
	}
}

func testMemoryCRUD(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	// Content is kept byte for byte: CRLF, a BOM, trailing blanks, non-ASCII.
	tricky := "line1\r\nline2\n\ufeffBOM\t trailing  \n\u00e9 e\u0301 \U0001F600\r"
	m1, _ := insertMemory(t, d, s.ID, "/notes/todo.md", tricky, secs(1))
	m2, _ := insertMemory(t, d, s.ID, "/empty", "", secs(2))

	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, m := range []*trove.Memory{m1, m2} {
			got, err := tx.MemoryGet(ctx, s.ID, m.ID, true)
			if err != nil {
				t.Fatalf("MemoryGet %s: %v", m.Path, err)
			}
			if diff := cmp.Diff(m, got); diff != "" {
				t.Errorf("MemoryGet full (-want +got):\n%s", diff)
			}
			got, err = tx.MemoryGet(ctx, s.ID, m.ID, false)
			if err != nil {
				t.Fatalf("MemoryGet basic %s: %v", m.Path, err)
			}
			if diff := cmp.Diff(withoutContent(*m), *got); diff != "" {
				t.Errorf("MemoryGet basic (-want +got):\n%s", diff)
			}
			got, err = tx.MemoryGetByPath(ctx, s.ID, m.Path, true)
			if err != nil {
				t.Fatalf("MemoryGetByPath %s: %v", m.Path, err)
			}
			if diff := cmp.Diff(m, got); diff != "" {
				t.Errorf("MemoryGetByPath (-want +got):\n%s", diff)
			}
			got, err = tx.MemoryGetByPath(ctx, s.ID, m.Path, false)
			if err != nil || got.Content != nil {
				t.Errorf("MemoryGetByPath basic: content %v, err %v; want nil content", got, err)
			}
		}
		_, err := tx.MemoryGet(ctx, other.ID, m1.ID, true)
		wantCode(t, "MemoryGet from another store", err, trove.ENOTFOUND)
		_, err = tx.MemoryGet(ctx, s.ID, "mem_missing", true)
		wantCode(t, "MemoryGet unknown", err, trove.ENOTFOUND)
		_, err = tx.MemoryGetByPath(ctx, other.ID, m1.Path, false)
		wantCode(t, "MemoryGetByPath in another store", err, trove.ENOTFOUND)
		_, err = tx.MemoryGetByPath(ctx, s.ID, "/notes", false)
		wantCode(t, "MemoryGetByPath of a directory", err, trove.ENOTFOUND)
		_, err = tx.MemoryGetByPath(ctx, s.ID, "/Notes/todo.md", false)
		wantCode(t, "MemoryGetByPath is case-sensitive", err, trove.ENOTFOUND)
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 2 {
			t.Errorf("MemoryCount = %d, %v; want 2", n, err)
		}
		if n, err := tx.MemoryCount(ctx, other.ID); err != nil || n != 0 {
			t.Errorf("MemoryCount other store = %d, %v; want 0", n, err)
		}
		return nil
	})

	// A second memory at a used path is EPATHCONFLICT; the same path in
	// another store is fine.
	dup, _ := newMemory(s.ID, m1.Path, "dup", secs(3))
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, dup) })
	wantCode(t, "MemoryInsert at a used path", err, trove.EPATHCONFLICT)
	elsewhere, _ := newMemory(other.ID, m1.Path, "elsewhere", secs(3))
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryInsert(ctx, elsewhere) })
	// MemoryCount counts exactly what is live: not the refused duplicate,
	// not an insert whose Write failed, and 0 for an unknown store.
	rolledBack, _ := newMemory(s.ID, "/rolled/back.md", "x", secs(3))
	errFn := errors.New("fn failed")
	if err := d.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryInsert(ctx, rolledBack); err != nil {
			return err
		}
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 3 {
			t.Errorf("MemoryCount inside the inserting Write = %d, %v; want 3", n, err)
		}
		return errFn
	}); !errors.Is(err, errFn) {
		t.Errorf("Write = %v, want the fn's error", err)
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []struct {
			store string
			want  int
		}{{s.ID, 2}, {other.ID, 1}, {"memstore_unknown", 0}} {
			if n, err := tx.MemoryCount(ctx, c.store); err != nil || n != c.want {
				t.Errorf("MemoryCount(%s) after a refused and a rolled-back insert = %d, %v; want %d", c.store, n, err, c.want)
			}
		}
		return nil
	})

	// MemoryUpdate replaces path, content, size, sha, version and updated_at.
	upd := *m1
	upd.Path, upd.Content = "/notes/done.md", strPtr("done")
	upd.SizeBytes, upd.SHA256 = 4, sha("done")
	upd.VersionID, upd.UpdatedAt = trove.NewID(trove.PrefixVersion, secs(4)), secs(4)
	upd.CreatedAt = secs(50) // must not be written
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryUpdate(ctx, &upd) })
	want := upd
	want.CreatedAt = m1.CreatedAt
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.MemoryGet(ctx, s.ID, m1.ID, true)
		if err != nil {
			t.Fatalf("MemoryGet after update: %v", err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("after MemoryUpdate (-want +got):\n%s", diff)
		}
		_, err = tx.MemoryGetByPath(ctx, s.ID, m1.Path, false)
		wantCode(t, "MemoryGetByPath of the old path", err, trove.ENOTFOUND)
		if _, err := tx.MemoryGetByPath(ctx, s.ID, upd.Path, false); err != nil {
			t.Errorf("MemoryGetByPath of the new path: %v", err)
		}
		return nil
	})

	// Renaming onto another memory's path is EPATHCONFLICT and changes nothing.
	clash := want
	clash.Path, clash.UpdatedAt = m2.Path, secs(5)
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryUpdate(ctx, &clash) })
	wantCode(t, "MemoryUpdate onto a used path", err, trove.EPATHCONFLICT)
	missing := want
	missing.ID = "mem_missing"
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryUpdate(ctx, &missing) })
	wantCode(t, "MemoryUpdate unknown", err, trove.ENOTFOUND)
	wrongStore := want
	wrongStore.StoreID = other.ID
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryUpdate(ctx, &wrongStore) })
	wantCode(t, "MemoryUpdate in another store", err, trove.ENOTFOUND)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.MemoryGet(ctx, s.ID, m1.ID, true)
		if err != nil {
			t.Fatalf("MemoryGet: %v", err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("after failed updates (-want +got):\n%s", diff)
		}
		return nil
	})

	// MemoryDelete removes the live memory, keeps its versions and frees the
	// path.
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryDelete(ctx, other.ID, m2.ID) })
	wantCode(t, "MemoryDelete in another store", err, trove.ENOTFOUND)
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, m2.ID) })
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, m2.ID) })
	wantCode(t, "MemoryDelete twice", err, trove.ENOTFOUND)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.MemoryGet(ctx, s.ID, m2.ID, false)
		wantCode(t, "MemoryGet deleted", err, trove.ENOTFOUND)
		if _, err := tx.VersionGet(ctx, s.ID, m2.VersionID, false); err != nil {
			t.Errorf("VersionGet of a deleted memory's version: %v", err)
		}
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 1 {
			t.Errorf("MemoryCount after delete = %d, %v; want 1", n, err)
		}
		return nil
	})
	insertMemory(t, d, s.ID, m2.Path, "reborn", secs(6))
}

func testFindOverlap(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	byPath := map[string]*trove.Memory{}
	for i, p := range []string{"/a/b", "/ab", "/a0", "/a.b", "/x/y/z", "/é/ü"} {
		m, _ := insertMemory(t, d, s.ID, p, p, secs(i))
		byPath[p] = m
	}
	insertMemory(t, d, other.ID, "/q", "other store", secs(9))
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []struct {
			path, exclude string
			want          []string // acceptable answers; none means nil
		}{
			{path: "/a/b", want: []string{"/a/b"}},                      // same path
			{path: "/a", want: []string{"/a/b"}},                        // descendant
			{path: "/a/b/c", want: []string{"/a/b"}},                    // ancestor
			{path: "/a/b/c/d/e", want: []string{"/a/b"}},                // distant ancestor
			{path: "/ab/c", want: []string{"/ab"}},                      // ancestor, not /a
			{path: "/x", want: []string{"/x/y/z"}},                      // distant descendant
			{path: "/x/y", want: []string{"/x/y/z"}},                    // descendant
			{path: "/x/y/z/w", want: []string{"/x/y/z"}},                // ancestor
			{path: "/é", want: []string{"/é/ü"}},                        // non-ASCII descendant
			{path: "/a/bc"},                                             // /a/b is no ancestor of /a/bc
			{path: "/a/b0"},                                             // nor of /a/b0
			{path: "/a-"},                                               // '-' sorts before '/'
			{path: "/x/yy"},                                             // sibling with a longer name
			{path: "/x/y0"},                                             // '0' is '/'+1
			{path: "/b"},                                                // unrelated
			{path: "/q"},                                                // only in another store
			{path: "/a/b", exclude: "self"},                             // the memory itself is excluded
			{path: "/a/b/c", exclude: "self"},                           // its own old path is excluded
			{path: "/ab", exclude: "/ab"},                               // rename to itself
			{path: "/a", exclude: "/a/b"},                               // only descendant excluded
			{path: "/a.b", exclude: "other", want: []string{"/a.b"}},    // exclusion of another ID
			{path: "/x/y/z", exclude: "/a/b", want: []string{"/x/y/z"}}, // exclusion of an unrelated ID
		} {
			exclude := ""
			switch c.exclude {
			case "":
			case "self":
				exclude = byPath["/a/b"].ID
			case "other":
				exclude = "mem_other"
			default:
				exclude = byPath[c.exclude].ID
			}
			got, err := tx.MemoryFindOverlap(ctx, s.ID, c.path, exclude)
			if err != nil {
				t.Errorf("MemoryFindOverlap(%q, exclude %s): %v", c.path, c.exclude, err)
				continue
			}
			switch {
			case len(c.want) == 0 && got != nil:
				t.Errorf("MemoryFindOverlap(%q, exclude %s) = %q, want none", c.path, c.exclude, got.Path)
			case len(c.want) > 0 && got == nil:
				t.Errorf("MemoryFindOverlap(%q, exclude %s) = none, want %q", c.path, c.exclude, c.want)
			case len(c.want) > 0 && !slices.Contains(c.want, got.Path):
				t.Errorf("MemoryFindOverlap(%q, exclude %s) = %q, want %q", c.path, c.exclude, got.Path, c.want)
			case got != nil && got.ID != byPath[got.Path].ID:
				t.Errorf("MemoryFindOverlap(%q) returned ID %s for %q, want %s", c.path, got.ID, got.Path, byPath[got.Path].ID)
			}
		}
		return nil
	})
}

func testMemoryList(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	// Bytes around '/' ('-', '.', '0'), case, and multi-byte characters,
	// which sort after every ASCII byte bytewise (not in a locale order).
	paths := []string{
		"/a/x", "/a/y/z", "/a0", "/a.b", "/a-c", "/ab/c", "/a/é", "/a/\U0001F600", "/a/\U0001F601",
		"/a/\uFFFD", "/B", "/b", "/~", "/a/x y", "/a/X", "/a/x.md", "/Z/a",
	}
	contents := map[string]string{}
	mems := map[string]trove.Memory{}
	for i, p := range paths {
		content := fmt.Sprintf("content of %s", p)
		m, _ := insertMemory(t, d, s.ID, p, content, secs(i))
		contents[p] = content
		mems[p] = *m
	}
	insertMemory(t, d, other.ID, "/a/x", "other store", secs(1))
	sorted := slices.Clone(paths)
	slices.Sort(sorted) // bytewise
	match := func(prefix, from string) []string {
		out := []string{}
		for _, p := range sorted {
			if strings.HasPrefix(p, prefix) && p >= from {
				out = append(out, p)
			}
		}
		return out
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		list := func(p storage.MemoryListParams) []trove.Memory {
			t.Helper()
			p.StoreID = s.ID
			got, err := tx.MemoryList(ctx, p)
			if err != nil {
				t.Fatalf("MemoryList(%+v): %v", p, err)
			}
			return got
		}
		pathsOf := func(ms []trove.Memory) []string {
			out := []string{}
			for _, m := range ms {
				out = append(out, m.Path)
			}
			return out
		}
		for _, c := range []struct {
			prefix, from string
			limit        int
		}{
			{},
			{prefix: "/a/"},
			{prefix: "/a"},
			{prefix: "/a/x"},
			{prefix: "/a/y/"},
			{prefix: "/a/\U0001F600"},
			{prefix: "/a/\u00e9"},
			{prefix: "/B"},
			{prefix: "/zz/"},
			{prefix: "/~"},
			{from: "/a0"},
			{from: "/a/x y"},
			{prefix: "/a/", from: "/a/x"},
			{prefix: "/a/", from: "/a/x.md"},
			{prefix: "/a/", from: "/a"},
			{prefix: "/a/", from: "/b"},
			{prefix: "/a/", limit: 3},
			{prefix: "/a/", from: "/a/y", limit: 2},
			{limit: 1},
		} {
			want := match(c.prefix, c.from)
			if c.limit > 0 && len(want) > c.limit {
				want = want[:c.limit]
			}
			got := list(storage.MemoryListParams{Prefix: c.prefix, From: c.from, Limit: c.limit})
			if diff := cmp.Diff(want, pathsOf(got)); diff != "" {
				t.Errorf("MemoryList(prefix %q, from %q, limit %d) (-want +got):\n%s", c.prefix, c.from, c.limit, diff)
			}
		}
		// Items are whole memories; content only when asked for.
		full := list(storage.MemoryListParams{Prefix: "/a/", WithContent: true})
		basic := list(storage.MemoryListParams{Prefix: "/a/"})
		for i := range full {
			want := mems[full[i].Path]
			if diff := cmp.Diff(want, full[i]); diff != "" {
				t.Errorf("MemoryList with content, %s (-want +got):\n%s", want.Path, diff)
			}
			if diff := cmp.Diff(withoutContent(want), basic[i]); diff != "" {
				t.Errorf("MemoryList basic, %s (-want +got):\n%s", want.Path, diff)
			}
		}
		// Paging with From = the first path of the next page (fetched as one
		// extra item) yields everything once.
		var paged []string
		from := ""
		for range len(paths) + 1 {
			page := list(storage.MemoryListParams{From: from, Limit: 5})
			if len(page) < 5 {
				paged = append(paged, pathsOf(page)...)
				break
			}
			paged = append(paged, pathsOf(page[:4])...)
			from = page[4].Path
		}
		if diff := cmp.Diff(sorted, paged); diff != "" {
			t.Errorf("MemoryList paged (-want +got):\n%s", diff)
		}
		return nil
	})
}
