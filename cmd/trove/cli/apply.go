package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/apply"
)

// applyCmd holds apply's flags.
type applyCmd struct {
	e         *env
	sf        storeFlags
	file      string
	statePath string
	dryRun    bool
	out       output
	outside   bool
}

func newApplyCmd(e *env) *cobra.Command {
	a := &applyCmd{e: e}
	cmd := &cobra.Command{
		Use:   "apply -f stores.yaml [--dry-run]",
		Short: "Create or update stores and seed memories declared in YAML",
		Long:  applyLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd)
		},
	}
	a.sf.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&a.file, "file", "f", "", "the YAML file declaring the stores")
	f.StringVar(&a.statePath, "state", "", "file recording what apply wrote (default <file>.state.json)")
	f.BoolVar(&a.dryRun, "dry-run", false, "print the plan and write nothing")
	f.BoolVar(&a.outside, "allow-outside", false, "let file: entries name absolute paths or files outside the YAML file's directory")
	a.out.register(f)
	return cmd
}

// applyLong is apply's help text.
const applyLong = `apply makes the stores declared in a YAML file exist with their description,
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
TROVE_DATA) or a server (TROVE_URL with TROVE_API_KEY).`

// run loads the YAML file and the state, applies the file to the target,
// saves the state (not on a dry run) and prints the result.
func (a *applyCmd) run(cmd *cobra.Command) error {
	if a.file == "" {
		return commandUsageError(cmd, "apply: -f stores.yaml is required")
	}
	if err := a.out.check(); err != nil {
		return err
	}
	spec, err := apply.LoadWith(a.file, apply.LoadOptions{AllowOutside: a.outside})
	if err != nil {
		return err
	}
	if a.statePath == "" {
		a.statePath = apply.StateFor(a.file)
	}
	state, err := apply.LoadState(a.statePath)
	if err != nil {
		return err
	}
	k, err := openConn(a.e.ctx, cmd, &a.sf)
	if err != nil {
		return err
	}
	defer k.close()
	res, err := apply.Apply(k.ctx, k.svc, spec, apply.Options{Target: k.t.journalKey(), State: state, DryRun: a.dryRun})
	if !a.dryRun {
		if serr := state.Save(a.statePath); serr != nil && err == nil {
			err = fmt.Errorf("saving the apply state %s: %w", a.statePath, serr)
		}
	}
	return a.report(res, err)
}

// report prints res (as JSON with -o json) and returns err, else a
// failure when some memory was kept as it is.
func (a *applyCmd) report(res *apply.Result, err error) error {
	if a.out.json() {
		enc := json.NewEncoder(a.e.stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		printPlan(a.e.stdout, res)
	}
	if err != nil {
		return err
	}
	if n := res.Count(apply.Kept); n > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s from what apply last wrote and %s left as %s (marked !)", count(n, "memory differs", "memories differ"), plural(n, "was", "were"), plural(n, "it is", "they are"))}
	}
	return nil
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
