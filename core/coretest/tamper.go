package coretest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Exec runs one SQL statement directly on a driver's database, outside
// Trove, as an attacker with database access would; "?" placeholders.
type Exec func(t *testing.T, d storage.Driver, query string, args ...any)

// Tamper alters version rows directly with exec and checks that
// VerifyStore then fails, naming the version where the chain breaks and
// what differs, while an untouched store beside it still verifies. Each
// driver's tests run it with their own Exec (the SQL is portable).
func Tamper(t *testing.T, open Opener, exec Exec) {
	type fixture struct {
		e     *env
		d     storage.Driver
		store *trove.Store
		v     []*trove.MemoryVersion // the store's versions by seq, 1-based
		other *trove.Store
	}
	setup := func(t *testing.T) *fixture {
		f := &fixture{}
		f.e = newEnv(t, func(t *testing.T) storage.Driver { f.d = open(t); return f.d }, trove.Limits{})
		f.store, f.other = f.e.store(t, "tampered"), f.e.store(t, "untouched")
		a := f.e.memory(t, f.store.ID, "/a", "aaaa")
		b := f.e.memory(t, f.store.ID, "/b", "bbbb")
		a2, err := f.e.svc.UpdateMemory(f.e.ctx, f.store.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("aaaa, later")})
		if err != nil {
			t.Fatal(err)
		}
		b2, err := f.e.svc.UpdateMemory(f.e.ctx, f.store.ID, b.ID, trove.UpdateMemoryParams{Content: ptr("bbbb, later")})
		if err != nil {
			t.Fatal(err)
		}
		f.v = []*trove.MemoryVersion{nil}
		for _, id := range []string{a.VersionID, b.VersionID, a2.VersionID, b2.VersionID} {
			v, err := f.e.svc.GetVersion(f.e.ctx, f.store.ID, id, trove.ViewFull)
			if err != nil {
				t.Fatal(err)
			}
			f.v = append(f.v, v)
		}
		f.e.memory(t, f.other.ID, "/x", "untouched")
		if rep, err := f.e.svc.VerifyStore(f.e.ctx, f.store.ID); err != nil || !rep.OK || rep.Verified != 4 {
			t.Fatalf("VerifyStore before tampering = %+v, %v", rep, err)
		}
		return f
	}
	random := func() []byte {
		b := make([]byte, trove.HashSize)
		rand.Read(b)
		return b
	}
	cases := []struct {
		name    string
		alter   func(t *testing.T, f *fixture)
		breakAt int    // seq of the version named
		problem string // in the report's Problem
		seq     int64  // the Seq reported, when not breakAt (altered)
	}{
		{"content", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET content = 'evil' WHERE id = ?`, f.v[2].ID)
		}, 2, "content does not match", 0},
		{"content and its sha256", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET content = 'evil', sha256 = ? WHERE id = ?`, sha("evil"), f.v[2].ID)
		}, 2, "leaf hash differs", 0},
		{"path", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET path = '/evil' WHERE id = ?`, f.v[2].ID)
		}, 2, "leaf hash differs", 0},
		{"actor", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET created_by_id = 'apikey_forged' WHERE id = ?`, f.v[2].ID)
		}, 2, "leaf hash differs", 0},
		{"operation", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET operation = 'deleted', content = NULL, size_bytes = NULL, sha256 = NULL WHERE id = ?`, f.v[2].ID)
		}, 2, "leaf hash differs", 0},
		{"row rehashed by the forger", func(t *testing.T, f *fixture) {
			forged := *f.v[2]
			forged.Path = ptr("/evil")
			leaf := trove.VersionLeafHash(&forged)
			exec(t, f.d, `UPDATE versions SET path = '/evil', leaf_hash = ?, chain_hash = ? WHERE id = ?`,
				leaf, trove.VersionChainHash(f.v[1].ChainHash, 2, leaf), f.v[2].ID)
		}, 3, "chain hash does not link", 0},
		{"row deleted", func(t *testing.T, f *fixture) {
			exec(t, f.d, `DELETE FROM versions WHERE id = ?`, f.v[2].ID)
		}, 3, "deleted outside retention", 0},
		{"newest rows deleted", func(t *testing.T, f *fixture) {
			exec(t, f.d, `DELETE FROM versions WHERE id = ?`, f.v[4].ID)
		}, 3, "deleted outside retention", 0},
		{"seq", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET seq = 40 WHERE id = ?`, f.v[4].ID)
			exec(t, f.d, `UPDATE version_seqs SET last = 40 WHERE store_id = ?`, f.store.ID)
		}, 4, "missing", 40},
		{"hashes removed", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE versions SET leaf_hash = NULL, chain_hash = NULL WHERE id = ?`, f.v[3].ID)
		}, 3, "no hash but follows chained versions", 0},
		{"redacted version's leaf", func(t *testing.T, f *fixture) {
			if _, err := f.e.svc.RedactVersion(f.e.ctx, f.store.ID, f.v[1].ID); err != nil {
				t.Fatal(err)
			}
			exec(t, f.d, `UPDATE versions SET leaf_hash = ? WHERE id = ?`, random(), f.v[1].ID)
		}, 1, "chain hash does not link", 0},
		{"redacted version given a path", func(t *testing.T, f *fixture) {
			if _, err := f.e.svc.RedactVersion(f.e.ctx, f.store.ID, f.v[1].ID); err != nil {
				t.Fatal(err)
			}
			exec(t, f.d, `UPDATE versions SET path = '/planted' WHERE id = ?`, f.v[1].ID)
		}, 1, "marked redacted", 0},
		{"head", func(t *testing.T, f *fixture) {
			exec(t, f.d, `UPDATE version_seqs SET head = ? WHERE store_id = ?`, random(), f.store.ID)
		}, 4, "recorded head", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tc.alter(t, f)
			rep, err := f.e.svc.VerifyStore(f.e.ctx, f.store.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := f.v[tc.breakAt]
			seq := cmp.Or(tc.seq, int64(tc.breakAt))
			if rep.OK || rep.Break == nil || rep.Break.VersionID != want.ID || rep.Break.Seq != seq || !strings.Contains(rep.Break.Problem, tc.problem) {
				t.Fatalf("VerifyStore after altering the %s = OK %v, break %+v; want a break at version %s (seq %d) saying %q", tc.name, rep.OK, rep.Break, want.ID, seq, tc.problem)
			}
			if rep, err := f.e.svc.VerifyStore(f.e.ctx, f.other.ID); err != nil || !rep.OK {
				t.Fatalf("VerifyStore of the untouched store = %+v, %v", rep, err)
			}
		})
	}
}

// LegacyHistory checks a store whose first legacy versions were written
// before the hash chain existed (a database migrated to schema 8 with
// data): VerifyStore passes, counting them as Unchained; the store as of
// its newest legacy version lists its memories; the next write starts the
// chain from trove.GenesisHash and verifies; and a memory created after it
// counts toward the store's memories. d is the migrated driver, the store
// is workspaceID's.
func LegacyHistory(t *testing.T, d storage.Driver, workspaceID, storeID string, legacy int, livePaths []string) {
	t.Helper()
	e := newEnv(t, func(*testing.T) storage.Driver { return d }, trove.Limits{})
	ctx, _ := e.keyCtx(t, workspaceID)
	rep, err := e.svc.VerifyStore(ctx, storeID)
	if err != nil || !rep.OK || rep.Unchained != legacy || rep.Verified != 0 || rep.Head != "" {
		t.Fatalf("VerifyStore of the migrated store = %+v, %v; want OK, %d unchained", rep, err, legacy)
	}
	page, err := e.svc.ListMemoriesAsOf(ctx, storeID, trove.Moment{Seq: int64(legacy)}, trove.ListMemoriesParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range page.Data {
		got = append(got, *v.Path)
	}
	if !gocmp.Equal(got, livePaths) {
		t.Errorf("as of the newest legacy version: %v, want %v", got, livePaths)
	}
	m, err := e.svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: "/after-migration", Content: "chained"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.GetVersion(ctx, storeID, m.VersionID, trove.ViewBasic)
	if err != nil {
		t.Fatal(err)
	}
	if v.Seq != int64(legacy+1) || !bytes.Equal(v.ChainHash, trove.VersionChainHash(nil, v.Seq, v.LeafHash)) {
		t.Errorf("first version after the migration: seq %d, chain %x; want seq %d chained from the genesis hash", v.Seq, v.ChainHash, legacy+1)
	}
	rep, err = e.svc.VerifyStore(ctx, storeID)
	if err != nil || !rep.OK || rep.Unchained != legacy || rep.Verified != 1 || rep.Head != hex.EncodeToString(v.ChainHash) {
		t.Fatalf("VerifyStore after a write = %+v, %v; want OK, %d unchained, 1 verified", rep, err, legacy)
	}
	all := e.allMemories(t, ctx, storeID, trove.ListMemoriesParams{Limit: 100})
	if len(all) != len(livePaths)+1 {
		t.Errorf("%d memories after the write, want %d", len(all), len(livePaths)+1)
	}
}
