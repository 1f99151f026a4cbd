package backup_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/backup"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/storagetest"
)

// writeBackup fills a SQLite deployment (FillDeployment, plus a memory
// whose content is not valid UTF-8, which storage keeps byte for byte) and
// returns it with its backup.
func writeBackup(t *testing.T) (storage.Driver, []byte) {
	t.Helper()
	return writeBackupOf(t, true)
}

// writeBackupOf is writeBackup, with the memory that is not UTF-8 only
// when binary (PostgreSQL cannot index it: its search column reads
// content as UTF-8, so such a backup is refused there).
func writeBackupOf(t *testing.T, binary bool) (storage.Driver, []byte) {
	t.Helper()
	src := openSQLite(t)
	stores := storagetest.FillDeployment(t, src)
	bad := "\xff\xfe not UTF-8 \x00"
	err := src.Write(context.Background(), func(tx storage.Tx) error {
		if !binary {
			return nil
		}
		return tx.MemoryInsert(context.Background(), &trove.Memory{ID: "mem_binary", StoreID: stores[0].ID, Path: "/bin.dat", Content: &bad,
			SizeBytes: len(bad), SHA256: "x", VersionID: "memver_binary", CreatedAt: stores[0].CreatedAt, UpdatedAt: stores[0].CreatedAt})
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	h, err := backup.Write(context.Background(), &buf, src.(storage.Dumper), backup.Options{Trove: "test"})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if h.Format != backup.Format || h.Version != backup.Version || h.Source.Driver != "sqlite" || h.Source.Trove != "test" {
		t.Errorf("header = %+v", h)
	}
	return src, buf.Bytes()
}

// lines returns a backup's JSON lines.
func lines(t *testing.T, b []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(raw), "\n"), "\n")
}

func gz(t *testing.T, ls []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, l := range ls {
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		zw.Write([]byte(l))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriteThenRestore(t *testing.T) {
	t.Parallel()
	src, b := writeBackup(t)
	ls := lines(t, b)
	if !strings.Contains(strings.Join(ls, ""), `{"base64":"//4gbm90IFVURi04IAA="}`) {
		t.Errorf("content that is not UTF-8 is not written as base64")
	}
	if !strings.HasPrefix(ls[len(ls)-1], `{"end":true,"rows":`) {
		t.Errorf("last line = %q", ls[len(ls)-1])
	}
	dst := openSQLite(t)
	var seen []backup.Progress
	h, err := backup.Restore(context.Background(), bytes.NewReader(b), dst.(storage.Loader), backup.Options{Progress: func(p backup.Progress) { seen = append(seen, p) }})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if d := storagetest.DiffDumps(storagetest.DumpAll(t, src), storagetest.DumpAll(t, dst)); d != "" {
		t.Errorf("restored rows differ:\n%s", d)
	}
	if len(seen) != len(h.Tables) || seen[len(seen)-1].Done != h.Rows() || seen[len(seen)-1].Total != h.Rows() {
		t.Errorf("progress = %+v, want one report per table ending at %d", seen, h.Rows())
	}
	// An empty deployment backs up and restores too.
	var empty bytes.Buffer
	if _, err := backup.Write(context.Background(), &empty, openSQLite(t).(storage.Dumper), backup.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(context.Background(), &empty, openSQLite(t).(storage.Loader), backup.Options{}); err != nil {
		t.Fatalf("Restore of an empty deployment: %v", err)
	}
}

// TestRestoreRefusesDamagedFiles: a file that is not a complete, intact
// backup of a schema this build knows is refused with a message saying
// so, and nothing of it lands (a good restore into the same database
// works afterwards).
func TestRestoreRefusesDamagedFiles(t *testing.T) {
	t.Parallel()
	_, b := writeBackup(t)
	ls := lines(t, b)
	header := ls[0]
	var rowAt int // a memories row
	for i, l := range ls {
		if strings.HasPrefix(l, `{"table":"memories"`) {
			rowAt = i
			break
		}
	}
	with := func(i int, l string) []string {
		out := append([]string(nil), ls...)
		out[i] = l
		return out
	}
	without := func(i int) []string {
		return append(append([]string(nil), ls[:i]...), ls[i+1:]...)
	}
	flipped := bytes.Clone(b)
	flipped[len(flipped)/2] ^= 0x40
	// Rows the database refuses (a versions row twice) in a file whose
	// gzip checksum is damaged: what a flipped bit can decode into before
	// gzip, at the end, finds the damage.
	var verAt int
	for i, l := range ls {
		if strings.HasPrefix(l, `{"table":"versions"`) {
			verAt = i
			break
		}
	}
	clash := gz(t, slices.Insert(append([]string(nil), ls...), verAt, ls[verAt]))
	clash[len(clash)-8] ^= 0x01 // the trailer's CRC-32
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"not gzip", []byte("hello"), "not gzip"},
		{"truncated", b[:len(b)*2/3], "not a complete Trove backup"},
		{"a flipped bit", flipped, "not a complete Trove backup"},
		{"a damaged file whose rows clash", clash, "not a complete Trove backup: the file is damaged"},
		{"no end line", gz(t, ls[:len(ls)-1]), "ends early"},
		{"a row missing", gz(t, without(rowAt)), "holds"},
		{"data after the end", gz(t, append(ls, ls[rowAt])), "after the end line"},
		{"a newer format", gz(t, with(0, strings.Replace(header, `"version":1`, `"version":2`, 1))), "format version 2"},
		{"an unknown table", gz(t, with(0, strings.Replace(header, `"name":"jobs"`, `"name":"gadgets"`, 1))), "table gadgets, which this trove does not know"},
		{"an unknown column", gz(t, with(0, strings.Replace(header, `"name":"hint"`, `"name":"color"`, 1))), "column api_keys.color, which this trove does not know"},
		{"a value of the wrong type", gz(t, with(rowAt, strings.Replace(ls[rowAt], `"/`, `12,"x":"/`, 1))), "not a complete Trove backup"},
		{"a time that is not one", gz(t, with(rowAt, strings.Replace(ls[rowAt], `"2026-`, `"2026/`, 1))), "not a time"},
		{"not a header", gz(t, ls[1:]), "not a trove-backup header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := openSQLite(t)
			_, err := backup.Restore(context.Background(), bytes.NewReader(tc.file), dst.(storage.Loader), backup.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore = %v, want an error with %q", err, tc.want)
			}
			if trove.ErrorCode(err) != trove.EINVALID {
				t.Errorf("error code %q, want EINVALID", trove.ErrorCode(err))
			}
			for table, rows := range storagetest.DumpAll(t, dst).Rows {
				if len(rows) > 0 {
					t.Errorf("a refused restore left %d rows in %s", len(rows), table)
				}
			}
			if _, err := backup.Restore(context.Background(), bytes.NewReader(b), dst.(storage.Loader), backup.Options{}); err != nil {
				t.Errorf("a good restore after a refused one: %v", err)
			}
		})
	}
}

// TestRestoreOlderBackup: a backup without a table or a nullable column
// (one written before they existed) restores, with no rows and NULLs
// there.
func TestRestoreOlderBackup(t *testing.T) {
	t.Parallel()
	_, b := writeBackup(t)
	ls := lines(t, b)
	var h backup.Header
	if err := json.Unmarshal([]byte(ls[0]), &h); err != nil {
		t.Fatal(err)
	}
	var keep []backup.TableHeader
	for _, th := range h.Tables {
		if th.Name == "jobs" {
			continue
		}
		if th.Name == "session_events" {
			th.Columns = th.Columns[:len(th.Columns)-1] // ref_id, the last
		}
		keep = append(keep, th)
	}
	h.Tables = keep
	hb, _ := json.Marshal(h)
	out := []string{string(hb)}
	total := h.Rows()
	for _, l := range ls[1 : len(ls)-1] {
		switch {
		case strings.HasPrefix(l, `{"table":"jobs"`):
			continue
		case strings.HasPrefix(l, `{"table":"session_events"`):
			l = l[:strings.LastIndex(l, ",")] + "]}\n"
		}
		out = append(out, l)
	}
	out = append(out, `{"end":true,"rows":`+jsonInt(total)+"}")
	dst := openSQLite(t)
	if _, err := backup.Restore(context.Background(), bytes.NewReader(gz(t, out)), dst.(storage.Loader), backup.Options{}); err != nil {
		t.Fatalf("Restore of an older backup: %v", err)
	}
	got := storagetest.DumpAll(t, dst)
	if n := len(got.Rows["jobs"]); n != 0 {
		t.Errorf("%d jobs restored from a backup without them", n)
	}
	for _, r := range got.Rows["session_events"] {
		if r[len(r)-1] != nil {
			t.Errorf("ref_id %v restored from a backup without the column", r[len(r)-1])
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestRestoreCancelled: a restore stopped half way (Ctrl-C) leaves the
// target empty, on both drivers, and the same restore then succeeds.
func TestRestoreCancelled(t *testing.T) {
	t.Parallel()
	_, b := writeBackupOf(t, false)
	for _, o := range []storagetest.Opener{{Name: "SQLite", Open: openSQLite}, {Name: "PostgreSQL", Open: openPostgres}} {
		t.Run(o.Name, func(t *testing.T) {
			t.Parallel()
			if o.Name == "PostgreSQL" {
				pgtest.URL(t)
			}
			dst := o.Open(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := backup.Restore(ctx, bytes.NewReader(b), dst.(storage.Loader), backup.Options{Progress: func(p backup.Progress) {
				if p.Table == "versions" {
					cancel() // after stores, memories and versions, before the rest
				}
			}})
			if err == nil {
				t.Fatal("a cancelled restore succeeded")
			}
			for table, rows := range storagetest.DumpAll(t, dst).Rows {
				if len(rows) > 0 {
					t.Errorf("a cancelled restore left %d rows in %s", len(rows), table)
				}
			}
			if _, err := backup.Restore(context.Background(), bytes.NewReader(b), dst.(storage.Loader), backup.Options{}); err != nil {
				t.Errorf("the restore after a cancelled one: %v", err)
			}
		})
	}
}

// TestRestoreRefusesWhatPostgreSQLCannotHold: memory content that is not
// UTF-8 (which core refuses, but a SQLite database written before that
// check may hold) cannot be restored into PostgreSQL; the restore says
// so, naming the table, and loads nothing.
func TestRestoreRefusesWhatPostgreSQLCannotHold(t *testing.T) {
	t.Parallel()
	pgtest.URL(t)
	_, b := writeBackup(t)
	dst := openPostgres(t)
	_, err := backup.Restore(context.Background(), bytes.NewReader(b), dst.(storage.Loader), backup.Options{})
	if err == nil || !strings.Contains(err.Error(), "memories: ") || trove.ErrorCode(err) != trove.EINVALID {
		t.Fatalf("Restore into PostgreSQL = %v, want EINVALID naming memories", err)
	}
	for table, rows := range storagetest.DumpAll(t, dst).Rows {
		if len(rows) > 0 {
			t.Errorf("a refused restore left %d rows in %s", len(rows), table)
		}
	}
}

// TestRestoreBackupWithDreamLeases: a backup written before dreams were
// jobs holds the dreams' own lease columns (storage.BackupRetired) and no
// dream jobs: it restores, the retired values dropped, and a dream left
// running gets its job, so the next runner fails it runner_lost instead of
// leaving it running for ever.
func TestRestoreBackupWithDreamLeases(t *testing.T) {
	t.Parallel()
	_, b := writeBackup(t)
	ls := lines(t, b)
	var h backup.Header
	if err := json.Unmarshal([]byte(ls[0]), &h); err != nil {
		t.Fatal(err)
	}
	var keep []backup.TableHeader
	for _, th := range h.Tables {
		switch th.Name {
		case "jobs":
			continue // the old backup's jobs held no dream's
		case "dreams":
			for _, c := range storage.BackupRetired["dreams"] {
				th.Columns = append(th.Columns, backup.ColumnHeader(c))
			}
		}
		keep = append(keep, th)
	}
	h.Tables = keep
	hb, _ := json.Marshal(h)
	out := []string{string(hb)}
	var dreamID string
	for _, l := range ls[1 : len(ls)-1] {
		switch {
		case strings.HasPrefix(l, `{"table":"jobs"`):
			continue
		case strings.HasPrefix(l, `{"table":"dreams"`):
			var row struct {
				Table string `json:"table"`
				Row   []any  `json:"row"`
			}
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatal(err)
			}
			dreamID = row.Row[0].(string)
			row.Row[2] = "running"                              // status
			row.Row = append(row.Row, "node-1", row.Row[19], 2) // lease_owner, lease_expires_at (created_at's), attempts
			nb, _ := json.Marshal(row)
			l = string(nb) + "\n"
		}
		out = append(out, l)
	}
	out = append(out, `{"end":true,"rows":`+jsonInt(h.Rows())+"}")
	dst := openSQLite(t)
	if _, err := backup.Restore(context.Background(), bytes.NewReader(gz(t, out)), dst.(storage.Loader), backup.Options{}); err != nil {
		t.Fatalf("Restore of a backup with the dreams' lease columns: %v", err)
	}
	err := dst.Write(context.Background(), func(tx storage.Tx) error {
		d, err := tx.DreamGet(context.Background(), "", dreamID)
		if err != nil {
			return err
		}
		if d.Status != trove.DreamRunning || d.LeaseOwner != "" || d.Attempts != 0 {
			t.Errorf("restored dream = status %s, lease %q, attempts %d; want running with a free job", d.Status, d.LeaseOwner, d.Attempts)
		}
		now := time.Now()
		j, err := tx.JobClaim(context.Background(), storage.JobDream, "runner", now, now.Add(time.Minute))
		if err != nil || j.Key != dreamID {
			t.Errorf("JobClaim after the restore = %+v, %v; want the running dream's job", j, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
