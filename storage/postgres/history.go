package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// StoreHead returns the store's newest Seq and chain head, or ENOTFOUND.
func (t *tx) StoreHead(ctx context.Context, storeID string) (int64, []byte, error) {
	var seq int64
	var head []byte
	err := t.queryRow(ctx, `SELECT coalesce(q.last, 0), q.head FROM stores AS s
		LEFT JOIN version_seqs AS q ON q.store_id = s.id WHERE s.id = $1`, storeID).Scan(&seq, &head)
	if err == pgx.ErrNoRows {
		return 0, nil, notFound("memory store")
	}
	return seq, head, translate(err)
}

// VersionSeqAt returns the largest Seq among the store's versions created
// at or before at (0 when none).
func (t *tx) VersionSeqAt(ctx context.Context, storeID string, at time.Time) (int64, error) {
	var seq int64
	err := t.queryRow(ctx, `SELECT coalesce(max(seq), 0) FROM versions WHERE store_id = $1 AND created_at <= $2`,
		storeID, floorMicro(at)).Scan(&seq)
	return seq, translate(err)
}

// VersionAsOf returns each memory's newest version with seq <= p.Seq that
// is not a deletion: the newest seq per memory from the versions_by_seq range,
// then the version by versions_by_seq. Ordered bytewise (COLLATE "C").
func (t *tx) VersionAsOf(ctx context.Context, p storage.VersionAsOfParams) ([]trove.MemoryVersion, error) {
	var w where
	w.add("store_id = ?", p.StoreID)
	w.add("seq <= ?", p.Seq)
	if p.MemoryID != "" {
		w.add("memory_id = ?", p.MemoryID)
	}
	inner := "SELECT memory_id AS mid, max(seq) AS s FROM versions WHERE " + w.sql() + " GROUP BY memory_id"
	w.conds = nil
	w.add("v.store_id = ?", p.StoreID)
	w.add("v.operation <> 'deleted'")
	if p.Path != "" {
		w.add("v.path = ?", p.Path)
	}
	if p.Prefix != "" {
		w.add("starts_with(v.path, ?)", p.Prefix)
	}
	if p.After != nil {
		w.add(`(coalesce(v.path, ''), v.memory_id COLLATE "C") > (?, ? COLLATE "C")`, p.After.Path, p.After.MemoryID)
	}
	cols := versionCols(p.WithContent)
	q := fmt.Sprintf(`SELECT %s FROM (%s) AS c JOIN versions AS v ON v.seq = c.s WHERE %s
		ORDER BY coalesce(v.path, ''), v.memory_id COLLATE "C"`, cols, inner, w.sql())
	q += w.limit(p.Limit)
	return t.queryVersionsMax(ctx, p.MaxBytes, q, w.args...)
}

// MemoryInsertBatch inserts the memories in one statement and their
// versions in one more, between taking len(vs) numbers from version_seqs
// (the row stays locked until commit, as in VersionInsert) and storing the
// new chain head: six round trips whatever the batch size (two more turn
// the per-row memory counter trigger off and back on, counting once). The chain
// hashes are computed here with trove.VersionChainHash.
func (t *tx) MemoryInsertBatch(ctx context.Context, ms []*trove.Memory, vs []*trove.MemoryVersion) error {
	n := len(ms)
	if n != len(vs) {
		return fmt.Errorf("postgres: MemoryInsertBatch of %d memories with %d versions", n, len(vs))
	}
	if n == 0 {
		return nil
	}
	storeID := ms[0].StoreID
	var (
		ids, paths, shas, vids []string
		contents               [][]byte
		sizes                  []int
		created, updated       []time.Time
		batchBytes             int64 // the stores row's content_bytes (migration 0014)
	)
	for _, m := range ms {
		if m.StoreID != storeID || m.Content == nil {
			return fmt.Errorf("postgres: MemoryInsertBatch needs memories of one store, with content")
		}
		ids, paths, shas, vids = append(ids, m.ID), append(paths, m.Path), append(shas, m.SHA256), append(vids, m.VersionID)
		contents, sizes = append(contents, contentBytes(m.Content)), append(sizes, m.SizeBytes)
		batchBytes += int64(m.SizeBytes)
		created, updated = append(created, m.CreatedAt), append(updated, m.UpdatedAt)
	}
	// The counter row is updated once below, not once per memory by the
	// row trigger (migration 0008).
	if _, err := t.exec(ctx, `SELECT set_config('trove.bulk_count', 'on', true)`); err != nil {
		return translate(err)
	}
	tag, err := t.exec(ctx, `INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at)
		SELECT u.id, $1, u.path, u.content, u.size, u.sha, u.vid, u.created, u.updated
		FROM unnest($2::text[], $3::text[], $4::bytea[], $5::int[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[])
			AS u(id, path, content, size, sha, vid, created, updated)
		ON CONFLICT (store_id, path) DO NOTHING`,
		storeID, ids, paths, contents, sizes, shas, vids, created, updated)
	if err != nil {
		return translateFK(err, "memory store")
	}
	if _, err := t.exec(ctx, `WITH off AS (SELECT set_config('trove.bulk_count', 'off', true))
		UPDATE stores SET memory_count = memory_count + $2, content_bytes = content_bytes + $3 FROM off WHERE id = $1`,
		storeID, tag.RowsAffected(), batchBytes); err != nil {
		return translate(err)
	}
	if int(tag.RowsAffected()) != n {
		return &trove.Error{Code: trove.EPATHCONFLICT, Message: "a memory of the batch has the path of another memory"}
	}
	var last int64
	var head []byte
	if err := t.queryRow(ctx, `INSERT INTO version_seqs (store_id, last, retained) VALUES ($1, $2, $2)
		ON CONFLICT (store_id) DO UPDATE SET last = version_seqs.last + $2, retained = version_seqs.retained + $2
		RETURNING last, head`, storeID, n).Scan(&last, &head); err != nil {
		return translateFK(err, "memory store")
	}
	var (
		vIDs, vMems, vOps             []string
		vPaths, vSHAs, cbTypes, cbIDs []*string
		oStores, oVersions            []*string
		vContents, leaves, chains     [][]byte
		vSizes                        []*int
		vCreated                      []time.Time
		vSeqs                         []int64
	)
	prev := head
	for i, v := range vs {
		if v.StoreID != storeID || v.RedactedAt != nil {
			return fmt.Errorf("postgres: MemoryInsertBatch needs unredacted versions of one store")
		}
		v.Seq = last - int64(n) + int64(i) + 1
		v.LeafHash = trove.VersionLeafHash(v)
		v.ChainHash = trove.VersionChainHash(prev, v.Seq, v.LeafHash)
		prev = v.ChainHash
		cbt, cbi := actorCols(v.CreatedBy)
		var os, ov *string
		if v.Origin != nil {
			os, ov = &v.Origin.StoreID, &v.Origin.VersionID
		}
		vIDs, vMems, vOps = append(vIDs, v.ID), append(vMems, v.MemoryID), append(vOps, string(v.Operation))
		vPaths, vSHAs, cbTypes, cbIDs = append(vPaths, v.Path), append(vSHAs, v.SHA256), append(cbTypes, cbt), append(cbIDs, cbi)
		oStores, oVersions = append(oStores, os), append(oVersions, ov)
		vContents, leaves, chains = append(vContents, contentBytes(v.Content)), append(leaves, v.LeafHash), append(chains, v.ChainHash)
		vSizes, vCreated, vSeqs = append(vSizes, v.SizeBytes), append(vCreated, v.CreatedAt), append(vSeqs, v.Seq)
	}
	if _, err := t.exec(ctx, `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256,
			created_by_type, created_by_id, created_at, seq, leaf_hash, chain_hash, origin_store_id, origin_version_id)
		SELECT u.id, $1, u.mem, u.op, u.path, u.content, u.size, u.sha, u.cbt, u.cbi, u.created, u.seq, u.leaf, u.chain, u.os, u.ov
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::int[], $8::text[], $9::text[], $10::text[],
			$11::timestamptz[], $12::bigint[], $13::bytea[], $14::bytea[], $15::text[], $16::text[])
			AS u(id, mem, op, path, content, size, sha, cbt, cbi, created, seq, leaf, chain, os, ov)`,
		storeID, vIDs, vMems, vOps, vPaths, vContents, vSizes, vSHAs, cbTypes, cbIDs, vCreated, vSeqs, leaves, chains, oStores, oVersions); err != nil {
		return translate(err)
	}
	// The change feed's wake-up, as VersionInsert sends it (listen.go).
	if _, err := t.exec(ctx, `WITH w AS (SELECT pg_notify('`+notifyChannel+`', current_schema() || ' ' || $1))
		UPDATE version_seqs SET head = $2 FROM w WHERE store_id = $1`, storeID, prev); err != nil {
		return translate(err)
	}
	return nil
}
