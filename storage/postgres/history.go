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
// is not a deletion: the newest seq per memory from versions_by_memory_seq,
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
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.MemoryVersion{}
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *v)
	}
	return out, translate(rows.Err())
}
