package storagetest

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- the hash chain and reads as of a Seq ----

// testVersionChain checks that VersionInsert sets LeafHash to
// trove.VersionLeafHash and ChainHash to trove.VersionChainHash over the
// previous version of the same store (GenesisHash first), across writes and
// stores, that reads return them with Origin, that StoreHead is the newest
// chain hash, and that redaction keeps both hashes.
func testVersionChain(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		seq, head, err := tx.StoreHead(ctx, s.ID)
		if err != nil || seq != 0 || head != nil {
			t.Errorf("StoreHead of a new store = %d, %x, %v; want 0, nil, nil", seq, head, err)
		}
		_, _, err = tx.StoreHead(ctx, "memstore_missing")
		wantCode(t, "StoreHead unknown store", err, trove.ENOTFOUND)
		return nil
	})
	var inserted []*trove.MemoryVersion
	heads := map[string][]byte{}
	for round := range 3 {
		write(t, d, func(ctx context.Context, tx storage.Tx) error {
			for i, st := range []string{s.ID, other.ID, s.ID} {
				v := seqVersion(st, "mem_a", round*10+i)
				switch i {
				case 1:
					v.Origin = &trove.VersionOrigin{StoreID: s.ID, VersionID: "memver_src"}
					v.CreatedBy = &trove.Actor{Type: trove.ActorSession, SessionID: "sesn_x"}
				case 2:
					v.Operation, v.Path, v.Content, v.SizeBytes, v.SHA256 = trove.OpDeleted, strPtr("/p"), nil, nil, nil
				}
				if err := tx.VersionInsert(ctx, v); err != nil {
					return err
				}
				leaf := trove.VersionLeafHash(v)
				want := trove.VersionChainHash(heads[st], v.Seq, leaf)
				if !bytes.Equal(v.LeafHash, leaf) || !bytes.Equal(v.ChainHash, want) {
					t.Errorf("VersionInsert seq %d of %s: leaf %x chain %x, want %x %x", v.Seq, st, v.LeafHash, v.ChainHash, leaf, want)
				}
				heads[st] = v.ChainHash
				inserted = append(inserted, v)
			}
			return nil
		})
	}
	if !bytes.Equal(trove.VersionChainHash(nil, 1, inserted[0].LeafHash), inserted[0].ChainHash) ||
		!bytes.Equal(trove.VersionChainHash(trove.GenesisHash, 1, inserted[0].LeafHash), inserted[0].ChainHash) {
		t.Errorf("the first version's chain hash does not start from GenesisHash")
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, st := range []string{s.ID, other.ID} {
			seq, head, err := tx.StoreHead(ctx, st)
			if err != nil || !bytes.Equal(head, heads[st]) {
				t.Errorf("StoreHead(%s) = %d, %x, %v; want head %x", st, seq, head, err, heads[st])
			}
		}
		for _, v := range inserted {
			got, err := tx.VersionGet(ctx, v.StoreID, v.ID, false)
			if err != nil {
				return err
			}
			if !bytes.Equal(got.LeafHash, v.LeafHash) || !bytes.Equal(got.ChainHash, v.ChainHash) || !gocmp.Equal(got.Origin, v.Origin) {
				t.Errorf("VersionGet(%s): leaf %x chain %x origin %+v; inserted %x %x %+v", v.ID, got.LeafHash, got.ChainHash, got.Origin, v.LeafHash, v.ChainHash, v.Origin)
			}
			if !bytes.Equal(trove.VersionLeafHash(got), v.LeafHash) {
				t.Errorf("VersionLeafHash of %s read back differs from the one inserted: a field does not round-trip", v.ID)
			}
		}
		return nil
	})
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.VersionRedact(ctx, s.ID, inserted[0].ID, secs(100), trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_r"})
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.VersionGet(ctx, s.ID, inserted[0].ID, false)
		if err != nil {
			return err
		}
		if !bytes.Equal(got.LeafHash, inserted[0].LeafHash) || !bytes.Equal(got.ChainHash, inserted[0].ChainHash) {
			t.Errorf("redaction changed the hashes: leaf %x chain %x", got.LeafHash, got.ChainHash)
		}
		return nil
	})
}

// testVersionAsOf checks VersionAsOf at every Seq of a history of creates,
// updates, moves, deletes and a redaction against a model replayed here,
// with each filter and keyset paging, and VersionSeqAt's boundaries.
func testVersionAsOf(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	type step struct {
		mem, path, content string
		op                 trove.Operation
	}
	steps := []step{
		{"mem_A", "/a", "a1", trove.OpCreated},
		{"mem_B", "/b/x", "b1", trove.OpCreated},
		{"mem_A", "/a", "a2", trove.OpModified},
		{"mem_B", "/c", "b1", trove.OpModified},
		{"mem_A", "/a", "", trove.OpDeleted},
		{"mem_C", "/b/y", "c1", trove.OpCreated},
		{"mem_D", "/b/z", "d1", trove.OpCreated},
		{"mem_D", "/b/z", "d2", trove.OpModified},
		{"mem_A", "/b/a", "a3", trove.OpCreated},
	}
	var all []trove.MemoryVersion
	// The memories are kept as core keeps them: the live ones, each with
	// its newest version (VersionAsOf may read a recent moment from them).
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i, st := range steps {
			v := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, secs(10*(i+1))), StoreID: s.ID, MemoryID: st.mem,
				Operation: st.op, Path: strPtr(st.path), CreatedAt: secs(10 * (i + 1))}
			if st.op != trove.OpDeleted {
				v.Content, v.SizeBytes, v.SHA256 = strPtr(st.content), intPtr(len(st.content)), strPtr(sha(st.content))
			}
			m := &trove.Memory{ID: st.mem, StoreID: s.ID, Path: st.path, Content: v.Content, SizeBytes: len(st.content), SHA256: sha(st.content),
				VersionID: v.ID, CreatedAt: v.CreatedAt, UpdatedAt: v.CreatedAt}
			var err error
			switch st.op {
			case trove.OpCreated:
				err = tx.MemoryInsert(ctx, m)
			case trove.OpModified:
				err = tx.MemoryUpdate(ctx, m)
			case trove.OpDeleted:
				err = tx.MemoryDelete(ctx, s.ID, st.mem)
			}
			if err != nil {
				return err
			}
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
			all = append(all, *v)
		}
		return nil
	})
	// Redact D's first version (seq 7): as of 7 D shows redacted, no path.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.VersionRedact(ctx, s.ID, all[6].ID, secs(200), trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_r"})
	})
	all[6].Path, all[6].Content, all[6].SizeBytes, all[6].SHA256 = nil, nil, nil, nil
	all[6].RedactedAt = timePtr(secs(200))
	all[6].RedactedBy = &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_r"}

	key := asOfKey
	model := func(seq int64, p storage.VersionAsOfParams) []trove.MemoryVersion {
		p.Seq = seq
		return asOfModel(all, p)
	}
	ids := func(vs []trove.MemoryVersion) []string {
		out := []string{}
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for seq := int64(0); seq <= int64(len(all)); seq++ {
			for _, f := range []storage.VersionAsOfParams{
				{}, {WithContent: true}, {Prefix: "/b/"}, {Path: "/c"}, {Path: "/a"}, {MemoryID: "mem_A"}, {MemoryID: "mem_D", WithContent: true},
			} {
				f.StoreID, f.Seq = s.ID, seq
				got, err := tx.VersionAsOf(ctx, f)
				if err != nil {
					return err
				}
				want := model(seq, f)
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("VersionAsOf seq %d %+v (-model +got):\n%s", seq, f, diff)
				}
			}
			// MaxBytes: the listing ends after the version whose content
			// takes the read contents past it.
			for _, max := range []int{1, 2, 10} {
				want := model(seq, storage.VersionAsOfParams{WithContent: true})
				budget := max
				for i, v := range want {
					if v.Content != nil {
						budget -= len(*v.Content)
					}
					if budget < 0 {
						want = want[:i+1]
						break
					}
				}
				got, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: s.ID, Seq: seq, WithContent: true, MaxBytes: max})
				if err != nil {
					return err
				}
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("VersionAsOf seq %d MaxBytes %d (-model +got):\n%s", seq, max, diff)
				}
			}
			// Paging one at a time gives the whole listing.
			var paged []trove.MemoryVersion
			var after *storage.AsOfPosition
			for range 20 {
				page, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: s.ID, Seq: seq, After: after, Limit: 1})
				if err != nil {
					return err
				}
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				after = &storage.AsOfPosition{Path: key(page[0]), MemoryID: page[0].MemoryID}
			}
			if diff := gocmp.Diff(ids(model(seq, storage.VersionAsOfParams{})), ids(paged)); diff != "" {
				t.Errorf("VersionAsOf seq %d paged by 1 (-model +got):\n%s", seq, diff)
			}
		}
		for _, c := range []struct {
			at   int
			want int64
		}{{0, 0}, {9, 0}, {10, 1}, {15, 1}, {90, 9}, {1000, 9}} {
			got, err := tx.VersionSeqAt(ctx, s.ID, secs(c.at))
			if err != nil || got != c.want {
				t.Errorf("VersionSeqAt(+%ds) = %d, %v; want %d", c.at, got, err, c.want)
			}
		}
		return nil
	})
}

// testMemoryInsertBatch checks that a batch insert equals MemoryInsert then
// VersionInsert per pair: memories readable, versions numbered after the
// store's newest and chained from its head, the head advanced, the next
// single insert chained after the batch, and a path taken refused as
// EPATHCONFLICT with nothing written.
func testMemoryInsertBatch(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	first, _ := insertMemory(t, d, s.ID, "/first", "one", secs(1))
	var ms []*trove.Memory
	var vs []*trove.MemoryVersion
	for i := range 5 {
		m, v := newMemory(s.ID, "/batch/"+string(rune('a'+i)), "content "+string(rune('a'+i)), secs(10+i))
		v.Origin = &trove.VersionOrigin{StoreID: "memstore_src", VersionID: "memver_src"}
		ms, vs = append(ms, m), append(vs, v)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryInsertBatch(ctx, ms, vs) })
	var prev []byte
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		all, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: s.ID, WithContent: true})
		if err != nil {
			return err
		}
		if len(all) != 6 {
			t.Fatalf("%d versions after a batch of 5, want 6", len(all))
		}
		for i, v := range all {
			if v.Seq != int64(i+1) || !bytes.Equal(v.LeafHash, trove.VersionLeafHash(&v)) || !bytes.Equal(v.ChainHash, trove.VersionChainHash(prev, v.Seq, v.LeafHash)) {
				t.Errorf("version %d after the batch: seq %d, hashes do not chain", i, v.Seq)
			}
			if i > 0 && (!bytes.Equal(v.ChainHash, vs[i-1].ChainHash) || vs[i-1].Seq != v.Seq || !gocmp.Equal(v.Origin, vs[i-1].Origin) || *v.Content != *vs[i-1].Content) {
				t.Errorf("batch version %d read back differs from what MemoryInsertBatch set: %+v", i-1, v)
			}
			prev = v.ChainHash
		}
		seq, head, err := tx.StoreHead(ctx, s.ID)
		if err != nil || seq != 6 || !bytes.Equal(head, prev) {
			t.Errorf("StoreHead after the batch = %d, %x, %v; want 6, %x", seq, head, err, prev)
		}
		for _, m := range ms {
			got, err := tx.MemoryGet(ctx, s.ID, m.ID, true)
			if err != nil || *got.Content != *m.Content || got.Path != m.Path || got.VersionID != m.VersionID {
				t.Errorf("MemoryGet(%s) after the batch = %+v, %v", m.ID, got, err)
			}
		}
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 6 {
			t.Errorf("MemoryCount after the batch = %d, %v; want 6", n, err)
		}
		return nil
	})
	_, v := insertMemory(t, d, s.ID, "/after", "after", secs(30))
	if v.Seq != 7 || !bytes.Equal(v.ChainHash, trove.VersionChainHash(prev, 7, v.LeafHash)) {
		t.Errorf("the insert after the batch: seq %d, chain not linked to the batch's last version", v.Seq)
	}
	m, bad := newMemory(s.ID, first.Path, "clash", secs(40))
	err := d.Write(context.Background(), func(tx storage.Tx) error {
		return tx.MemoryInsertBatch(context.Background(), []*trove.Memory{m}, []*trove.MemoryVersion{bad})
	})
	wantCode(t, "MemoryInsertBatch onto a taken path", err, trove.EPATHCONFLICT)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		if seq, _, _ := tx.StoreHead(ctx, s.ID); seq != 7 {
			t.Errorf("a refused batch moved the store's seq to %d", seq)
		}
		return nil
	})
}

// asOfKey is a version's path in VersionAsOf's order, "" when redacted.
func asOfKey(v trove.MemoryVersion) string {
	if v.Path == nil {
		return ""
	}
	return *v.Path
}

// asOfModel is what VersionAsOf must return for p over a store whose
// versions are all (in seq order, redactions applied): each memory's newest
// version with seq <= p.Seq that is not a deletion, with p's filters, in
// (path, memory ID) order after p.After, then p.Limit and p.MaxBytes
// applied in that order.
func asOfModel(all []trove.MemoryVersion, p storage.VersionAsOfParams) []trove.MemoryVersion {
	newest := map[string]trove.MemoryVersion{}
	for _, v := range all {
		if v.Seq <= p.Seq && (p.MemoryID == "" || v.MemoryID == p.MemoryID) {
			newest[v.MemoryID] = v
		}
	}
	out := []trove.MemoryVersion{}
	for _, v := range newest {
		if v.Operation == trove.OpDeleted || (p.Path != "" && asOfKey(v) != p.Path) ||
			(p.Prefix != "" && (v.Path == nil || !strings.HasPrefix(*v.Path, p.Prefix))) {
			continue
		}
		if p.After != nil && cmp.Or(strings.Compare(asOfKey(v), p.After.Path), strings.Compare(v.MemoryID, p.After.MemoryID)) <= 0 {
			continue
		}
		if !p.WithContent {
			v.Content = nil
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b trove.MemoryVersion) int {
		return cmp.Or(strings.Compare(asOfKey(a), asOfKey(b)), strings.Compare(a.MemoryID, b.MemoryID))
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	budget := p.MaxBytes
	for i, v := range out {
		if v.Content != nil {
			budget -= len(*v.Content)
		}
		if p.MaxBytes > 0 && budget < 0 {
			return out[:i+1]
		}
	}
	return out
}
