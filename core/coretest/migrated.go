package coretest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// LegacyCounters is the migration test of the store-limit counters. The
// rows a driver's migration test writes at the schema before the store-limit counters (SQLite 12, PostgreSQL 13),
// in its own SQL and deliberately out of order, before migrating d and
// calling LegacyCounters:
//
//   - workspace "wrkspc_one": stores memstore_b (inserted first) and
//     memstore_a; workspace "wrkspc_two": memstore_c;
//   - memstore_a: live memories inserted as mem_3 (/z, 3 bytes), mem_1 (/a,
//     10 bytes), mem_2 (/m, 0 bytes); versions inserted in the seq order
//     4, 1, 3, 2, 6, 5 (mem_4 created at 5 and deleted at 6, so 6
//     versions); version_seqs last 6;
//   - memstore_b: no live memory, versions 2 then 1 (created, deleted);
//     version_seqs last 2;
//   - memstore_c: one memory of 5 bytes, its version 1; no version_seqs
//     row (the migration must add it).
//
// LegacyCounters checks the counters a migration computed from those rows,
// then that the service's writes keep them right and the limits use them.
func LegacyCounters(t *testing.T, d storage.Driver) {
	t.Helper()
	ctx := context.Background()
	want := map[string]storage.StoreStats{
		"memstore_a": {MemoryCount: 3, ContentBytes: 13, VersionCount: 6},
		"memstore_b": {MemoryCount: 0, ContentBytes: 0, VersionCount: 2},
		"memstore_c": {MemoryCount: 1, ContentBytes: 5, VersionCount: 1},
	}
	wantWS := map[string]int{"wrkspc_one": 2, "wrkspc_two": 1, "wrkspc_none": 0}
	check := func(what string) {
		t.Helper()
		got := map[string]storage.StoreStats{}
		gotWS := map[string]int{}
		if err := d.Read(ctx, func(tx storage.Tx) error {
			for id := range want {
				st, err := tx.StoreStats(ctx, id)
				if err != nil {
					return err
				}
				got[id] = st
			}
			for ws := range wantWS {
				n, err := tx.WorkspaceStoreCount(ctx, ws)
				if err != nil {
					return err
				}
				gotWS[ws] = n
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: store counters (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff(wantWS, gotWS); diff != "" {
			t.Errorf("%s: workspace store counts (-want +got):\n%s", what, diff)
		}
	}
	check("after migrating")

	svc := core.New(d, core.Options{Limits: trove.Limits{MaxStoresPerWorkspace: 2, MaxStoreBytes: 20, MaxVersionsPerStore: 8}})
	_, secret, err := svc.CreateKey(ctx, "wrkspc_one", "k")
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx = trove.WithPrincipal(ctx, p)
	_, err = svc.CreateStore(ctx, trove.CreateStoreParams{Name: "third"})
	wantCode(t, "CreateStore past the migrated store count", err, trove.EINVALID)
	if _, err := svc.CreateMemory(ctx, "memstore_a", trove.CreateMemoryParams{Path: "/new", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	want["memstore_a"] = storage.StoreStats{MemoryCount: 4, ContentBytes: 18, VersionCount: 7}
	_, err = svc.CreateMemory(ctx, "memstore_a", trove.CreateMemoryParams{Path: "/big", Content: "abc"})
	wantCode(t, "CreateMemory past the migrated byte count", err, trove.EINVALID)
	if err := svc.DeleteStore(ctx, "memstore_b"); err != nil {
		t.Fatal(err)
	}
	delete(want, "memstore_b")
	wantWS["wrkspc_one"] = 1
	check("after writes")
	if _, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "third"}); err != nil {
		t.Fatalf("CreateStore in the place a delete freed: %v", err)
	}
}
