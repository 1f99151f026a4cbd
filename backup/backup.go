// Package backup writes a whole Trove deployment to one portable file and
// restores it into an empty database, whichever driver wrote or reads it:
// moving from SQLite to PostgreSQL (and back) is a backup then a restore.
//
// The file is a gzip-compressed stream of JSON values, one per line:
//
//	{"format":"trove-backup","version":1,"created_at":…,"source":{…},"tables":[{"name":"stores","columns":[{"name":"id","type":"text"},…],"rows":12},…]}
//	{"table":"stores","row":["memstore_…","wrkspc_…",…]}
//	…
//	{"end":true,"rows":123456}
//
// The header names the format version and, per table, the columns (name,
// type, nullable) of every row and how many rows follow; rows come table
// by table in the header's order, each row's values in its columns' order;
// the last line closes the file, so a truncated file is refused (the
// gzip checksum, checked at the end, refuses an altered one). Values: text
// as a JSON string when it is valid UTF-8, else {"base64":"…"} (so every
// byte is kept); integers as numbers; bytes (hashes) as base64 strings;
// times as RFC 3339 strings in UTC with microseconds; booleans; lists of
// strings as arrays; NULL as null. docs/backup.md describes it.
//
// What a backup holds is storage.BackupTables: every row of every table a
// deployment keeps, as stored (IDs, seqs, hash chains and heads, times,
// version contents, keys as their stored hashes), read from one snapshot
// (storage.Dumper). Restore loads it in one transaction
// (storage.Loader): all of it or nothing.
package backup

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Format and Version name the file format in its header.
const (
	Format  = "trove-backup"
	Version = 1
)

// timeLayout is how times are written: RFC 3339, UTC, microseconds.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// Header is a backup's first line.
type Header struct {
	Format    string        `json:"format"`
	Version   int           `json:"version"`
	CreatedAt string        `json:"created_at"`
	Source    Source        `json:"source"`
	Tables    []TableHeader `json:"tables"`
}

// Source says what the backup was made from (information only: a restore
// goes by the tables and columns).
type Source struct {
	Driver        string `json:"driver"`
	SchemaVersion int    `json:"schema_version"`
	Trove         string `json:"trove,omitempty"`
}

// TableHeader is one table of a backup: its columns and row count.
type TableHeader struct {
	Name    string         `json:"name"`
	Columns []ColumnHeader `json:"columns"`
	Rows    int64          `json:"rows"`
}

// ColumnHeader is one column of a table in a backup.
type ColumnHeader struct {
	Name string             `json:"name"`
	Type storage.ColumnType `json:"type"`
	Null bool               `json:"null,omitempty"`
}

// Rows returns the header's total row count.
func (h *Header) Rows() int64 {
	var n int64
	for _, t := range h.Tables {
		n += t.Rows
	}
	return n
}

// Progress is what Write and Restore report as they go.
type Progress struct {
	Table string // the table being written or loaded
	Done  int64  // rows done, all tables
	Total int64  // rows in the backup, all tables
}

// Options configure Write and Restore.
type Options struct {
	// Progress, when not nil, is called every few thousand rows and at
	// the end of each table, on the caller's goroutine.
	Progress func(Progress)
	// Trove names the writing binary in the header (Source.Trove).
	Trove string
}

const progressEvery = 5000

// Write writes a backup of the deployment d holds to w, reading every row
// from one snapshot of the database while it stays online, with bounded
// memory (a row at a time). It returns the header it wrote. On error w
// holds an incomplete backup, which Restore refuses.
func Write(ctx context.Context, w io.Writer, d storage.Dumper, opts Options) (*Header, error) {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(zw, 256<<10)
	e := &encoder{w: bw, opts: opts, counts: map[string]int64{}}
	if err := d.Dump(ctx, e); err != nil {
		return nil, err
	}
	if e.hdr == nil {
		return nil, errors.New("backup: the driver dumped no header")
	}
	for _, t := range e.hdr.Tables {
		if e.counts[t.Name] != t.Rows {
			return nil, fmt.Errorf("backup: table %s: %d rows dumped, the snapshot counted %d", t.Name, e.counts[t.Name], t.Rows)
		}
	}
	e.progress(true)
	if _, err := fmt.Fprintf(bw, "{\"end\":true,\"rows\":%d}\n", e.done); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return e.hdr, nil
}

// encoder is the storage.DumpWriter of Write.
type encoder struct {
	w      *bufio.Writer
	opts   Options
	hdr    *Header
	buf    []byte
	table  string
	counts map[string]int64
	done   int64
}

func (e *encoder) Begin(info storage.DumpInfo) error {
	h := &Header{Format: Format, Version: Version, CreatedAt: info.At.UTC().Format(timeLayout),
		Source: Source{Driver: info.Driver, SchemaVersion: info.SchemaVersion, Trove: e.opts.Trove}}
	for _, t := range storage.BackupTables {
		th := TableHeader{Name: t.Name, Rows: info.Rows[t.Name]}
		for _, c := range t.Columns {
			th.Columns = append(th.Columns, ColumnHeader(c))
		}
		h.Tables = append(h.Tables, th)
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	e.hdr = h
	_, err = e.w.Write(append(b, '\n'))
	return err
}

func (e *encoder) Row(t *storage.BackupTable, row []any) error {
	if e.table != t.Name {
		if e.table != "" {
			e.progress(true)
		}
		e.table = t.Name
	}
	b := append(e.buf[:0], `{"table":`...)
	b = strconv.AppendQuote(b, t.Name) // table names are ASCII
	b = append(b, `,"row":[`...)
	for i := range t.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, t, &t.Columns[i], row[i]); err != nil {
			return err
		}
	}
	b = append(b, "]}\n"...)
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.counts[t.Name]++
	e.done++
	if e.done%progressEvery == 0 {
		e.progress(false)
	}
	return nil
}

func (e *encoder) progress(bool) {
	if e.opts.Progress != nil && e.hdr != nil {
		e.opts.Progress(Progress{Table: e.table, Done: e.done, Total: e.hdr.Rows()})
	}
}

// appendValue appends v, a value of column c, in the file's form.
func appendValue(b []byte, t *storage.BackupTable, c *storage.BackupColumn, v any) ([]byte, error) {
	if err := storage.CheckBackupValue(t, c, v); err != nil {
		return b, fmt.Errorf("backup: %w", err)
	}
	if v == nil {
		return append(b, "null"...), nil
	}
	switch c.Type {
	case storage.ColText:
		s := v.(string)
		if !utf8.ValidString(s) {
			b = append(b, `{"base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, []byte(s))
			return append(b, `"}`...), nil
		}
		return jsontext.AppendQuote(b, s)
	case storage.ColInt:
		return strconv.AppendInt(b, v.(int64), 10), nil
	case storage.ColBytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.([]byte))
		return append(b, '"'), nil
	case storage.ColTime:
		tm := v.(time.Time)
		if y := tm.Year(); y < 1 || y > 9999 {
			return b, fmt.Errorf("backup: %s.%s: time %v is outside the years 1 to 9999", t.Name, c.Name, tm)
		}
		if tm.Nanosecond()%1000 != 0 {
			return b, fmt.Errorf("backup: %s.%s: time %v is finer than a microsecond", t.Name, c.Name, tm)
		}
		b = append(b, '"')
		b = tm.AppendFormat(b, timeLayout)
		return append(b, '"'), nil
	case storage.ColBool:
		return strconv.AppendBool(b, v.(bool)), nil
	case storage.ColStrings:
		b = append(b, '[')
		for i, s := range v.([]string) {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = jsontext.AppendQuote(b, s); err != nil {
				return b, fmt.Errorf("backup: %s.%s: %w", t.Name, c.Name, err)
			}
		}
		return append(b, ']'), nil
	}
	return b, fmt.Errorf("backup: %s.%s: unknown type %s", t.Name, c.Name, c.Type)
}

// corruptPrefix begins the message of every errCorrupt.
const corruptPrefix = "not a complete Trove backup: "

// errCorrupt is the one error of a file that is not a complete backup.
func errCorrupt(format string, args ...any) error {
	return &trove.Error{Code: trove.EINVALID, Message: corruptPrefix + fmt.Sprintf(format, args...)}
}

// isCorrupt reports whether err is an errCorrupt.
func isCorrupt(err error) bool {
	var te *trove.Error
	return errors.As(err, &te) && strings.HasPrefix(te.Message, corruptPrefix)
}
