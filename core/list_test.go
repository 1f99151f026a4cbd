package core_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// referenceList is the obvious implementation of a depth-limited listing:
// every memory below prefix, sorted, with paths deeper than depth levels
// (depth 1; 0 folds nothing) replaced by their folded prefix, consecutive
// duplicates removed.
func referenceList(paths []string, prefix string, depth int) []string {
	base := prefix
	if base == "" {
		base = "/"
	}
	var out []string
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	for _, p := range sorted {
		if !strings.HasPrefix(p, base) {
			continue
		}
		segs := strings.Split(p[len(base):], "/")
		item := p
		if depth > 0 && len(segs) > depth {
			item = "prefix:" + base + strings.Join(segs[:depth], "/") + "/"
		}
		if len(out) > 0 && out[len(out)-1] == item {
			continue
		}
		out = append(out, item)
	}
	return out
}

// TestListMemoriesMatchesReference pages random trees with random prefixes,
// depths (0 or 1, the only valid ones) and limits and compares the concatenated pages with
// referenceList.
func TestListMemoriesMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "a-b", "a.md", "b0", "c", "z"}
	for round := range 20 {
		svc := core.New(newMemDriver(), core.Options{})
		ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_t", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_t"}})
		st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for range 40 {
			n := 1 + rng.IntN(4)
			segs := make([]string, n)
			for i := range segs {
				segs[i] = names[rng.IntN(len(names))]
			}
			p := "/" + strings.Join(segs, "/")
			if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p}); err == nil {
				paths = append(paths, p)
			} else if trove.ErrorCode(err) != trove.EPATHCONFLICT {
				t.Fatal(err)
			}
		}
		prefixes := []string{"", "/"}
		for _, p := range paths {
			for i := 1; i < len(p); i++ {
				if p[i] == '/' {
					prefixes = append(prefixes, p[:i+1])
				}
			}
		}
		for range 30 {
			prefix := prefixes[rng.IntN(len(prefixes))]
			depth := rng.IntN(2)
			limit := 1 + rng.IntN(5)
			want := referenceList(paths, prefix, depth)
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatal("too many pages")
				}
				pg, err := svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{PathPrefix: prefix, Depth: depth, Limit: limit, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if len(pg.Data) > limit || (pg.NextPage != "" && len(pg.Data) < limit) {
					t.Fatalf("page of %d items with limit %d, next %q", len(pg.Data), limit, pg.NextPage)
				}
				for _, it := range pg.Data {
					if it.Prefix != nil {
						got = append(got, "prefix:"+it.Prefix.Path)
					} else {
						got = append(got, it.Memory.Path)
					}
				}
				if pg.NextPage == "" {
					break
				}
				cursor = pg.NextPage
			}
			if want == nil {
				want = []string{}
			}
			if got == nil {
				got = []string{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d, prefix %q depth %d limit %d, paths %v (-want +got):\n%s", round, prefix, depth, limit, paths, diff)
			}
		}
	}
}

// TestListMemoriesDepth checks that depth 0 and 1 are the only valid
// depths: any other is EINVALID naming the rule, before the store is read.
func TestListMemoriesDepth(t *testing.T) {
	t.Parallel()
	svc := core.New(newMemDriver(), core.Options{})
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_t", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_t"}})
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a/b/c"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		depth int
		want  []string // nil: EINVALID
	}{
		{0, []string{"/a/b/c"}},
		{1, []string{"prefix:/a/"}},
		{2, nil},
		{3, nil},
		{-1, nil},
		{1 << 40, nil},
		{-1 << 40, nil},
	}
	for _, tt := range tests {
		for _, storeID := range []string{st.ID, "memstore_missing"} {
			pg, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Depth: tt.depth})
			if tt.want == nil {
				if trove.ErrorCode(err) != trove.EINVALID || !strings.Contains(err.Error(), "depth must be 0 or 1") {
					t.Fatalf("depth %d, store %s: got %v, want EINVALID \"depth must be 0 or 1\"", tt.depth, storeID, err)
				}
				continue
			}
			if storeID != st.ID {
				if trove.ErrorCode(err) != trove.ENOTFOUND {
					t.Fatalf("depth %d, unknown store: got %v, want ENOTFOUND", tt.depth, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("depth %d: %v", tt.depth, err)
			}
			var got []string
			for _, it := range pg.Data {
				if it.Prefix != nil {
					got = append(got, "prefix:"+it.Prefix.Path)
				} else {
					got = append(got, it.Memory.Path)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("depth %d (-want +got):\n%s", tt.depth, diff)
			}
		}
	}
}

// FuzzListCursor checks that any cursor string gives a page or EINVALID,
// never a panic or another error.
func FuzzListCursor(f *testing.F) {
	svc := core.New(newMemDriver(), core.Options{})
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_t", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_t"}})
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{"/a", "/b/c", "/d"} {
		if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p}); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "t"}); err != nil {
		f.Fatal(err)
	}
	pm, _ := svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{Limit: 1})
	ps, _ := svc.ListStores(ctx, trove.ListStoresParams{Limit: 1})
	for _, seed := range []string{pm.NextPage, ps.NextPage, "", "page_", "page_e30", "page_%%%", fmt.Sprintf("page_%s", strings.Repeat("A", 5000))} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		_, err := svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{Cursor: cursor, Depth: 1})
		if c := trove.ErrorCode(err); c != "" && c != trove.EINVALID {
			t.Fatalf("ListMemories(cursor %q): %v", cursor, err)
		}
		_, err = svc.ListStores(ctx, trove.ListStoresParams{Cursor: cursor})
		if c := trove.ErrorCode(err); c != "" && c != trove.EINVALID {
			t.Fatalf("ListStores(cursor %q): %v", cursor, err)
		}
		_, err = svc.ListVersions(ctx, st.ID, trove.ListVersionsParams{Cursor: cursor})
		if c := trove.ErrorCode(err); c != "" && c != trove.EINVALID {
			t.Fatalf("ListVersions(cursor %q): %v", cursor, err)
		}
	})
}
