package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/archive"
)

func newImportCmd(e *env) *cobra.Command {
	var (
		sf       storeFlags
		store    string
		name     string
		allowDup bool
		out      output
	)
	cmd := &cobra.Command{
		Use:   "import FILE [--name NAME | --store NAME_OR_ID] [--allow-duplicate-name]",
		Short: "Create a store from an archive written by trove export (or fill an existing one)",
		Long: `import reads an archive written by trove export and creates a store with its
name (or --name), description, metadata and memories; with --store it fills
that existing store instead. A new store whose name a live store already has
is refused (exit 4) unless --allow-duplicate-name. The whole archive is checked
first (format, paths, sizes, UTF-8, each file against the manifest's hash, the
target's room) and nothing is written unless all of it passes. A memory the store already holds with the same content is
skipped; one it holds differently is reported and left as it is (exit status 1).

import is all or nothing: when the target refuses a write, what this run
wrote is undone (the store it created is deleted). When the target cannot be
reached or the run is killed, it is resumable: run again with the same FILE,
it continues in the store it created (recorded in FILE.import.json) and ends
with each memory once.

The imported store's versions start anew with this import, attributed to the
importing key; the exported history stays in the archive's manifest.json
(see docs/archive.md).

The target is local (--data, TROVE_DATA) or a server (TROVE_URL with
TROVE_API_KEY). -o json prints the report as JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if name != "" && store != "" {
				return usageError("--name names the store import creates; --store fills an existing one: pass one of them")
			}
			return withConn(e.ctx, cmd, &sf, func(k *conn) error { return runImport(e, k, args[0], store, name, allowDup, &out) })
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&store, "store", "", "fill this existing store (name or ID) instead of creating one")
	f.StringVar(&name, "name", "", "name the created store NAME (default: the archive's store name)")
	f.BoolVar(&allowDup, "allow-duplicate-name", false, "create the store although a live store already has its name")
	out.register(f)
	return cmd
}

// runImport imports file into the target k (into the store ref when not
// empty; else into a new store named name, or the archive's store name,
// refused when a live store has it unless allowDup) and reports the result.
func runImport(e *env, k *conn, file, ref, name string, allowDup bool, out *output) error {
	opts := archive.ImportOptions{JournalPath: archive.JournalFor(file), Target: k.t.journalKey(), Name: name, AllowDuplicateName: allowDup}
	if ref != "" {
		st, err := k.store(ref, writeStore)
		if err != nil {
			return err
		}
		opts.StoreID = st.ID
	}
	// A local database's limits are known exactly; a server is checked
	// against the documented ones (its own refusals are undone).
	if l, ok := k.svc.(interface{ Limits() trove.Limits }); ok {
		opts.Limits = l.Limits()
	}
	var pr *progress
	opts.Progress = func(ev archive.Progress) {
		if pr == nil {
			pr = newProgress(e.stderr, "importing", ev.Total)
		}
		pr.update(ev)
	}
	rep, err := archive.Import(k.ctx, k.svc, file, opts)
	if pr != nil {
		pr.finish()
	}
	if trove.IsStoreNameTaken(err) {
		return &exitError{code: exitConflict, err: fmt.Errorf("%s, or pass --allow-duplicate-name to have two (or --store NAME to fill that one); nothing was written", trove.ErrorMessage(err))}
	}
	if err != nil {
		if rep != nil && rep.Resumable {
			return fmt.Errorf("%w (run the same import again to resume into %s)", err, rep.StoreID)
		}
		return err
	}
	if out.json() {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		printImport(e.stdout, rep, file)
	}
	if n := len(rep.Conflicts); n > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s of the archive %s from the store and %s left as %s", count(n, "memory", "memories"), plural(n, "differs", "differ"), plural(n, "was", "were"), plural(n, "it is", "they are"))}
	}
	return nil
}

// printImport reports an import for people.
func printImport(w io.Writer, rep *archive.ImportReport, file string) {
	verb := "filled"
	switch {
	case rep.Resumed:
		verb = "resumed into"
	case rep.Created:
		verb = "created"
	}
	fmt.Fprintf(w, "%s store %q (%s): %s written, %d already there, %d left as they are\n",
		verb, rep.Store.Name, rep.StoreID, count(len(rep.Written), "memory", "memories"), len(rep.Present), len(rep.Conflicts))
	fmt.Fprintf(w, "history: %s kept in %s (manifest.json); the store's own versions start with this import\n",
		count(rep.HistoryVersions, "version", "versions"), file)
	for _, c := range rep.Conflicts {
		if c.ConflictingPath != "" {
			fmt.Fprintf(w, "  not imported: %s overlaps %s in the store\n", c.Path, c.ConflictingPath)
		} else {
			fmt.Fprintf(w, "  not imported: %s differs in the store (store %.12s…, archive %.12s…)\n", c.Path, c.StoreSHA256, c.ArchiveSHA256)
		}
	}
}
