package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newMigrateCmd(e *env) *cobra.Command {
	var data, dbURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations",
		Long: `Apply every schema migration this trove knows that the database lacks.
It is safe to run while other trove processes use the database. It refuses a
database whose schema is newer than this trove knows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := openBackend(e.ctx, data, dbURL, true, nil)
			if err != nil {
				return err
			}
			defer b.close()
			have, known, ok, err := b.schema(e.ctx)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(e.stdout, "%s %s: no versioned schema\n", b.kind, b.where)
				return nil
			}
			fmt.Fprintf(e.stdout, "%s %s: schema at version %d (this trove knows %d)\n", b.kind, b.where, have, known)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", defaultDataDir(), "data directory (env TROVE_DATA)")
	cmd.Flags().StringVar(&dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL; empty for SQLite in --data (env TROVE_DATABASE)")
	return cmd
}
