package cli

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// searchPageSize is how many results one request asks for.
const searchPageSize = 100

func newSearchCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	var stores []string
	var prefix string
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find memories by the words in their paths and content, most relevant first",
		Long: `search finds the live memories whose path or content holds every word of
QUERY (the arguments, joined by spaces), most relevant first, with the
matching words of each memory's best passage in [brackets].

Words match whole and case-insensitively; "words in double quotes" must
occur together in that order (quote them for the shell too: '"long term"');
the last word also matches as a prefix. Without --store, search covers every
store the credential can read (a session token: its attached stores).

` + targetRule + "\n\n" + exitCodesHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageError("--limit must be at least 1, not %d", limit)
			}
			return c.withConn(cmd, func(k *conn) error {
				names := map[string]string{}
				p := trove.SearchParams{Query: strings.Join(args, " "), PathPrefix: prefix}
				for _, ref := range stores {
					st, err := k.store(ref, readStore)
					if err != nil {
						return err
					}
					names[st.ID] = st.Name
					p.StoreIDs = append(p.StoreIDs, st.ID)
				}
				results, next, err := searchUpTo(k, p, limit)
				if err != nil {
					return err
				}
				return c.printSearch(k, p.Query, results, next, names)
			})
		},
	}
	c.sf.register(cmd)
	c.out.register(cmd.Flags())
	cmd.Flags().StringArrayVarP(&stores, "store", "s", nil, "search only this store (name or ID); repeat for several")
	cmd.Flags().StringVar(&prefix, "prefix", "", "search only below this directory, e.g. /notes")
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "the most results to show")
	return cmd
}

// searchUpTo runs the search p, page by page, up to limit (at least 1)
// results; next continues it when more remain.
func searchUpTo(k *conn, p trove.SearchParams, limit int) (results []trove.SearchResult, next string, err error) {
	for page, err := range trove.Pages(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.SearchResult], error) {
		p.Cursor, p.Limit = cursor, min(searchPageSize, limit-len(results))
		return k.svc.Search(ctx, p)
	}) {
		if err != nil {
			return nil, "", err
		}
		results = append(results, page.Data...)
		if next = page.NextPage; len(results) >= limit {
			break
		}
	}
	return results, next, nil
}

// printSearch prints results as a table (store names looked up once, names
// holds those known), or a page of their JSON.
func (c *clientCmd) printSearch(k *conn, query string, results []trove.SearchResult, next string, names map[string]string) error {
	if c.json() {
		data := make([]any, len(results))
		for i := range results {
			data[i] = httpapi.WireSearchResult(&results[i])
		}
		return c.printJSON(httpapi.WirePage(data, next))
	}
	if len(results) == 0 {
		fmt.Fprintf(c.e.stderr, "no memory matches %q\n", query)
		return nil
	}
	rows := make([][]string, len(results))
	for i, r := range results {
		name, ok := names[r.Memory.StoreID]
		if !ok {
			name = r.Memory.StoreID
			if st, err := k.svc.GetStore(k.ctx, r.Memory.StoreID); err == nil {
				name = st.Name
			}
			names[r.Memory.StoreID] = name
		}
		rows[i] = []string{name, markRanges(r.Memory.Path, r.PathHighlights), snippetLine(r)}
	}
	if err := c.table([]string{"STORE", "PATH", "MATCH"}, rows); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(c.e.stderr, "showing the first %d results; raise --limit to see more\n", len(results))
	}
	return nil
}

// markRanges returns text with each range wrapped in [ ] and every control
// character (a newline, an escape sequence's ESC) shown as a space, so
// that a result is one line and cannot drive the terminal.
func markRanges(text string, rs []trove.TextRange) string {
	var b strings.Builder
	at := 0
	for _, r := range rs {
		if r.Start < at || r.End > len(text) || r.Start > r.End {
			continue // not from a well-behaved server: ignore the range
		}
		b.WriteString(text[at:r.Start] + "[" + text[r.Start:r.End] + "]")
		at = r.End
	}
	b.WriteString(text[at:])
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, b.String())
}

// snippetLine is a result's snippet on one line with its matches marked,
// "…" where it is cut from the content.
func snippetLine(r trove.SearchResult) string {
	s := strings.Join(strings.Fields(markRanges(r.Snippet, r.Highlights)), " ")
	if r.SnippetOffset > 0 {
		s = "…" + s
	}
	if r.SnippetOffset+len(r.Snippet) < r.Memory.SizeBytes {
		s += "…"
	}
	return s
}
