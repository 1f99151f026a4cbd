package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// TestGetMemoryKnownStore: GetMemory's fast path for a store already seen
// (no store read) answers exactly as the full check: another workspace
// still gets ENOTFOUND for the store, a deleted store's memory is ENOTFOUND
// naming the store, a missing memory of a live store names the memory.
func TestGetMemoryKnownStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := core.New(db, core.Options{})
	as := func(ws string) context.Context {
		_, secret, err := svc.CreateKey(ctx, ws, "k")
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		return trove.WithPrincipal(ctx, p)
	}
	mine, theirs := as("wrkspc_a"), as("wrkspc_b")
	st, err := svc.CreateStore(mine, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.CreateMemory(mine, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, ctx context.Context, storeID, memID string, wantCode string, wantIn ...string) {
		t.Helper()
		got, err := svc.GetMemory(ctx, storeID, memID, "")
		if wantCode == "" {
			if err != nil || got.ID != memID || got.Content == nil || *got.Content != "hello" {
				t.Errorf("%s: %+v, %v; want the memory with its content", what, got, err)
			}
			return
		}
		if trove.ErrorCode(err) != wantCode {
			t.Errorf("%s: %v, want %s", what, err, wantCode)
		}
		for _, w := range wantIn {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to mention %q", what, err, w)
			}
		}
	}
	for range 2 { // cold, then with the store known
		check("own memory", mine, st.ID, m.ID, "")
		check("other workspace", theirs, st.ID, m.ID, trove.ENOTFOUND, "memory store")
		check("missing memory", mine, st.ID, "mem_nope", trove.ENOTFOUND, "mem_nope")
	}
	if err := svc.DeleteStore(mine, st.ID); err != nil {
		t.Fatal(err)
	}
	check("deleted store", mine, st.ID, m.ID, trove.ENOTFOUND, "memory store", st.ID)
}
