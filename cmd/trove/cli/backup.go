package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/trovehq/trove/backup"
	"github.com/trovehq/trove/internal/atomicfile"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
)

func newBackupCmd(e *env) *cobra.Command {
	var data, dbURL string
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a full backup of the whole deployment to one portable file",
		Long: `backup writes every workspace of the database to FILE: stores, memories,
every version with its content (redacted ones stay redacted), seqs and the
hash chains, sessions and their transcripts, dreams, agents and their
versions, environments, API and environment keys (as their stored hashes),
the work queue. Console sign-ins are left out. The file (gzip-compressed JSON
lines, docs/backup.md) does not depend on the driver: trove restore loads it
into an empty SQLite or PostgreSQL database, which is how a deployment moves
from SQLite to PostgreSQL and back.

The database stays online: the backup reads one snapshot while writes go on
(run it next to trove serve). The database is --database (PostgreSQL) or
--data's trove.db (SQLite), as for trove serve. FILE is written whole or not
at all ("-" writes to standard output). Progress goes to standard error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := e.ctx
			d, where, closeDB, err := openForBackup(ctx, data, dbURL, false)
			if err != nil {
				return err
			}
			defer closeDB()
			pr := newBackupProgress(e.stderr, "backup")
			opts := backup.Options{Progress: pr.update, Trove: Version()}
			var h *backup.Header
			write := func(w io.Writer) error {
				var err error
				h, err = backup.Write(ctx, w, d.(storage.Dumper), opts)
				return err
			}
			if args[0] == "-" {
				err = write(e.stdout)
			} else {
				err = atomicfile.Write(args[0], 0o600, write)
			}
			pr.finish()
			if err != nil {
				return fmt.Errorf("backup of %s: %w", where, err)
			}
			to := args[0]
			if to == "-" {
				to = "standard output"
			}
			fmt.Fprintf(e.stderr, "backed up %s: %s to %s\n", where, summary(h), to)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", defaultDataDir(), "data directory of a SQLite database (env TROVE_DATA)")
	cmd.Flags().StringVar(&dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL; empty for SQLite in --data (env TROVE_DATABASE)")
	return cmd
}

// openForBackup opens the database backup or restore works on, without
// the core service: PostgreSQL at dbURL, else SQLite at <data>/trove.db.
// create (restore) creates and migrates a database that does not exist;
// backup refuses a missing one.
func openForBackup(ctx context.Context, data, dbURL string, create bool) (storage.Driver, string, func() error, error) {
	if dbURL != "" {
		if !isPostgresURL(dbURL) {
			return nil, "", nil, usageError("--database must be a postgres:// or postgresql:// URL (leave it empty for SQLite in --data)")
		}
		db, err := postgres.Open(ctx, dbURL, postgres.Options{AutoMigrate: create, MaxConns: 2})
		if err != nil {
			return nil, "", nil, fmt.Errorf("opening PostgreSQL: %w", err)
		}
		return db, "PostgreSQL database " + postgres.RedactDSN(dbURL), db.Close, nil
	}
	if data == "" {
		return nil, "", nil, usageError("no data directory: pass --data or set TROVE_DATA (or --database for PostgreSQL)")
	}
	path := filepath.Join(data, "trove.db")
	if create {
		if err := os.MkdirAll(data, 0o700); err != nil {
			return nil, "", nil, fmt.Errorf("creating the data directory: %w", err)
		}
	} else if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil, fmt.Errorf("no database at %s: pass --data DIR (or --database URL) to name the deployment to back up", path)
	}
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: create})
	if err != nil {
		return nil, "", nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return db, "SQLite database " + path, db.Close, nil
}

// summary names a backup's main row counts.
func summary(h *backup.Header) string {
	n := map[string]int64{}
	for _, t := range h.Tables {
		n[t.Name] = t.Rows
	}
	return fmt.Sprintf("%d rows (%d stores, %d memories, %d versions, %d sessions, %d transcript events, %d dreams, %d agents, %d environments, %d API keys)",
		h.Rows(), n["stores"], n["memories"], n["versions"], n["sessions"], n["session_events"], n["dreams"], n["agents"], n["environments"], n["api_keys"])
}

// backupProgress shows backup.Progress on standard error: one line
// rewritten in place on a terminal, else a line per table and at most one
// every 10 seconds.
type backupProgress struct {
	w     io.Writer
	what  string
	tty   bool
	last  backup.Progress
	shown time.Time
	table string
}

func newBackupProgress(w io.Writer, what string) *backupProgress {
	p := &backupProgress{w: w, what: what}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

func (p *backupProgress) update(ev backup.Progress) {
	changed := ev.Table != p.table
	p.last, p.table = ev, ev.Table
	now := time.Now()
	switch {
	case p.tty && now.Sub(p.shown) >= 100*time.Millisecond:
		fmt.Fprintf(p.w, "\r%s: %s %d/%d rows (%d%%)\x1b[K", p.what, ev.Table, ev.Done, ev.Total, percent(ev.Done, ev.Total))
	case !p.tty && (changed || now.Sub(p.shown) >= 10*time.Second):
		fmt.Fprintf(p.w, "%s: %s, %d/%d rows (%d%%)\n", p.what, ev.Table, ev.Done, ev.Total, percent(ev.Done, ev.Total))
	default:
		return
	}
	p.shown = now
}

func (p *backupProgress) finish() {
	if p.tty && !p.shown.IsZero() {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func percent(done, total int64) int64 {
	if total <= 0 {
		return 100
	}
	return done * 100 / total
}
