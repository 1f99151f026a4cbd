package archive_test

import (
	"context"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/archive"
)

// TestImportStoreNames: an import creating a store whose name a live store
// already has is refused before anything is written (ECONFLICT) unless
// AllowDuplicateName; Name names the new store; an archived store's name
// is free again.
func TestImportStoreNames(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	st, err := s.client.CreateStore(ctx, trove.CreateStoreParams{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "a"}); err != nil {
		t.Fatal(err)
	}
	path, _ := exportTo(t, archive.Services(s.client, st.ID))
	count := func() int {
		t.Helper()
		page, err := s.client.ListStores(ctx, trove.ListStoresParams{Limit: 100, IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Data)
	}

	for _, c := range []struct {
		name     string
		opts     archive.ImportOptions
		code     string
		wantName string
	}{
		{"the archive's name is taken", archive.ImportOptions{}, trove.ECONFLICT, ""},
		{"--name taken too", archive.ImportOptions{Name: "notes"}, trove.ECONFLICT, ""},
		{"--name free", archive.ImportOptions{Name: "notes-2"}, "", "notes-2"},
		{"--name now taken", archive.ImportOptions{Name: "notes-2"}, trove.ECONFLICT, ""},
		{"duplicate allowed", archive.ImportOptions{AllowDuplicateName: true}, "", "notes"},
	} {
		before := count()
		rep, err := archive.Import(ctx, s.client, path, c.opts)
		if trove.ErrorCode(err) != c.code || trove.IsStoreNameTaken(err) != (c.code != "") {
			t.Fatalf("%s: Import: %v, want code %q", c.name, err, c.code)
		}
		if c.code != "" {
			if n := count(); n != before {
				t.Errorf("%s: refused, but the workspace went from %d to %d stores", c.name, before, n)
			}
			continue
		}
		if rep.Store.Name != c.wantName || !rep.Created {
			t.Errorf("%s: imported into %q (created %v), want a new store %q", c.name, rep.Store.Name, rep.Created, c.wantName)
		}
	}

	// Archived stores do not hold their names.
	page, err := s.client.ListStores(ctx, trove.ListStoresParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range page.Data {
		if st.Name == "notes-2" {
			if _, err := s.client.ArchiveStore(ctx, st.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := archive.Import(ctx, s.client, path, archive.ImportOptions{Name: "notes-2"}); err != nil {
		t.Errorf("import under the name of an archived store: %v", err)
	}
}
