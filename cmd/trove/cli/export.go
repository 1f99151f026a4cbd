package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/archive"
	"github.com/trovehq/trove/internal/atomicfile"
)

func newExportCmd(e *env) *cobra.Command {
	var (
		sf   storeFlags
		out  string
		from string
	)
	cmd := &cobra.Command{
		Use:   "export STORE [-o FILE]",
		Short: "Write a store to a portable archive (memories and the whole version history)",
		Long: `export writes the store STORE (a name or memstore_… ID) to a gzip-compressed
tar archive: every memory at its path under memories/, and manifest.json with
the store's name, description and metadata, each memory's hash, and every
version (operation, actor, time, path and hash; redacted versions marked
redacted). The format is described in docs/archive.md.

The store is on the server or database every client command uses (see
trove status). --from URL exports instead from any server speaking the memory
stores API through the official SDK, the hosted one included
(--from https://api.anthropic.com with ANTHROPIC_API_KEY); its key is
--api-key, else $ANTHROPIC_API_KEY, else $TROVE_API_KEY.

-o names the archive (default <store slug>.tar.gz; "-" for standard output).
It is written whole or not at all.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "" {
				src, err := sdkSource(e.ctx, from, sf.apiKey, args[0])
				if err != nil {
					return err
				}
				return runExport(e.ctx, e, src, from, args[0], out)
			}
			return withStore(e.ctx, cmd, &sf, args[0], readStore, func(k *conn, st *trove.Store) error {
				source := "local"
				if k.t.remote() {
					source = k.t.url
				}
				return runExport(k.ctx, e, archive.Services(k.svc, st.ID), source, st.Name, out)
			})
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", `archive file to write (default <store slug>.tar.gz; "-" for standard output)`)
	f.StringVar(&from, "from", "", "export from this memory stores API server through the official SDK (e.g. https://api.anthropic.com) instead of --url/--data")
	return cmd
}

// sdkSource is the store ref on the memory stores API server at from,
// read through the official SDK with key, else $ANTHROPIC_API_KEY, else
// $TROVE_API_KEY.
func sdkSource(ctx context.Context, from, key, ref string) (archive.Source, error) {
	for _, env := range []string{"ANTHROPIC_API_KEY", "TROVE_API_KEY"} {
		if key == "" {
			key = os.Getenv(env)
		}
	}
	if key == "" {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("export --from %s needs an API key: set ANTHROPIC_API_KEY (or TROVE_API_KEY, or --api-key)", from)}
	}
	c := anthropic.NewClient(option.WithBaseURL(strings.TrimRight(from, "/")), option.WithAPIKey(key))
	id, err := sdkStoreID(ctx, &c, ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return archive.SDK(&c, id), nil
}

// runExport writes src to out (default <slug of name>.tar.gz) and reports
// what it wrote on stderr.
func runExport(ctx context.Context, e *env, src archive.Source, source, name, out string) error {
	if out == "" {
		out = trove.Slug(name) + ".tar.gz"
	}
	pr := newProgress(e.stderr, "exporting", -1)
	m, err := writeArchive(ctx, out, e.stdout, src, archive.ExportOptions{Source: source, Progress: pr.update})
	pr.finish()
	if err != nil {
		return err
	}
	redacted := 0
	for _, v := range m.Versions {
		if v.Redacted {
			redacted++
		}
	}
	where := out
	if out == "-" {
		where = "standard output"
	}
	fmt.Fprintf(e.stderr, "exported store %q (%s): %s, %s (%d redacted) to %s\n",
		m.Store.Name, m.Store.ID, count(len(m.Memories), "memory", "memories"), count(len(m.Versions), "version", "versions"), redacted, where)
	return nil
}

// writeArchive exports src to path through a temp file renamed into place
// (or to stdout for "-"), so a failed export leaves no partial archive.
func writeArchive(ctx context.Context, path string, stdout io.Writer, src archive.Source, opts archive.ExportOptions) (*archive.Manifest, error) {
	if path == "-" {
		return archive.Export(ctx, src, stdout, opts)
	}
	var m *archive.Manifest
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		var err error
		m, err = archive.Export(ctx, src, w, opts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return m, nil
}

// sdkStoreID resolves a store by ID or exact name through the SDK.
func sdkStoreID(ctx context.Context, c *anthropic.Client, ref string) (string, error) {
	if strings.HasPrefix(ref, trove.PrefixStore) {
		return ref, nil
	}
	var ids []string
	pager := c.Beta.MemoryStores.ListAutoPaging(ctx, anthropic.BetaMemoryStoreListParams{
		Limit: anthropic.Int(100), IncludeArchived: anthropic.Bool(true),
	})
	for pager.Next() {
		if s := pager.Current(); s.Name == ref {
			ids = append(ids, s.ID)
		}
	}
	if err := pager.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no store named %q", ref)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%d stores are named %q; pass one of their IDs: %s", len(ids), ref, strings.Join(ids, ", "))
}

// progress shows archive.Progress as a bar on a terminal and as a plain
// line every 100 items (and at the end) otherwise.
type progress struct {
	w     io.Writer
	what  string
	bar   *progressbar.ProgressBar
	done  int
	total int
}

func newProgress(w io.Writer, what string, total int) *progress {
	p := &progress{w: w, what: what, total: total}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(), progressbar.OptionSetItsString("memories"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return p
}

func (p *progress) update(ev archive.Progress) {
	if ev.Phase == "versions" {
		return
	}
	p.done = ev.Done
	if ev.Total >= 0 {
		p.total = ev.Total
	}
	if p.bar != nil {
		if ev.Total >= 0 && p.bar.GetMax() != ev.Total {
			p.bar.ChangeMax(ev.Total)
		}
		_ = p.bar.Set(ev.Done)
		return
	}
	if ev.Done%100 == 0 {
		p.line()
	}
}

func (p *progress) line() {
	if p.total >= 0 {
		fmt.Fprintf(p.w, "%s: %d/%s\n", p.what, p.done, count(p.total, "memory", "memories"))
	} else {
		fmt.Fprintf(p.w, "%s: %s\n", p.what, count(p.done, "memory", "memories"))
	}
}

// finish ends the bar, or prints the last count if not printed yet.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	if p.done%100 != 0 {
		p.line()
	}
}
