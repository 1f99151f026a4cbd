package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var (
	_ storage.Dumper = (*DB)(nil)
	_ storage.Loader = (*DB)(nil)
)

// backupSchema returns the database's tables and columns as
// storage.CheckBackupSchema wants them: SQLite's own tables and the search
// index's (virtual and shadow tables; its queue: the rows a load inserts
// queue themselves; and the stores' search keys, which the stores a load
// inserts are given afresh) are left out.
func backupSchema(ctx context.Context, q querier) (map[string][]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT t.name, c.name FROM pragma_table_list AS t, pragma_table_info(t.name) AS c
		WHERE t.schema = 'main' AND t.type = 'table' AND t.name NOT LIKE 'sqlite\_%' ESCAPE '\'
			AND t.name NOT IN ('memories_search_queue', 'store_search_keys')
		ORDER BY t.name, c.cid`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, translate(err)
		}
		out[table] = append(out[table], col)
	}
	return out, translate(rows.Err())
}

// Dump is storage.Dumper.Dump: one read transaction on a connection of the
// read pool (one WAL snapshot, so writers go on meanwhile), one SELECT per
// table in primary-key order, each row converted and handed on as it is
// read.
func (db *DB) Dump(ctx context.Context, w storage.DumpWriter) error {
	return db.withReader(ctx, func(rc *readConn) (healthy bool, err error) {
		defer recoverTo(&err)
		c := rc.c
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			return false, translate(err)
		}
		defer func() {
			_, rerr := c.ExecContext(context.Background(), "ROLLBACK")
			healthy = rerr == nil && err == nil
		}()
		actual, err := backupSchema(ctx, c) // the snapshot starts here
		if err != nil {
			return false, err
		}
		if err := storage.CheckBackupSchema(actual); err != nil {
			return false, err
		}
		have, err := readSchemaVersion(ctx, c)
		if err != nil {
			return false, err
		}
		info := storage.DumpInfo{Driver: "sqlite", SchemaVersion: have, Rows: map[string]int64{}, At: time.Now().UTC()}
		for _, t := range storage.BackupTables {
			var n int64
			if err := c.QueryRowContext(ctx, `SELECT count(*) FROM `+t.Name).Scan(&n); err != nil {
				return false, translate(err)
			}
			info.Rows[t.Name] = n
		}
		if err := w.Begin(info); err != nil {
			return false, err
		}
		for i := range storage.BackupTables {
			if err := dumpTable(ctx, c, &storage.BackupTables[i], w); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

func dumpTable(ctx context.Context, c *sql.Conn, t *storage.BackupTable, w storage.DumpWriter) error {
	rows, err := c.QueryContext(ctx, `SELECT `+strings.Join(t.Names(), ", ")+` FROM `+t.Name+` ORDER BY `+strings.Join(t.Key, ", "))
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	raw := make([]any, len(t.Columns))
	dest := make([]any, len(t.Columns))
	for i := range raw {
		dest[i] = &raw[i]
	}
	row := make([]any, len(t.Columns))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return translate(err)
		}
		for i := range t.Columns {
			v, err := fromSQLite(t, &t.Columns[i], raw[i])
			if err != nil {
				return err
			}
			row[i] = v
		}
		if err := w.Row(t, row); err != nil {
			return err
		}
	}
	return translate(rows.Err())
}

// fromSQLite converts a stored value to its storage.ColumnType form.
func fromSQLite(t *storage.BackupTable, c *storage.BackupColumn, v any) (any, error) {
	if v == nil {
		if !c.Null {
			return nil, fmt.Errorf("sqlite: %s.%s holds NULL", t.Name, c.Name)
		}
		return nil, nil
	}
	bad := func() (any, error) {
		return nil, fmt.Errorf("sqlite: %s.%s holds a %T, not a %s", t.Name, c.Name, v, c.Type)
	}
	switch c.Type {
	case storage.ColText:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case storage.ColBytes:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
	case storage.ColInt, storage.ColTime, storage.ColBool:
		n, ok := v.(int64)
		if !ok {
			return bad()
		}
		switch c.Type {
		case storage.ColTime:
			return fromMicros(n), nil
		case storage.ColBool:
			return n != 0, nil
		}
		return n, nil
	case storage.ColStrings:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		var out []string
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("sqlite: %s.%s holds %q, not a JSON list of strings", t.Name, c.Name, s)
		}
		return nonNilStrings(out), nil
	}
	return bad()
}

// toSQLite converts a storage.ColumnType value (checked) to what the
// column stores.
func toSQLite(c *storage.BackupColumn, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Type {
	case storage.ColTime:
		return micros(v.(time.Time)), nil
	case storage.ColBool:
		if v.(bool) {
			return int64(1), nil
		}
		return int64(0), nil
	case storage.ColStrings:
		b, err := json.Marshal(v.([]string))
		return string(b), err
	}
	return v, nil
}

// Load is storage.Loader.Load: the writer connection to itself (no group
// commit meanwhile), one IMMEDIATE transaction, so SQLite's write lock
// keeps every other writer (another process too) out until it ends.
func (db *DB) Load(ctx context.Context, fn func(storage.LoadTx) error) error {
	if db.needMigrate.Load() {
		return db.errMigrate()
	}
	return db.submit(ctx, &writeReq{ctx: ctx, raw: func(_ context.Context, c *sql.Conn) (err error) {
		defer recoverTo(&err) // runs after the rollback below: the committer goes on
		bg := context.Background()
		defer db.stores.reset()
		if _, err := c.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
			return translate(err)
		}
		committed := false
		defer func() {
			if !committed {
				if _, rerr := c.ExecContext(bg, "ROLLBACK"); rerr != nil {
					db.log.Debug("sqlite: rollback of a load", "err", rerr)
				}
			}
		}()
		actual, err := backupSchema(bg, c)
		if err != nil {
			return err
		}
		if err := storage.CheckBackupSchema(actual); err != nil {
			return err
		}
		tables := []string{"console_sessions"}
		for _, t := range storage.BackupTables {
			tables = append(tables, t.Name)
		}
		for _, name := range tables {
			var n int
			if err := c.QueryRowContext(bg, `SELECT EXISTS (SELECT 1 FROM `+name+`)`).Scan(&n); err != nil {
				return translate(err)
			}
			if n != 0 {
				return trove.Errorf(trove.ECONFLICT, "the database %s is not empty (table %s has rows): a backup is restored into a new, empty database only", db.path, name)
			}
		}
		if err := fn(&loadTx{c: c}); err != nil {
			return err
		}
		if _, err := c.ExecContext(bg, loadDreamJobs, storage.JobDream); err != nil {
			return translate(err)
		}
		if _, err := c.ExecContext(bg, "COMMIT"); err != nil {
			return translate(err)
		}
		committed = true
		return nil
	}})
}

// loadDreamJobs gives every pending or running dream without a job its job
// (storage.Loader.Load: a backup from before dreams were jobs).
const loadDreamJobs = `INSERT INTO jobs (kind, key, pending, wake_seq, woken_at)
	SELECT ?1, id, 1, 1, created_at FROM dreams WHERE status IN ('pending', 'running')
	ON CONFLICT (kind, key) DO NOTHING`

// loadTx is storage.LoadTx on the writer connection inside Load.
type loadTx struct{ c *sql.Conn }

func (l *loadTx) Insert(ctx context.Context, t *storage.BackupTable, next func() ([]any, error)) (int64, error) {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(t.Columns)), ", ")
	st, err := l.c.PrepareContext(context.Background(), `INSERT INTO `+t.Name+` (`+strings.Join(t.Names(), ", ")+`) VALUES (`+marks+`)`)
	if err != nil {
		return 0, translate(err)
	}
	defer st.Close()
	args := make([]any, len(t.Columns))
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, ctxError(err)
		}
		row, err := next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(row) != len(t.Columns) {
			return n, fmt.Errorf("%s: a row of %d values for %d columns", t.Name, len(row), len(t.Columns))
		}
		for i := range t.Columns {
			c := &t.Columns[i]
			if err := storage.CheckBackupValue(t, c, row[i]); err != nil {
				return n, err
			}
			if args[i], err = toSQLite(c, row[i]); err != nil {
				return n, err
			}
		}
		if _, err := st.ExecContext(context.Background(), args...); err != nil {
			return n, fmt.Errorf("%s row %d: %w", t.Name, n+1, translate(err))
		}
		n++
	}
}

// recoverTo turns a panic of the caller (a DumpWriter's, a load's source)
// into an EINTERNAL error: the read or write transaction ends and the
// driver goes on.
func recoverTo(err *error) {
	if p := recover(); p != nil {
		*err = &trove.Error{Code: trove.EINTERNAL, Message: "internal error", Err: fmt.Errorf("panic: %v", p)}
	}
}
