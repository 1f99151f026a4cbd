package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/apply"
)

func newApplyCmd(e *env) *cobra.Command {
	var (
		sf        storeFlags
		file      string
		statePath string
		dryRun    bool
		out       output
		outside   bool
	)
	cmd := &cobra.Command{
		Use:   "apply -f stores.yaml [--dry-run]",
		Short: "Create or update stores and seed memories declared in YAML",
		Long: `apply makes the stores declared in a YAML file exist with their description,
metadata and seed memories (docs/apply.md):

  stores:
    - name: Team Notes
      description: What the team learned
      metadata: {team: core}
      memories:
        - path: /README.md
          content: |
            # Team notes
        - path: /style.md
          file: seeds/style.md      # relative to the YAML file

Stores are found by name and created when missing. A memory is created when
missing and replaced only while it still holds what apply last wrote there;
one changed (or deleted) since, or one apply never wrote, is reported and left
as it is (exit status 1). apply never deletes. Running it again without
changes does nothing. What apply wrote is recorded in --state (default
FILE.state.json next to the YAML); without that record nothing found different
is overwritten.

A file: entry is read only when it is a regular file of at most the content
limit (100 kB) under the YAML file's directory (no absolute path, no "..", no
symbolic link leading outside); --allow-outside lifts the directory rule. The
YAML file holds one document.

--dry-run prints the plan and writes nothing. The target is local (--data,
TROVE_DATA) or a server (TROVE_URL with TROVE_API_KEY).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return commandUsageError(cmd, "apply: -f stores.yaml is required")
			}
			if err := out.check(); err != nil {
				return err
			}
			spec, err := apply.LoadWith(file, apply.LoadOptions{AllowOutside: outside})
			if err != nil {
				return err
			}
			if statePath == "" {
				statePath = apply.StateFor(file)
			}
			state, err := apply.LoadState(statePath)
			if err != nil {
				return err
			}
			k, err := openConn(e.ctx, cmd, &sf)
			if err != nil {
				return err
			}
			defer k.close()
			res, err := apply.Apply(k.ctx, k.svc, spec, apply.Options{Target: k.t.journalKey(), State: state, DryRun: dryRun})
			if !dryRun {
				if serr := state.Save(statePath); serr != nil && err == nil {
					err = fmt.Errorf("saving the apply state %s: %w", statePath, serr)
				}
			}
			if out.json() {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				if jerr := enc.Encode(res); jerr != nil && err == nil {
					err = jerr
				}
			} else {
				printPlan(e.stdout, res)
			}
			if err != nil {
				return err
			}
			if n := res.Count(apply.Kept); n > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("%s from what apply last wrote and %s left as %s (marked !)", count(n, "memory differs", "memories differ"), plural(n, "was", "were"), plural(n, "it is", "they are"))}
			}
			return nil
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "the YAML file declaring the stores")
	f.StringVar(&statePath, "state", "", "file recording what apply wrote (default <file>.state.json)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and write nothing")
	f.BoolVar(&outside, "allow-outside", false, "let file: entries name absolute paths or files outside the YAML file's directory")
	out.register(f)
	return cmd
}

// printPlan prints one line per action: + create, ~ update, = unchanged,
// ! kept (reported, not overwritten); and a summary.
func printPlan(w io.Writer, res *apply.Result) {
	marks := map[apply.Kind]string{
		apply.CreateStore: "+", apply.UpdateStore: "~", apply.Create: "+",
		apply.Update: "~", apply.Unchanged: "=", apply.Kept: "!",
	}
	for _, a := range res.Actions {
		line := fmt.Sprintf("%s store %q", marks[a.Kind], a.Store)
		if a.Path != "" {
			line = fmt.Sprintf("%s %s %s", marks[a.Kind], a.Store, a.Path)
		}
		if a.Detail != "" {
			line += ": " + a.Detail
		}
		fmt.Fprintln(w, line)
	}
	created := res.Count(apply.Create) + res.Count(apply.CreateStore)
	updated := res.Count(apply.Update) + res.Count(apply.UpdateStore)
	if res.DryRun {
		fmt.Fprintf(w, "plan: %d to create, %d to update, %d unchanged, %d to leave as they are (dry run: nothing written)\n",
			created, updated, res.Count(apply.Unchanged), res.Count(apply.Kept))
		return
	}
	fmt.Fprintf(w, "applied: %d created, %d updated, %d unchanged, %d left as they are\n",
		created, updated, res.Count(apply.Unchanged), res.Count(apply.Kept))
}
