package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const versionCols = `id, store_id, memory_id, operation, path, size_bytes, sha256,
	created_by_type, created_by_id, created_at, redacted_at, redacted_by_type, redacted_by_id, seq,
	leaf_hash, chain_hash, origin_store_id, origin_version_id`

func versionSelect(withContent bool) string {
	if withContent {
		return `SELECT ` + versionCols + `, content FROM versions`
	}
	return `SELECT ` + versionCols + `, NULL FROM versions`
}

func scanVersion(r rowScanner, v *trove.MemoryVersion) error {
	var (
		op                 string
		path, sha, content sql.NullString
		size               sql.NullInt64
		cbType, cbID       sql.NullString
		rbType, rbID       sql.NullString
		created            int64
		redacted           sql.NullInt64
		leaf, chain        []byte
		oStore, oVersion   sql.NullString
	)
	if err := r.Scan(&v.ID, &v.StoreID, &v.MemoryID, &op, &path, &size, &sha,
		&cbType, &cbID, &created, &redacted, &rbType, &rbID, &v.Seq,
		&leaf, &chain, &oStore, &oVersion, &content); err != nil {
		return err
	}
	v.LeafHash, v.ChainHash, v.Origin = leaf, chain, nil
	if oStore.Valid {
		v.Origin = &trove.VersionOrigin{StoreID: oStore.String, VersionID: oVersion.String}
	}
	v.Operation = trove.Operation(op)
	v.Path, v.SHA256, v.Content, v.SizeBytes = nil, nil, nil, nil
	if path.Valid {
		v.Path = &path.String
	}
	if sha.Valid {
		v.SHA256 = &sha.String
	}
	if content.Valid {
		v.Content = &content.String
	}
	if size.Valid {
		n := int(size.Int64)
		v.SizeBytes = &n
	}
	v.CreatedBy = actorOf(cbType, cbID)
	v.CreatedAt = fromMicros(created)
	v.RedactedAt = timePtr(redacted)
	v.RedactedBy = actorOf(rbType, rbID)
	return nil
}

func nullString(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func nullInt(n *int) any {
	if n == nil {
		return nil
	}
	return *n
}

// VersionInsert appends v and sets v.Seq, v.LeafHash and v.ChainHash. The
// write transaction holds SQLite's only write lock, so numbers are handed
// out in commit order. The statement that takes the number also advances
// the store's chain head with trove_chain (trove.VersionChainHash,
// registered with SQLite by Open) and counts the version in retained
// (migration 0013), so an insert costs the same two statements as before
// the chain and the counter.
func (t *tx) VersionInsert(ctx context.Context, v *trove.MemoryVersion) error {
	cbType, cbID, err := actorCols(v.CreatedBy)
	if err != nil {
		return err
	}
	rbType, rbID, err := actorCols(v.RedactedBy)
	if err != nil {
		return err
	}
	var seq int64
	var chain []byte
	leaf := trove.VersionLeafHash(v)
	err = t.queryRow(ctx, "memory store", v.StoreID, func(r rowScanner) error { return r.Scan(&seq, &chain) },
		`INSERT INTO version_seqs (store_id, last, head, retained) VALUES (?1, 1, trove_chain(NULL, 1, ?2), 1)
		ON CONFLICT (store_id) DO UPDATE SET last = last + 1, head = trove_chain(head, last + 1, ?2), retained = retained + 1
		RETURNING last, head`, v.StoreID, leaf)
	if isForeignKey(err) {
		return notFound("memory store", v.StoreID)
	}
	if err != nil {
		return err
	}
	var oStore, oVersion any
	if v.Origin != nil {
		oStore, oVersion = v.Origin.StoreID, v.Origin.VersionID
	}
	if _, err = t.exec(ctx, `INSERT INTO versions (`+versionCols+`, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.StoreID, v.MemoryID, string(v.Operation), nullString(v.Path), nullInt(v.SizeBytes), nullString(v.SHA256),
		cbType, cbID, micros(v.CreatedAt), nullMicros(v.RedactedAt), rbType, rbID, seq,
		leaf, chain, oStore, oVersion, nullString(v.Content)); err != nil {
		return err
	}
	v.Seq, v.LeafHash, v.ChainHash = seq, leaf, chain
	return nil
}

// queryVersions runs a query selecting versionSelect's columns and scans
// every row.
func (t *tx) queryVersions(ctx context.Context, q string, args ...any) ([]trove.MemoryVersion, error) {
	return t.queryVersionsMax(ctx, 0, q, args...)
}

// queryVersionsMax reads versions; with maxBytes > 0 it stops after the
// version whose content takes the read contents past maxBytes
// (VersionAsOfParams.MaxBytes).
func (t *tx) queryVersionsMax(ctx context.Context, maxBytes int, q string, args ...any) ([]trove.MemoryVersion, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.MemoryVersion{}
	budget := maxBytes
	for rows.Next() {
		var v trove.MemoryVersion
		if err := scanVersion(rows, &v); err != nil {
			return nil, translate(err)
		}
		out = append(out, v)
		if v.Content != nil {
			budget -= len(*v.Content)
		}
		if maxBytes > 0 && budget < 0 {
			break
		}
	}
	return out, translate(rows.Err())
}

// VersionScan lists a store's versions in ascending Seq order within
// (AfterSeq, UpToSeq].
func (t *tx) VersionScan(ctx context.Context, p storage.VersionScanParams) ([]trove.MemoryVersion, error) {
	q := versionSelect(p.WithContent) + ` WHERE store_id = ? AND seq > ?`
	args := []any{p.StoreID, p.AfterSeq}
	if p.UpToSeq > 0 {
		q += ` AND seq <= ?`
		args = append(args, p.UpToSeq)
	}
	q += ` ORDER BY seq`
	if p.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, p.Limit)
	}
	return t.queryVersions(ctx, q, args...)
}

// StoreSeq returns the Seq of the store's newest version ever (0 when none).
func (t *tx) StoreSeq(ctx context.Context, storeID string) (int64, error) {
	var seq int64
	err := t.queryRow(ctx, "memory store", storeID, func(r rowScanner) error { return r.Scan(&seq) },
		`SELECT coalesce((SELECT last FROM version_seqs WHERE store_id = s.id), 0) FROM stores AS s WHERE s.id = ?`, storeID)
	return seq, err
}

// VersionGet returns a version of a store, or ENOTFOUND.
func (t *tx) VersionGet(ctx context.Context, storeID, id string, withContent bool) (*trove.MemoryVersion, error) {
	var v trove.MemoryVersion
	err := t.queryRow(ctx, "memory version", id, func(r rowScanner) error { return scanVersion(r, &v) },
		versionSelect(withContent)+` WHERE id = ? AND store_id = ?`, id, storeID)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// VersionList lists versions by (created_at, id) descending with the filters
// of p; several actor filters must all hold (so two different ones match
// nothing). Limit <= 0 means no limit.
func (t *tx) VersionList(ctx context.Context, p storage.VersionListParams) ([]trove.MemoryVersion, error) {
	q := versionListQuery(p)
	return t.queryVersions(ctx, q.sql, q.args...)
}

// versionListQuery is VersionList's statement.
func versionListQuery(p storage.VersionListParams) sqlQuery {
	var w whereBuilder
	if p.StoreID != "" {
		w.add("store_id = ?", p.StoreID)
	}
	if p.MemoryID != "" {
		w.add("memory_id = ?", p.MemoryID)
	}
	for _, f := range []struct {
		typ trove.ActorType
		id  string
	}{{trove.ActorSession, p.SessionID}, {trove.ActorAPI, p.APIKeyID}, {trove.ActorServiceAccount, p.ServiceAccountID}} {
		if f.id != "" {
			w.add("created_by_type = ? AND created_by_id = ?", string(f.typ), f.id)
		}
	}
	if p.Operation != "" {
		w.add("operation = ?", string(p.Operation))
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	return sqlQuery{versionSelect(p.WithContent) + w.String() + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))}
}

// VersionRedact nulls content, path, size and sha256 and sets
// redacted_at/redacted_by; ENOTFOUND if the store has no such version.
func (t *tx) VersionRedact(ctx context.Context, storeID, id string, at time.Time, by trove.Actor) error {
	rbType, rbID, err := actorCols(&by)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "memory version", id,
		`UPDATE versions SET path = NULL, content = NULL, size_bytes = NULL, sha256 = NULL,
		 redacted_at = ?, redacted_by_type = ?, redacted_by_id = ? WHERE id = ? AND store_id = ?`,
		micros(at), rbType, rbID, id, storeID)
}

// deleteExpiredSQL deletes the versions created before ?1 that are no live
// memory's current version (a range on versions_by_created, a primary-key
// probe of the version's memory per candidate).
const deleteExpiredSQL = `DELETE FROM versions WHERE created_at < ?
	AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = versions.memory_id AND m.version_id = versions.id)`

// VersionDeleteExpired deletes versions created strictly before cutoff,
// except a version that is the current version of a live memory, and
// returns how many it deleted.
func (t *tx) VersionDeleteExpired(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := t.exec(ctx, deleteExpiredSQL, ceilMicros(cutoff))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}
