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
// is not a deletion, ordered bytewise (COLLATE "C") by path, a redacted
// one's NULL path first, then memory ID. Its cost grows with the page, not
// with the store's history (docs/perf/scale.md), by one of four plans:
//
//   - one memory (p.MemoryID): one probe of versions_by_memory_seq for the
//     memory's newest seq <= p.Seq;
//   - a page (a limit) whose other plan would read too much for it
//     (storage.VersionAsOfParams.Walk): asOfWalk, a skip scan of the
//     versions' (path, memory) pairs;
//   - else a moment in the newer half of the history (head − p.Seq <=
//     p.Seq): a page of the live memories untouched since the moment plus
//     the memories the versions after it touched (see below);
//   - else (an older moment) the newest seq per memory from the
//     versions_by_seq range up to the moment, then the version by
//     versions_by_seq.
//
// For a recent moment S the state is the union of the live memories that
// no version after S touched (as of S they were what they are now: their
// current version, whose path is the memory's since a current version
// cannot be redacted), read in path order through memories_store_path_key
// with one probe of versions_by_memory_seq each for "no version after S",
// up to the page's limit; and the memories the versions after S touched
// (versions_by_seq from S), each as of S through versions_by_memory_seq.
func (t *tx) VersionAsOf(ctx context.Context, p storage.VersionAsOfParams) ([]trove.MemoryVersion, error) {
	var w where
	// Conditions on the version found (alias v).
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
	outer := w.sql()
	cols := versionCols(p.WithContent)
	if p.MemoryID != "" {
		w.conds = nil
		w.add("v.store_id = ? AND v.memory_id = ?", p.StoreID, p.MemoryID)
		// storeOnly: see its doc.
		w.add(`v.seq = (SELECT y.seq FROM versions AS y WHERE y.memory_id = ? AND y.seq <= ? AND `+storeOnly("y")+`
			ORDER BY y.seq DESC LIMIT 1)`, p.MemoryID, p.Seq, p.StoreID)
		q := fmt.Sprintf(`SELECT %s FROM versions AS v WHERE %s AND %s`, cols, outer, w.sql())
		q += w.limit(p.Limit)
		return t.queryVersionsMax(ctx, p.MaxBytes, q, w.args...)
	}
	var head int64
	if err := t.queryRow(ctx, `SELECT coalesce((SELECT last FROM version_seqs WHERE store_id = $1), 0)`, p.StoreID).Scan(&head); err != nil {
		return nil, translate(err)
	}
	if p.Walk(head) {
		return t.asOfWalk(ctx, p)
	}
	if head-p.Seq > p.Seq {
		// A short history up to the moment (or no limit): one pass over it.
		w.conds = nil
		w.add("store_id = ? AND seq <= ?", p.StoreID, p.Seq)
		inner := "SELECT memory_id AS mid, max(seq) AS s FROM versions WHERE " + w.sql() + " GROUP BY memory_id"
		w.conds = nil
		w.add("v.store_id = ?", p.StoreID)
		q := fmt.Sprintf(`SELECT %s FROM (%s) AS c JOIN versions AS v ON v.seq = c.s WHERE %s AND %s
			ORDER BY coalesce(v.path, ''), v.memory_id COLLATE "C"`, cols, inner, w.sql(), outer)
		q += w.limit(p.Limit)
		return t.queryVersionsMax(ctx, p.MaxBytes, q, w.args...)
	}
	w.conds = nil
	w.add("m.store_id = ?", p.StoreID)
	if p.Path != "" {
		w.add("m.path = ?", p.Path)
	}
	if p.Prefix != "" {
		w.add("m.path >= ?", p.Prefix)
		if up, ok := prefixUpper(p.Prefix); ok {
			w.add("m.path < ?", up)
		}
		w.add("starts_with(m.path, ?)", p.Prefix)
	}
	if p.After != nil {
		// A live memory's path is unique in its store: (path, id) > (P, I)
		// is path > P, or the memory at P when its ID is after I.
		w.add(`m.path >= ? AND (m.path > ? OR m.id COLLATE "C" > ? COLLATE "C")`, p.After.Path, p.After.Path, p.After.MemoryID)
	}
	w.add("NOT EXISTS (SELECT 1 FROM versions AS x WHERE x.memory_id = m.id AND x.seq > ? AND x.store_id = m.store_id)", p.Seq)
	live := w.sql()
	liveLimit := w.limit(p.Limit)
	w.conds = nil
	// seq <= head bounds the range for the planner too: without it, the
	// statistics of seq over every store's history make "seq > S" look
	// like most of the store, and it plans a parallel scan whose worker
	// start-up alone took 58 ms (EXPLAIN ANALYZE at 1 %) for 10 rows.
	w.add("store_id = ? AND seq > ? AND seq <= ?", p.StoreID, p.Seq, head)
	touched := w.sql()
	w.conds = nil
	w.add("y.memory_id = c.mid AND y.seq <= ? AND "+storeOnly("y"), p.Seq, p.StoreID)
	asOf := w.sql()
	w.conds = nil
	w.add("v.store_id = ?", p.StoreID)
	q := fmt.Sprintf(`SELECT %s FROM (
		(SELECT v.* FROM memories AS m JOIN versions AS v ON v.id = m.version_id WHERE %s ORDER BY m.path%s)
		UNION ALL
		SELECT v.* FROM (SELECT DISTINCT memory_id AS mid FROM versions WHERE %s) AS c
			CROSS JOIN LATERAL (SELECT y.seq FROM versions AS y WHERE %s ORDER BY y.seq DESC LIMIT 1) AS l
			JOIN versions AS v ON v.seq = l.seq AND %s
	) AS v WHERE %s ORDER BY coalesce(v.path, ''), v.memory_id COLLATE "C"`, cols, live, liveLimit, touched, asOf, w.sql(), outer)
	q += w.limit(p.Limit)
	return t.queryVersionsMax(ctx, p.MaxBytes, q, w.args...)
}

// asOfWalk is VersionAsOf of a moment S, one page, in a cost that
// grows with the page (and the pairs skipped on the way), not with the
// history. A recursive query walks the distinct (path, memory ID) pairs of
// the store's versions in the page's order through versions_by_path (a
// skip scan: one index seek per pair, a pair's many versions stepped over)
// and probes, through versions_by_memory_seq, the memory's newest version
// with seq <= S, keeping the pair when that version is at the pair's path
// and not a deletion; the walk stops when the page is full or the filter's
// range ends. Every memory alive at S is kept at exactly one pair, the
// path of its version as of S. The redacted versions' NULL paths come
// first in the order, so they are walked first, by memory ID.
func (t *tx) asOfWalk(ctx context.Context, p storage.VersionAsOfParams) ([]trove.MemoryVersion, error) {
	nulls := p.Path == "" && p.Prefix == ""
	afterMID, startPath, inclusive := "", "", true
	switch {
	case p.After != nil && p.After.Path == "":
		afterMID = p.After.MemoryID
	case p.After != nil:
		nulls, startPath, afterMID, inclusive = false, p.After.Path, p.After.MemoryID, false
	default:
		startPath = max(p.Path, p.Prefix)
	}
	if p.After != nil && max(p.Path, p.Prefix) > p.After.Path {
		startPath, afterMID, inclusive = max(p.Path, p.Prefix), "", true
	}
	out := []trove.MemoryVersion{}
	if nulls {
		var w where
		w.add(`store_id = ? AND path IS NULL AND memory_id COLLATE "C" > ?`, p.StoreID, afterMID)
		first := w.sql()
		next := `store_id = $1 AND path IS NULL AND memory_id COLLATE "C" > x.wmid COLLATE "C"`
		vs, err := t.walkPairs(ctx, p, &w, first, next, "true", p.Limit)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	if len(out) < p.Limit {
		var w where
		w.add("store_id = ?", p.StoreID)
		if inclusive {
			w.add("path >= ?", startPath)
		} else {
			w.add(`(path, memory_id COLLATE "C") > (?, ? COLLATE "C")`, startPath, afterMID)
		}
		first := w.sql()
		next := `store_id = $1 AND (path, memory_id COLLATE "C") > (x.wpath, x.wmid COLLATE "C")`
		inRange := "true"
		switch {
		case p.Path != "":
			w.args = append(w.args, p.Path)
			inRange = fmt.Sprintf("n.path = $%d", len(w.args))
		case p.Prefix != "":
			w.args = append(w.args, p.Prefix)
			inRange = fmt.Sprintf("starts_with(n.path, $%d)", len(w.args))
		}
		vs, err := t.walkPairs(ctx, p, &w, first, next, inRange, p.Limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	if p.MaxBytes > 0 {
		budget := p.MaxBytes
		for i, v := range out {
			if v.Content != nil {
				budget -= len(*v.Content)
			}
			if budget < 0 {
				return out[:i+1], nil
			}
		}
	}
	return out, nil
}

// walkPairs runs asOfWalk's recursive query over one region of the order:
// first selects the region's first pair (the store ID is $1), next the
// pair after x (the previous step), inRange is false for a pair n past
// the filter's range; it returns up to limit versions as of p.Seq, in
// order, stopping its read past p.MaxBytes of content as queryVersionsMax
// does (asOfWalk applies the budget across both regions). w holds first's
// arguments.
func (t *tx) walkPairs(ctx context.Context, p storage.VersionAsOfParams, w *where, first, next, inRange string, limit int) ([]trove.MemoryVersion, error) {
	w.args = append(w.args, p.Seq, p.StoreID, limit)
	seq, store, lim := len(w.args)-2, len(w.args)-1, len(w.args)
	// keep(n) is the seq of n's memory as of S when that version is at
	// n's path and not a deletion, else NULL. It is selected in a lateral
	// subquery with OFFSET 0, which the planner does not flatten: flattened,
	// it ran twice per pair, once per use of k.s.
	keep := fmt.Sprintf(`(SELECT v.seq FROM versions AS v WHERE v.store_id = $1 AND v.seq =
			(SELECT y.seq FROM versions AS y WHERE y.memory_id = n.memory_id AND y.seq <= $%d AND y.store_id COLLATE "C" = $%d
				ORDER BY y.seq DESC LIMIT 1)
			AND v.path IS NOT DISTINCT FROM n.path AND v.operation <> 'deleted')`, seq, store)
	q := fmt.Sprintf(`WITH RECURSIVE walk (wpath, wmid, wseq, cnt) AS (
			SELECT n.path, n.memory_id, k.s, (k.s IS NOT NULL)::int
			FROM (SELECT path, memory_id FROM versions WHERE %[2]s ORDER BY path, memory_id COLLATE "C" LIMIT 1) AS n
				CROSS JOIN LATERAL (SELECT %[1]s AS s OFFSET 0) AS k
			WHERE %[4]s
		UNION ALL
			SELECT n.path, n.memory_id, k.s, x.cnt + (k.s IS NOT NULL)::int
			FROM walk AS x
				CROSS JOIN LATERAL (SELECT path, memory_id FROM versions WHERE %[3]s ORDER BY path, memory_id COLLATE "C" LIMIT 1) AS n
				CROSS JOIN LATERAL (SELECT %[1]s AS s OFFSET 0) AS k
			WHERE x.cnt < $%[5]d AND %[4]s
		)
		SELECT %[6]s FROM walk JOIN versions ON versions.store_id = $1 AND versions.seq = walk.wseq
		ORDER BY walk.wpath, walk.wmid COLLATE "C" LIMIT $%[5]d`, keep, first, next, inRange, lim, versionCols(p.WithContent))
	return t.queryVersionsMax(ctx, p.MaxBytes, q, w.args...)
}

// storeOnly is the condition "alias.store_id = ?" in a form that no index
// serves (a collation other than the index's: for the deterministic
// collations of IDs, the same equality). It goes with a condition on
// memory_id: one memory's versions are few and versions_memory_created or
// versions_by_memory_seq finds them, but without statistics (a database
// just bulk-loaded and not yet analyzed) the planner ANDs in a bitmap of
// the store's whole history from versions_by_seq, so a read of one memory
// cost what the store's history did (docs/perf/scale.md: 68 ms at 25,000
// versions).
func storeOnly(alias string) string { return alias + `.store_id COLLATE "C" = ?` }

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
