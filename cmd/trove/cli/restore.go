package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/backup"
	"github.com/trovehq/trove/storage"
)

func newRestoreCmd(e *env) *cobra.Command {
	var data, dbURL string
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Load a backup into a new, empty database",
		Long: `restore loads FILE, written by trove backup from SQLite or PostgreSQL, into
an empty database: --database (PostgreSQL; an empty database or schema, its
tables created here) or --data's trove.db (SQLite; created when missing). A
database that holds anything is refused (exit code 4): restore never merges
nor overwrites. Everything comes back as it was: IDs, versions and their
contents, seqs, hash chains (trove audit verify passes with the same heads),
times, sessions and transcripts, dreams, agents, environments and keys (the
same secrets work). Console users sign in again.

The load is one transaction: it lands whole or not at all, and the file is
checked all the way (its end line and gzip checksum) before it commits. Stop
trove serve on the target while restoring. FILE "-" reads standard input.
Progress goes to standard error.

To move from SQLite to PostgreSQL: trove backup --data DIR trove.backup, then
trove restore --database postgres://… trove.backup, then serve with
--database (docs/backup.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := e.ctx
			var in io.Reader = e.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			d, where, closeDB, err := openForBackup(ctx, data, dbURL, true)
			if err != nil {
				return err
			}
			defer closeDB()
			pr := newBackupProgress(e.stderr, "restore")
			h, err := backup.Restore(ctx, in, d.(storage.Loader), backup.Options{Progress: pr.update})
			pr.finish()
			if err != nil {
				return fmt.Errorf("restore into %s: %w (nothing was loaded)", where, err)
			}
			fmt.Fprintf(e.stderr, "restored %s into %s (backup of a %s database, schema %d, taken %s)\n",
				summary(h), where, h.Source.Driver, h.Source.SchemaVersion, h.CreatedAt)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", defaultDataDir(), "data directory of the SQLite database to create (env TROVE_DATA)")
	cmd.Flags().StringVar(&dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL of an empty database; empty for SQLite in --data (env TROVE_DATABASE)")
	return cmd
}
