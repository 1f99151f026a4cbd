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
// replaced by their folded prefix, consecutive duplicates removed.
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
// depths and limits and compares the concatenated pages with
// referenceList.
func TestListMemoriesMatchesReference(t *testing.T) {
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
			depth := rng.IntN(4)
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
