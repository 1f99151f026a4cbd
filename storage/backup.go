package storage

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// A whole-deployment backup is every row of the tables below, read by
// Dumper.Dump from one snapshot and written back by Loader.Load into an
// empty database, whatever the two drivers are. The tables and columns are
// named once, here, in a driver-independent form (the SQLite names; a
// driver maps a column it names differently itself); each driver builds
// its statements from BackupTables, so a new table is backed up by adding
// it to BackupTables (or, with the reason, to BackupExcluded) and nowhere
// else. Both drivers check their database against these lists before they
// dump or load (CheckBackupSchema): a table or column they do not name
// makes the backup fail rather than leave it out.

// ColumnType is the driver-independent type of a backed-up column and of
// the Go value that carries it in Dump and Load (nil for NULL).
type ColumnType string

const (
	// ColText is text as Go string: byte for byte, whatever the driver
	// stores it as (PostgreSQL keeps memory content as bytea, session
	// metadata as jsonb).
	ColText ColumnType = "text"
	// ColInt is an integer as int64.
	ColInt ColumnType = "int"
	// ColBytes is binary (hashes) as []byte.
	ColBytes ColumnType = "bytes"
	// ColTime is a time with microsecond precision as a UTC time.Time.
	ColTime ColumnType = "time"
	// ColBool is a boolean as bool.
	ColBool ColumnType = "bool"
	// ColStrings is a list of strings as []string (never nil).
	ColStrings ColumnType = "strings"
)

// BackupColumn is one column of a backed-up table.
type BackupColumn struct {
	Name string
	Type ColumnType
	Null bool // may be NULL (nil)
}

// BackupTable is one backed-up table: its columns in the order of every
// row's values, and the primary key rows are dumped in order of.
type BackupTable struct {
	Name    string
	Columns []BackupColumn
	Key     []string
	// Derived are the table's columns that the database computes itself
	// from other rows (trigger-kept counters): not backed up, and right
	// after Load whatever order the rows came in.
	Derived []string
}

// Column returns the column named name, or nil.
func (t *BackupTable) Column(name string) *BackupColumn {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Names returns the column names in order.
func (t *BackupTable) Names() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

func cols(spec ...string) []BackupColumn {
	out := make([]BackupColumn, 0, len(spec))
	for _, s := range spec {
		name, typ, _ := strings.Cut(s, " ")
		null := strings.HasSuffix(typ, "?")
		out = append(out, BackupColumn{Name: name, Type: ColumnType(strings.TrimSuffix(typ, "?")), Null: null})
	}
	return out
}

// BackupTables are the tables a backup holds, parents before the tables
// whose rows name them (foreign keys), so Load inserts them in this order.
var BackupTables = []BackupTable{
	{Name: "stores", Key: []string{"id"}, Derived: []string{"memory_count", "content_bytes"}, Columns: cols(
		"id text", "workspace_id text", "name text", "description text", "metadata text",
		"created_at time", "updated_at time", "archived_at time?")},
	{Name: "memories", Key: []string{"id"}, Columns: cols(
		"id text", "store_id text", "path text", "content text", "size_bytes int", "sha256 text",
		"version_id text", "created_at time", "updated_at time")},
	{Name: "versions", Key: []string{"id"}, Columns: cols(
		"id text", "store_id text", "memory_id text", "operation text", "path text?", "content text?",
		"size_bytes int?", "sha256 text?", "created_by_type text?", "created_by_id text?", "created_at time",
		"redacted_at time?", "redacted_by_type text?", "redacted_by_id text?", "seq int",
		"leaf_hash bytes?", "chain_hash bytes?", "origin_store_id text?", "origin_version_id text?")},
	// A store's counter row: the newest seq ever handed out (never reused,
	// so not recomputable once retention deleted versions), the chain head
	// and the retained versions.
	{Name: "version_seqs", Key: []string{"store_id"}, Columns: cols(
		"store_id text", "last int", "head bytes?", "retained int")},
	{Name: "api_keys", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "name text", "hint text", "secret_hash bytes",
		"created_at time", "revoked_at time?")},
	{Name: "sessions", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "token_hash bytes", "created_by_type text", "created_by_id text",
		"created_at time", "ended_at time?", "event_count int", "event_bytes int",
		"title text", "metadata text", "status text", "updated_at time", "archived_at time?",
		"agent_id text", "agent_version int", "environment_id text",
		"usage_input_tokens int", "usage_output_tokens int", "usage_cache_read_tokens int", "usage_cache_creation_tokens int",
		"active_micros int", "running_since time?", "budget_currency text", "budget_amount text")},
	{Name: "session_stores", Key: []string{"session_id", "position"}, Columns: cols(
		"session_id text", "position int", "store_id text", "access text", "name text",
		"description text", "instructions text", "mount_path text")},
	{Name: "session_events", Key: []string{"session_id", "seq"}, Columns: cols(
		"session_id text", "seq int", "id text", "type text", "body text",
		"created_by_type text", "created_by_id text", "processed_at time", "ref_id text?")},
	{Name: "dreams", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "status text", "input_store_id text", "session_ids strings",
		"model text", "model_speed text", "instructions text", "output_behavior text", "output_store_id text",
		"session_id text", "input_tokens int", "output_tokens int", "cache_read_tokens int", "cache_creation_tokens int",
		"error_type text?", "error_message text?", "created_by_type text", "created_by_id text",
		"created_at time", "ended_at time?", "archived_at time?")},
	{Name: "agents", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "version int", "created_at time", "updated_at time", "archived_at time?")},
	{Name: "agent_versions", Key: []string{"agent_id", "version"}, Columns: cols(
		"agent_id text", "version int", "name text", "description text", "model_id text", "model_speed text",
		"model_effort text", "system text", "tools text", "metadata text", "created_at time")},
	{Name: "environments", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "name text", "description text?", "type text", "metadata text",
		"created_at time", "updated_at time", "archived_at time?")},
	{Name: "environment_keys", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "environment_id text", "name text", "hint text", "secret_hash bytes",
		"created_at time", "revoked_at time?")},
	{Name: "work_items", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "environment_id text", "session_id text", "state text", "metadata text",
		"created_at time", "polled_at time?", "acknowledged_at time?", "started_at time?", "latest_heartbeat_at time?",
		"stop_requested_at time?", "stopped_at time?", "last_heartbeat text", "lease_ttl_ms int",
		"lease_expires_at time?", "worker_id text", "claims int", "token_hash bytes?")},
	{Name: "work_pollers", Key: []string{"environment_id", "worker_id"}, Columns: cols(
		"environment_id text", "worker_id text", "polled_at time")},
	{Name: "jobs", Key: []string{"kind", "key"}, Columns: cols(
		"kind text", "key text", "pending bool", "wake_seq int", "lease_owner text",
		"lease_expires_at time?", "attempts int", "woken_at time")},
	// Webhook endpoints with their signing secrets (kept as is: receivers
	// verify with them) and the outbox, delivered and pending, so that a
	// restored deployment sends what it had not sent yet.
	{Name: "webhooks", Key: []string{"id"}, Columns: cols(
		"id text", "workspace_id text", "name text", "description text", "url text", "enabled_events text",
		"state text", "disabled_reason text", "secret text", "created_at time", "updated_at time")},
	{Name: "webhook_deliveries", Key: []string{"seq"}, Columns: cols(
		"seq int", "webhook_id text", "event_id text", "event_type text", "payload bytes", "created_at time",
		"status text", "attempts int", "next_attempt_at time", "last_attempt_at time?", "last_status int",
		"last_error text", "delivered_at time?")},
}

// BackupExcluded are the tables a backup leaves out on purpose, with why.
// Driver-internal tables (SQLite's own and its search index's, the
// migrations' bookkeeping) are left out by each driver, not listed here.
var BackupExcluded = map[string]string{
	"console_sessions": "browser sign-ins: a restored deployment signs its console users in again",
	"workspace_stats":  "derived: the stores per workspace, counted again by the stores' triggers as Load inserts them",
	"schema_version":   "the target's own migrations; a backup names the schema by its tables and columns",
}

// BackupRetired are columns that backups written by an older Trove hold
// and this one no longer has, by table, with their types: a restore reads
// and drops their values. A row that needed one is made whole by the
// loader (see Loader.Load).
var BackupRetired = map[string][]BackupColumn{
	// The dreams' own lease (SQLite 0016, PostgreSQL 0017): a dream's lease
	// is its job's now (JobDream).
	"dreams": cols("lease_owner text", "lease_expires_at time?", "attempts int"),
}

// BackupRetiredColumn returns the retired column name of table, or nil.
func BackupRetiredColumn(table, name string) *BackupColumn {
	for i, c := range BackupRetired[table] {
		if c.Name == name {
			return &BackupRetired[table][i]
		}
	}
	return nil
}

// BackupTableNamed returns the table of BackupTables named name, or nil.
func BackupTableNamed(name string) *BackupTable {
	for i := range BackupTables {
		if BackupTables[i].Name == name {
			return &BackupTables[i]
		}
	}
	return nil
}

// CheckBackupSchema compares a database's tables and their columns
// (actual: table → column names, in the BackupTables naming, generated and
// driver-internal ones left out by the driver) with BackupTables and
// BackupExcluded, and returns an error naming every table or column that a
// backup would leave out or that the database lacks: the guard that a table
// added without a backup rule fails loudly rather than disappearing from
// backups.
func CheckBackupSchema(actual map[string][]string) error {
	var problems []string
	for name, have := range actual {
		if _, ok := BackupExcluded[name]; ok {
			continue
		}
		t := BackupTableNamed(name)
		if t == nil {
			problems = append(problems, fmt.Sprintf("table %s is not covered by backups (not a table of Trove's: give Trove a database or schema of its own; "+
				"a new table of Trove's: add it to storage.BackupTables or storage.BackupExcluded)", name))
			continue
		}
		for _, c := range have {
			if t.Column(c) == nil && !slices.Contains(t.Derived, c) {
				problems = append(problems, fmt.Sprintf("column %s.%s is not covered by backups (add it to storage.BackupTables)", name, c))
			}
		}
		for _, c := range t.Columns {
			if !slices.Contains(have, c.Name) {
				problems = append(problems, fmt.Sprintf("column %s.%s of the backup format is missing from the database", name, c.Name))
			}
		}
	}
	for _, t := range BackupTables {
		if _, ok := actual[t.Name]; !ok {
			problems = append(problems, fmt.Sprintf("table %s of the backup format is missing from the database", t.Name))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return fmt.Errorf("the database schema does not match the backup format: %s", strings.Join(problems, "; "))
}

// DumpInfo is what Dump tells its writer before the first row.
type DumpInfo struct {
	Driver        string // "sqlite", "postgres"
	SchemaVersion int    // the driver's migration number
	// Rows is each BackupTables table's row count in the snapshot, so a
	// reader can show progress and check that nothing is missing.
	Rows map[string]int64
	// At is when the snapshot was taken (the clock of the process).
	At time.Time
}

// DumpWriter receives a dump.
type DumpWriter interface {
	// Begin is called once, before any row.
	Begin(info DumpInfo) error
	// Row is called for each row: t is one of BackupTables (in that
	// order), row holds t's column values in order with the Go types of
	// ColumnType (nil for NULL). row and what it holds may be reused once
	// Row returns.
	Row(t *BackupTable, row []any) error
}

// Dumper is implemented by drivers that can dump a whole deployment.
type Dumper interface {
	// Dump calls w.Begin, then w.Row for every row of every table of
	// BackupTables in that order, each table's rows by its Key, all read
	// from one snapshot (a consistent backup while writes go on). It
	// streams: a row is read, handed to w and dropped. It fails, before
	// Begin, when the database's schema is not the one BackupTables
	// describes (CheckBackupSchema). A w error ends it and is returned as
	// is.
	Dump(ctx context.Context, w DumpWriter) error
}

// Loader is implemented by drivers that can load a dump.
type Loader interface {
	// Load runs fn once in one read-write transaction, committed when fn
	// returns nil and rolled back otherwise, so a load lands whole or not
	// at all. Before fn it refuses, with ECONFLICT, a database holding any
	// row in a BackupTables table or console_sessions (a load goes into a
	// new database only), and keeps other writers out until it ends. After
	// fn it makes every Derived column right, and gives every pending or
	// running dream without a job its JobDream job, free (a backup written
	// before dreams were jobs: such a dream is run, or failed runner_lost,
	// by the next runner). No other call of the driver should run
	// meanwhile.
	Load(ctx context.Context, fn func(LoadTx) error) error
}

// LoadTx inserts rows during Load.
type LoadTx interface {
	// Insert inserts into t the rows next returns, until it returns
	// io.EOF, and returns how many it inserted. Each row holds t's
	// column values in order with the Go types of ColumnType (nil for
	// NULL); next's other errors end Insert and are returned as is.
	// Values are stored as they are: IDs, seqs, hashes and times are
	// kept, no trigger-kept counter is counted twice.
	Insert(ctx context.Context, t *BackupTable, next func() ([]any, error)) (int64, error)
}

// CheckBackupValue reports whether v is a value of column c: nil only when
// c.Null, else the Go type of c.Type (a UTC time.Time for ColTime, a
// non-nil []string for ColStrings). Loaders call it on every value before
// converting it to the driver's own form.
func CheckBackupValue(t *BackupTable, c *BackupColumn, v any) error {
	if v == nil {
		if c.Null {
			return nil
		}
		return fmt.Errorf("%s.%s: NULL in a column that cannot be NULL", t.Name, c.Name)
	}
	ok := false
	switch c.Type {
	case ColText:
		_, ok = v.(string)
	case ColInt:
		_, ok = v.(int64)
	case ColBytes:
		_, ok = v.([]byte)
	case ColTime:
		var tm time.Time
		if tm, ok = v.(time.Time); ok && tm.Location() != time.UTC {
			return fmt.Errorf("%s.%s: time %v is not in UTC", t.Name, c.Name, tm)
		}
	case ColBool:
		_, ok = v.(bool)
	case ColStrings:
		var s []string
		s, ok = v.([]string)
		ok = ok && s != nil
	}
	if !ok {
		return fmt.Errorf("%s.%s: a %T is not a value of type %s", t.Name, c.Name, v, c.Type)
	}
	return nil
}
