package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var (
	_ storage.Dumper = (*DB)(nil)
	_ storage.Loader = (*DB)(nil)
)

// pgColumn maps a backup column (table.column in storage.BackupTables'
// naming) to this schema's name for it, where the two differ.
var pgColumn = map[string]string{"session_stores.position": "ord"}

func columnName(table, col string) string {
	if n, ok := pgColumn[table+"."+col]; ok {
		return n
	}
	return col
}

// pgSchema is the database's tables as storage.CheckBackupSchema wants
// them (generated columns and the search index's tables left out: a load
// queues its memories for the index; names mapped back through pgColumn),
// with each column's PostgreSQL type.
type pgSchema struct {
	cols  map[string][]string
	types map[string]string // "table.column" (backup naming) → data_type
}

func readSchema(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (*pgSchema, error) {
	rows, err := q.Query(ctx, `SELECT c.table_name, c.column_name, c.data_type
		FROM information_schema.columns AS c
		JOIN information_schema.tables AS t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.is_generated = 'NEVER'
			AND c.table_name NOT IN ('memories_fts', 'memories_search_queue')
		ORDER BY c.table_name, c.ordinal_position`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	back := map[string]string{}
	for k, v := range pgColumn {
		table, _, _ := strings.Cut(k, ".")
		back[table+"."+v] = k
	}
	s := &pgSchema{cols: map[string][]string{}, types: map[string]string{}}
	for rows.Next() {
		var table, col, typ string
		if err := rows.Scan(&table, &col, &typ); err != nil {
			return nil, translate(err)
		}
		if k, ok := back[table+"."+col]; ok {
			_, col, _ = strings.Cut(k, ".")
		}
		s.cols[table] = append(s.cols[table], col)
		s.types[table+"."+col] = typ
	}
	return s, translate(rows.Err())
}

// Dump is storage.Dumper.Dump: one REPEATABLE READ READ ONLY transaction
// (one snapshot, writers go on) on a pooled connection, without the
// statement and idle timeouts (a dump's SELECT runs as long as its reader
// takes), one SELECT per table in primary-key order, rows streamed from the
// server as they are read.
func (db *DB) Dump(ctx context.Context, w storage.DumpWriter) error {
	return db.withConn(ctx, func(pc *pgxpool.Conn) (err error) {
		defer recoverTo(&err)
		tx, err := pc.Conn().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return &beginError{err: translate(err), retry: pc.Conn().IsClosed()}
		}
		defer db.endTx(pc, tx)
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0"); err != nil {
			return translate(err)
		}
		s, err := readSchema(ctx, tx)
		if err != nil {
			return err
		}
		if err := storage.CheckBackupSchema(s.cols); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_version").Scan(&have); err != nil {
			return translate(err)
		}
		info := storage.DumpInfo{Driver: "postgres", SchemaVersion: have, Rows: map[string]int64{}, At: time.Now().UTC()}
		for _, t := range storage.BackupTables {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{t.Name}.Sanitize()).Scan(&n); err != nil {
				return translate(err)
			}
			info.Rows[t.Name] = n
		}
		if err := w.Begin(info); err != nil {
			return err
		}
		for i := range storage.BackupTables {
			if err := dumpTable(ctx, tx, s, &storage.BackupTables[i], w); err != nil {
				return err
			}
		}
		return nil
	})
}

// endTx rolls back tx, dropping the connection when that fails.
func (db *DB) endTx(pc *pgxpool.Conn, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.Background(), db.acquireTimeout)
	defer cancel()
	if err := tx.Rollback(rctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_ = pc.Conn().Close(cctx)
	}
}

func dumpTable(ctx context.Context, tx pgx.Tx, s *pgSchema, t *storage.BackupTable, w storage.DumpWriter) error {
	sel := make([]string, len(t.Columns))
	dest := make([]any, len(t.Columns))
	jsonb := make([]bool, len(t.Columns))
	for i, c := range t.Columns {
		name := pgx.Identifier{columnName(t.Name, c.Name)}.Sanitize()
		typ := s.types[t.Name+"."+c.Name]
		sel[i] = name
		switch {
		case c.Type == storage.ColText && typ == "bytea", c.Type == storage.ColBytes:
			dest[i] = new([]byte)
		case c.Type == storage.ColText:
			if typ == "jsonb" {
				sel[i] = name + "::text"
				jsonb[i] = true
			}
			dest[i] = new(*string)
		case c.Type == storage.ColInt:
			dest[i] = new(*int64)
		case c.Type == storage.ColTime:
			dest[i] = new(*time.Time)
		case c.Type == storage.ColBool:
			dest[i] = new(*bool)
		case c.Type == storage.ColStrings:
			dest[i] = new([]string)
		default:
			return fmt.Errorf("postgres: no dump rule for %s.%s of type %s", t.Name, c.Name, c.Type)
		}
	}
	key := make([]string, len(t.Key))
	for i, k := range t.Key {
		key[i] = pgx.Identifier{columnName(t.Name, k)}.Sanitize()
	}
	rows, err := tx.Query(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+pgx.Identifier{t.Name}.Sanitize()+` ORDER BY `+strings.Join(key, ", "))
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	row := make([]any, len(t.Columns))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return translate(err)
		}
		for i, c := range t.Columns {
			var v any
			switch d := dest[i].(type) {
			case *[]byte:
				if *d != nil {
					if c.Type == storage.ColText {
						v = string(*d)
					} else {
						v = *d
					}
				}
			case **string:
				if *d != nil {
					v = **d
					if jsonb[i] {
						if v, err = canonicalJSON(**d); err != nil {
							return fmt.Errorf("postgres: %s.%s: %w", t.Name, c.Name, err)
						}
					}
				}
			case **int64:
				if *d != nil {
					v = **d
				}
			case **time.Time:
				if *d != nil {
					v = (**d).UTC()
				}
			case **bool:
				if *d != nil {
					v = **d
				}
			case *[]string:
				if *d != nil {
					v = *d
				} else {
					v = []string{}
				}
			}
			if v == nil && !c.Null {
				return fmt.Errorf("postgres: %s.%s holds NULL", t.Name, c.Name)
			}
			row[i] = v
		}
		if err := w.Row(t, row); err != nil {
			return err
		}
	}
	return translate(rows.Err())
}

// Load is storage.Loader.Load: one READ COMMITTED transaction without the
// statement and idle timeouts, every backed-up table locked EXCLUSIVE
// first (readers go on, writers wait until the load ends), rows added with
// COPY. The memories' row trigger is off for the transaction
// (trove.bulk_count, as in MemoryInsertBatch) and the stores' counters are
// counted once at the end.
func (db *DB) Load(ctx context.Context, fn func(storage.LoadTx) error) error {
	err := db.load(ctx, fn)
	if err == nil {
		db.noteWrite() // the loaded memories are queued for the search index
	}
	return err
}

func (db *DB) load(ctx context.Context, fn func(storage.LoadTx) error) error {
	return db.withConn(ctx, func(pc *pgxpool.Conn) (err error) {
		defer recoverTo(&err)
		tx, err := pc.Conn().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadWrite})
		if err != nil {
			return &beginError{err: translate(err), retry: pc.Conn().IsClosed()}
		}
		committed := false
		defer func() {
			if !committed {
				db.endTx(pc, tx)
			}
		}()
		names := []string{pgx.Identifier{"console_sessions"}.Sanitize()}
		for _, t := range storage.BackupTables {
			names = append(names, pgx.Identifier{t.Name}.Sanitize())
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(names, ", ")+" IN EXCLUSIVE MODE"); err != nil {
			return translate(err)
		}
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0; SET LOCAL trove.bulk_count = 'on'"); err != nil {
			return translate(err)
		}
		s, err := readSchema(ctx, tx)
		if err != nil {
			return err
		}
		if err := storage.CheckBackupSchema(s.cols); err != nil {
			return err
		}
		for _, name := range names {
			var full bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+name+`)`).Scan(&full); err != nil {
				return translate(err)
			}
			if full {
				return trove.Errorf(trove.ECONFLICT, "the PostgreSQL database is not empty (table %s has rows): a backup is restored into a new, empty database only", strings.Trim(name, `"`))
			}
		}
		if err := fn(&loadTx{tx: tx, s: s}); err != nil {
			return err
		}
		// Identity columns (webhook_deliveries.seq) took the backup's
		// values; their sequences go on after the largest.
		if _, err := tx.Exec(ctx, `DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES' LOOP
		EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, %L), coalesce((SELECT max(%I) FROM %I), 0) + 1, false)',
			r.table_name, r.column_name, r.column_name, r.table_name);
	END LOOP;
END $$`); err != nil {
			return translate(err)
		}
		// A backup from before dreams were jobs: their jobs.
		if _, err := tx.Exec(ctx, `INSERT INTO jobs (kind, key, pending, wake_seq, woken_at)
			SELECT $1, id, true, 1, created_at FROM dreams WHERE status IN ('pending', 'running')
			ON CONFLICT (kind, key) DO NOTHING`, storage.JobDream); err != nil {
			return translate(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE stores SET memory_count = c.n, content_bytes = c.b
			FROM (SELECT store_id, count(*) AS n, coalesce(sum(size_bytes), 0) AS b FROM memories GROUP BY store_id) AS c
			WHERE stores.id = c.store_id`); err != nil {
			return translate(err)
		}
		if err := tx.Commit(ctx); err != nil {
			return translate(err)
		}
		committed = true
		return nil
	})
}

// loadTx is storage.LoadTx inside Load.
type loadTx struct {
	tx pgx.Tx
	s  *pgSchema
}

func (l *loadTx) Insert(ctx context.Context, t *storage.BackupTable, next func() ([]any, error)) (int64, error) {
	names := make([]string, len(t.Columns))
	bytea := make([]bool, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = columnName(t.Name, c.Name)
		bytea[i] = c.Type == storage.ColText && l.s.types[t.Name+"."+c.Name] == "bytea"
	}
	src := &copySource{t: t, next: next, bytea: bytea, vals: make([]any, len(t.Columns))}
	n, err := l.tx.CopyFrom(ctx, pgx.Identifier{t.Name}, names, src)
	if src.err != nil {
		return n, src.err
	}
	if err != nil {
		err = translate(err)
		if trove.ErrorCode(err) == trove.EINVALID {
			return n, &trove.Error{Code: trove.EINVALID, Err: err, Message: t.Name +
				": a row holds text PostgreSQL cannot store (a NUL character, or content that is not UTF-8); such a backup can be restored into SQLite only"}
		}
		return n, fmt.Errorf("%s: %w", t.Name, err)
	}
	return n, nil
}

// copySource feeds CopyFrom from next, checking and converting each row.
type copySource struct {
	t     *storage.BackupTable
	next  func() ([]any, error)
	bytea []bool
	vals  []any
	err   error
	n     int64
}

func (s *copySource) Next() bool {
	row, err := s.next()
	if errors.Is(err, io.EOF) {
		return false
	}
	if err == nil && len(row) != len(s.t.Columns) {
		err = fmt.Errorf("%s: a row of %d values for %d columns", s.t.Name, len(row), len(s.t.Columns))
	}
	for i := 0; err == nil && i < len(row); i++ {
		c := &s.t.Columns[i]
		if err = storage.CheckBackupValue(s.t, c, row[i]); err == nil {
			s.vals[i] = row[i]
			if str, ok := row[i].(string); ok && s.bytea[i] {
				s.vals[i] = []byte(str)
			}
		}
	}
	if err != nil {
		s.err = err
		return false
	}
	s.n++
	return true
}

func (s *copySource) Values() ([]any, error) { return s.vals, nil }
func (s *copySource) Err() error             { return s.err }

// canonicalJSON re-encodes JSON text the way the rest of Trove writes it
// (encoding/json: compact, object keys sorted), so that a jsonb column,
// which PostgreSQL keeps in its own order and spacing, dumps the same text
// as the other driver's column.
func canonicalJSON(s string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// recoverTo turns a panic of the caller (a DumpWriter's, a load's source)
// into an EINTERNAL error, so that the transaction ends and its
// connection goes back to the pool.
func recoverTo(err *error) {
	if p := recover(); p != nil {
		*err = &trove.Error{Code: trove.EINTERNAL, Message: "internal error", Err: fmt.Errorf("panic: %v", p)}
	}
}
