package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const versionColsTail = `size_bytes, sha256, created_by_type, created_by_id, created_at, redacted_at, redacted_by_type, redacted_by_id, seq,
	leaf_hash, chain_hash, origin_store_id, origin_version_id`

func versionCols(withContent bool) string {
	c := "NULL::bytea"
	if withContent {
		c = "content"
	}
	return "id, store_id, memory_id, operation, path, " + c + ", " + versionColsTail
}

func scanVersion(r scanner) (*trove.MemoryVersion, error) {
	var v trove.MemoryVersion
	var op string
	var content []byte
	var cbType, cbID, rbType, rbID *string
	var redacted *time.Time
	var oStore, oVersion *string
	if err := r.Scan(&v.ID, &v.StoreID, &v.MemoryID, &op, &v.Path, &content, &v.SizeBytes, &v.SHA256,
		&cbType, &cbID, &v.CreatedAt, &redacted, &rbType, &rbID, &v.Seq,
		&v.LeafHash, &v.ChainHash, &oStore, &oVersion); err != nil {
		return nil, err
	}
	if oStore != nil && oVersion != nil {
		v.Origin = &trove.VersionOrigin{StoreID: *oStore, VersionID: *oVersion}
	}
	v.Operation = trove.Operation(op)
	if content != nil {
		c := string(content)
		v.Content = &c
	}
	v.CreatedBy = actorFrom(cbType, cbID)
	v.RedactedBy = actorFrom(rbType, rbID)
	v.CreatedAt, v.RedactedAt = v.CreatedAt.UTC(), utc(redacted)
	return &v, nil
}

// genesisSQL is trove.GenesisHash as a bytea literal.
const genesisSQL = `'\x0000000000000000000000000000000000000000000000000000000000000000'::bytea`

// VersionInsert appends v and sets v.Seq, v.LeafHash and v.ChainHash, in
// one statement; ENOTFOUND when its store does not exist. The upsert on
// version_seqs holds that row's lock until commit, so a store's numbers are
// handed out in commit order across nodes; the same upsert advances the
// store's chain head as sha256(prev || int8send(seq) || leaf), which is
// trove.VersionChainHash (the conformance suite checks they agree), and
// counts the version in retained (migration 0014).
func (t *tx) VersionInsert(ctx context.Context, v *trove.MemoryVersion) error {
	cbType, cbID := actorCols(v.CreatedBy)
	rbType, rbID := actorCols(v.RedactedBy)
	var oStore, oVersion *string
	if v.Origin != nil {
		oStore, oVersion = &v.Origin.StoreID, &v.Origin.VersionID
	}
	leaf := trove.VersionLeafHash(v)
	var seq int64
	var chain []byte
	err := t.queryRow(ctx, `WITH n AS (
			INSERT INTO version_seqs (store_id, last, head, retained) VALUES ($2, 1, sha256(`+genesisSQL+` || int8send(1) || $15::bytea), 1)
			ON CONFLICT (store_id) DO UPDATE SET last = version_seqs.last + 1, retained = version_seqs.retained + 1,
				head = sha256(coalesce(version_seqs.head, `+genesisSQL+`) || int8send(version_seqs.last + 1) || $15::bytea)
			RETURNING last, head),
		-- Delivered to every LISTENer at commit, once per transaction
		-- and store (PostgreSQL folds equal notifications): see listen.go.
		w AS (SELECT pg_notify('`+notifyChannel+`', current_schema() || ' ' || $2))
		INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256,
			created_by_type, created_by_id, created_at, redacted_at, redacted_by_type, redacted_by_id, seq,
			leaf_hash, chain_hash, origin_store_id, origin_version_id)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, n.last, $15, n.head, $16, $17 FROM n, w
		RETURNING seq, chain_hash`,
		v.ID, v.StoreID, v.MemoryID, string(v.Operation), v.Path, contentBytes(v.Content), v.SizeBytes, v.SHA256,
		cbType, cbID, v.CreatedAt, v.RedactedAt, rbType, rbID, leaf, oStore, oVersion).Scan(&seq, &chain)
	if err != nil {
		return translateFK(err, "memory store")
	}
	v.Seq, v.LeafHash, v.ChainHash = seq, leaf, chain
	return nil
}

// queryVersions runs a query selecting versionCols and scans every row.
func (t *tx) queryVersions(ctx context.Context, q string, args ...any) ([]trove.MemoryVersion, error) {
	return t.queryVersionsMax(ctx, 0, q, args...)
}

// queryVersionsMax reads versions; with maxBytes > 0 it stops after the
// version whose content takes the read contents past maxBytes
// (VersionAsOfParams.MaxBytes).
func (t *tx) queryVersionsMax(ctx context.Context, maxBytes int, q string, args ...any) ([]trove.MemoryVersion, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.MemoryVersion{}
	budget := maxBytes
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *v)
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
	q := "SELECT " + versionCols(p.WithContent) + " FROM versions WHERE store_id = $1 AND seq > $2"
	args := []any{p.StoreID, p.AfterSeq}
	if p.UpToSeq > 0 {
		args = append(args, p.UpToSeq)
		q += fmt.Sprintf(" AND seq <= $%d", len(args))
	}
	q += " ORDER BY seq"
	if p.Limit > 0 {
		args = append(args, p.Limit)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	return t.queryVersions(ctx, q, args...)
}

// StoreSeq returns the Seq of the store's newest version ever (0 when
// none), or ENOTFOUND.
func (t *tx) StoreSeq(ctx context.Context, storeID string) (int64, error) {
	var seq int64
	err := t.queryRow(ctx, `SELECT coalesce((SELECT last FROM version_seqs WHERE store_id = s.id), 0)
		FROM stores AS s WHERE s.id = $1`, storeID).Scan(&seq)
	if err == pgx.ErrNoRows {
		return 0, notFound("memory store")
	}
	return seq, translate(err)
}

// VersionGet returns a version of storeID, or ENOTFOUND.
func (t *tx) VersionGet(ctx context.Context, storeID, id string, withContent bool) (*trove.MemoryVersion, error) {
	v, err := scanVersion(t.queryRow(ctx, "SELECT "+versionCols(withContent)+" FROM versions WHERE id = $1 AND store_id = $2", id, storeID))
	if err == pgx.ErrNoRows {
		return nil, notFound("memory version")
	}
	return v, translate(err)
}

// VersionList lists versions by (created_at, id) descending with the
// filters of p (empty strings are no filter).
func (t *tx) VersionList(ctx context.Context, p storage.VersionListParams) ([]trove.MemoryVersion, error) {
	var w where
	if p.MemoryID != "" {
		w.add("memory_id = ?", p.MemoryID)
		w.add(storeOnly("versions"), p.StoreID)
	} else {
		w.add("store_id = ?", p.StoreID)
	}
	actor := func(typ trove.ActorType, id string) {
		if id != "" {
			w.add("created_by_type = ? AND created_by_id = ?", string(typ), id)
		}
	}
	actor(trove.ActorSession, p.SessionID)
	actor(trove.ActorAPI, p.APIKeyID)
	actor(trove.ActorServiceAccount, p.ServiceAccountID)
	if p.Operation != "" {
		w.add("operation = ?", string(p.Operation))
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	q := "SELECT " + versionCols(p.WithContent) + " FROM versions WHERE " + w.sql() + " ORDER BY created_at DESC, id DESC"
	q += w.limit(p.Limit)
	return t.queryVersions(ctx, q, w.args...)
}

// VersionRedact nulls content, path, size and sha256 of a version and sets
// redacted_at/redacted_by; ENOTFOUND if storeID has no such version.
func (t *tx) VersionRedact(ctx context.Context, storeID, id string, at time.Time, by trove.Actor) error {
	bt, bi := actorCols(&by)
	tag, err := t.exec(ctx, `UPDATE versions SET path = NULL, content = NULL, size_bytes = NULL, sha256 = NULL,
		redacted_at = $3, redacted_by_type = $4, redacted_by_id = $5 WHERE id = $1 AND store_id = $2`,
		id, storeID, at, bt, bi)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory version")
	}
	return nil
}

// VersionDeleteExpired deletes versions created before cutoff, except those
// that are the current version of a live memory, and returns how many.
func (t *tx) VersionDeleteExpired(ctx context.Context, cutoff time.Time) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM versions v WHERE v.created_at < $1
		AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id AND m.version_id = v.id)`, cutoff)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}
