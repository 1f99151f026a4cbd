package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/text/unicode/norm"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storetree"
)

// memPath normalises a path argument: a leading "/" is added and a
// trailing one removed ("notes/" → "/notes"); "" and "/" are the root. It
// is taken in Unicode NFC, as store paths are (a name pasted from macOS is
// often NFD).
func memPath(p string) string {
	p = strings.TrimRight(norm.NFC.String(p), "/")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// withTree is withStoreFor with the store as a storetree.Tree.
func (c *clientCmd) withTree(cmd *cobra.Command, ref string, use storeUse, f func(k *conn, st *trove.Store, t *storetree.Tree) error) error {
	return c.withStoreFor(cmd, ref, use, func(k *conn, st *trove.Store) error {
		return f(k, st, storetree.New(k.svc, st.ID, trove.Limits{}))
	})
}

// lookup returns the live memory at p (a path, or a mem_ ID); ENOTFOUND
// when there is none.
func lookup(k *conn, st *trove.Store, t *storetree.Tree, p string, view trove.View) (*trove.Memory, error) {
	if strings.HasPrefix(p, trove.PrefixMemory) {
		m, err := t.Get(k.ctx, p, view)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil, trove.Errorf(trove.ENOTFOUND, "no memory %s in store %q", p, st.Name)
		}
		return m, err
	}
	m, err := t.Lookup(k.ctx, memPath(p), view)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, trove.Errorf(trove.ENOTFOUND, "no memory at %s in store %q (see trove memories ls %s)", memPath(p), st.Name, shellQuote(st.Name))
	}
	return m, nil
}

func newMemoriesCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("memories", "List, read, write, edit, move and delete memories; their history and diffs",
		"A store is given by name or ID; a memory by path (/notes/todo.md, or notes/todo.md) or by ID (mem_…).")
	cmd.AddCommand(c.lsCmd(), c.catCmd(), c.writeCmd(), c.editCmd(), c.mvCmd(), c.rmCmd(), c.historyCmd(), c.diffCmd(), c.restoreCmd())
	return cmd
}

func (c *clientCmd) lsCmd() *cobra.Command {
	var prefix, asOf string
	var depth int
	cmd := &cobra.Command{
		Use:     "ls STORE [--prefix DIR] [--depth N] [--as-of MOMENT]",
		Aliases: []string{"list"},
		Short:   "Show a store's memories as a tree",
		Long: `ls shows the memories below --prefix (default: the whole store) as a tree,
with their sizes. --depth N shows N levels and folds deeper directories into
one line with their memory count (0: every level). With -o json it prints the
listing in the API's shape: memories, and memory_prefix items for folded
directories.

--as-of shows the store as it was at a moment: a duration ago (5m, 2h ago,
3d), a date or a date and time in the local zone (2026-11-30, 2026-11-30
12:00:00), an RFC 3339 time (2026-11-30T12:00:00Z), a version ID (memver_…)
or a version number (the store's history is numbered 1, 2, 3…; see memories
history). A time is echoed to stderr in UTC. A memory whose version then has been
redacted is listed as redacted, without its path or content. With -o json it
prints {"seq", "data": [versions]}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if depth < 0 {
				return usageError("--depth must be 0 (every level) or more, got %d", depth)
			}
			var at trove.Moment
			if asOf != "" {
				var err error
				if at, err = parseMoment(c.e.stderr, "--as-of", asOf); err != nil {
					return err
				}
			}
			return c.withTree(cmd, args[0], readStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				dir := memPath(prefix)
				if asOf != "" {
					return c.lsAsOf(k, st, dir, at, depth)
				}
				var mems []trove.Memory
				if err := t.List(k.ctx, dir, 0, trove.ViewBasic, func(it trove.MemoryListItem) bool {
					if it.Memory != nil {
						mems = append(mems, *it.Memory)
					}
					return true
				}); err != nil {
					return err
				}
				return c.printListing(st, dir, mems, depth)
			})
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "/", "directory to list")
	cmd.Flags().IntVar(&depth, "depth", 0, "levels to show; deeper directories are folded (0: every level)")
	cmd.Flags().StringVar(&asOf, "as-of", "", "show the store as it was at this moment (5m, 2h ago, 2026-11-30, 2026-11-30 12:00, RFC 3339, a version ID or number)")
	return cmd
}

// lsAsOf prints the listing of the store as of a moment.
func (c *clientCmd) lsAsOf(k *conn, st *trove.Store, dir string, at trove.Moment, depth int) error {
	page, err := c.listAsOf(k, st, dir, at)
	if err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(httpapi.WireAsOfPage(page))
	}
	fmt.Fprintf(c.e.stdout, "store %q as of version %d\n", st.Name, page.Seq)
	var mems []trove.Memory
	for _, v := range page.Data {
		if v.Path == nil {
			fmt.Fprintf(c.e.stdout, "(redacted: memory %s; its path and content are gone)\n", v.MemoryID)
			continue
		}
		mems = append(mems, trove.Memory{ID: v.MemoryID, Path: *v.Path, SizeBytes: *v.SizeBytes, VersionID: v.ID})
	}
	return c.printListing(st, dir, mems, depth)
}

// printListing prints mems (below dir) as a tree, directories deeper than
// depth folded (0: none), or as a page of the API's list items.
func (c *clientCmd) printListing(st *trove.Store, dir string, mems []trove.Memory, depth int) error {
	base := storetree.Prefix(dir) // "/" or "/dir/"
	var items []trove.MemoryListItem
	folded := map[string]int{}
	for i := range mems {
		rel := strings.TrimPrefix(mems[i].Path, base)
		segs := strings.Split(rel, "/")
		if depth > 0 && len(segs) > depth {
			fp := base + strings.Join(segs[:depth], "/") + "/"
			if folded[fp] == 0 {
				items = append(items, trove.MemoryListItem{Prefix: &trove.MemoryPrefix{Path: fp}})
			}
			folded[fp]++
			continue
		}
		items = append(items, trove.MemoryListItem{Memory: &mems[i]})
	}
	if c.json() {
		return c.printJSON(wirePage(items, httpapi.WireListItem))
	}
	switch {
	case len(mems) > 0:
		printTree(c.e.stdout, base, items, folded)
	case dir == "/":
		fmt.Fprintf(c.e.stdout, "store %q is empty\n", st.Name)
	default:
		fmt.Fprintf(c.e.stdout, "no memories below %s in store %q\n", dir, st.Name)
	}
	return nil
}

// listAsOf lists every memory below dir as of a moment, following pages;
// the result's Seq is the moment the first page resolved to.
func (c *clientCmd) listAsOf(k *conn, st *trove.Store, dir string, at trove.Moment) (*trove.AsOfPage, error) {
	h, err := k.history()
	if err != nil {
		return nil, err
	}
	out := &trove.AsOfPage{}
	out.Data, err = trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		page, err := h.ListMemoriesAsOf(ctx, st.ID, at, trove.ListMemoriesParams{PathPrefix: storetree.Prefix(dir), Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		if cursor == "" {
			out.Seq = page.Seq
		}
		return &trove.Page[trove.MemoryVersion]{Data: page.Data, NextPage: page.NextPage}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// printTree writes items (in path order, below base) as an indented tree:
// a directory line ends in "/", a memory line shows its size, a folded
// directory its memory count.
func printTree(w io.Writer, base string, items []trove.MemoryListItem, folded map[string]int) {
	fmt.Fprintln(w, base)
	printed := map[string]bool{}
	for _, it := range items {
		p := ""
		if it.Memory != nil {
			p = it.Memory.Path
		} else {
			p = strings.TrimSuffix(it.Prefix.Path, "/")
		}
		segs := strings.Split(strings.TrimPrefix(p, base), "/")
		// the directories above p not printed yet
		for i := range len(segs) - 1 {
			d := strings.Join(segs[:i+1], "/")
			if !printed[d] {
				printed[d] = true
				fmt.Fprintf(w, "%s%s/\n", strings.Repeat("  ", i+1), segs[i])
			}
		}
		indent := strings.Repeat("  ", len(segs))
		name := segs[len(segs)-1]
		if it.Memory != nil {
			fmt.Fprintf(w, "%s%s  (%s)\n", indent, name, sizeText(it.Memory.SizeBytes))
		} else {
			n := folded[it.Prefix.Path]
			fmt.Fprintf(w, "%s%s/  (%d %s)\n", indent, name, n, plural(n, "memory", "memories"))
		}
	}
}

func sizeText(n int) string { return strconv.Itoa(n) + " B" }

// count is n and the noun for n: "1 memory", "2 memories", "0 memories".
func count(n int, one, many string) string { return strconv.Itoa(n) + " " + plural(n, one, many) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (c *clientCmd) catCmd() *cobra.Command {
	var asOf string
	cmd := &cobra.Command{
		Use:   "cat STORE PATH [--as-of MOMENT]",
		Short: "Print a memory's content, now or as it was at a moment",
		Long: `cat prints a memory's content. With --as-of (a duration ago, a date, a local
date and time, an RFC 3339 time, a version ID or a version number) it prints the content the memory had then, PATH being its
path then (or its ID); a redacted version is refused, its content is gone.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asOf != "" {
				return c.catAsOf(cmd, args[0], args[1], asOf)
			}
			return c.withTree(cmd, args[0], readStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				m, err := lookup(k, st, t, args[1], trove.ViewFull)
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireMemory(m))
				}
				_, err = io.WriteString(c.e.stdout, *m.Content)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&asOf, "as-of", "", "print the content at this moment (5m, 2h ago, 2026-11-30, 2026-11-30 12:00, RFC 3339, a version ID or number)")
	return cmd
}

// catAsOf prints one memory as it was at a moment.
func (c *clientCmd) catAsOf(cmd *cobra.Command, storeRef, ref, asOf string) error {
	at, err := parseMoment(c.e.stderr, "--as-of", asOf)
	if err != nil {
		return err
	}
	return c.withStore(cmd, storeRef, func(k *conn, st *trove.Store) error {
		h, err := k.history()
		if err != nil {
			return err
		}
		if !strings.HasPrefix(ref, trove.PrefixMemory) {
			ref = memPath(ref)
		}
		v, err := h.GetMemoryAsOf(k.ctx, st.ID, at, ref, trove.ViewFull)
		if trove.ErrorCode(err) == trove.ENOTFOUND && strings.HasPrefix(ref, "/") {
			return trove.Errorf(trove.ENOTFOUND, "no memory at %s in store %q as of %s (see trove memories ls %s --as-of %s)", ref, st.Name, asOf, shellQuote(st.Name), shellQuote(asOf))
		}
		if err != nil {
			return err
		}
		if c.json() {
			return c.printJSON(httpapi.WireHistVersion(v))
		}
		if v.RedactedAt != nil {
			return fmt.Errorf("memory %s as of %s is version %s, which was redacted: its content is gone", v.MemoryID, asOf, v.ID)
		}
		_, err = io.WriteString(c.e.stdout, *v.Content)
		return err
	})
}

func (c *clientCmd) writeCmd() *cobra.Command {
	var ifSHA string
	cmd := &cobra.Command{
		Use:   "write STORE PATH [FILE]",
		Short: "Write a memory from FILE, or from standard input without FILE (or with -)",
		Long: `write creates the memory at PATH, or replaces its content. With
--if-sha256 it replaces it only if its content still has that hash (exit 4
otherwise).`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			var data []byte
			var err error
			if len(args) == 3 && args[2] != "-" {
				data, err = os.ReadFile(args[2])
			} else {
				data, err = io.ReadAll(c.e.stdin)
			}
			if err != nil {
				return fmt.Errorf("reading the content: %w", err)
			}
			return c.withTree(cmd, args[0], writeStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				p := memPath(args[1])
				content := string(data)
				m, err := t.Lookup(k.ctx, p, trove.ViewBasic)
				if err != nil {
					return err
				}
				verb := "updated"
				if m == nil {
					if ifSHA != "" {
						return trove.Errorf(trove.EPRECONDITION, "no memory at %s in store %q to hold --if-sha256 %s", p, st.Name, ifSHA)
					}
					m, err = t.Create(k.ctx, p, content)
					verb = "created"
				} else {
					m, err = t.Update(k.ctx, m.ID, trove.UpdateMemoryParams{Content: &content, PreconditionSHA256: ifSHA})
				}
				if err != nil {
					return err
				}
				return c.showWrite(verb, m)
			})
		},
	}
	cmd.Flags().StringVar(&ifSHA, "if-sha256", "", "replace only a memory whose content has this SHA-256")
	return cmd
}

// showWrite reports a write, or prints the memory's JSON.
func (c *clientCmd) showWrite(verb string, m *trove.Memory) error {
	if c.json() {
		return c.printJSON(httpapi.WireMemory(m))
	}
	fmt.Fprintf(c.e.stdout, "%s %s (%s, %s, version %s)\n", verb, m.Path, m.ID, sizeText(m.SizeBytes), m.VersionID)
	return nil
}

func (c *clientCmd) editCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "edit STORE PATH",
		Short: "Edit a memory in $EDITOR; saved only if nobody changed it meanwhile",
		Long: `edit opens the memory's content (empty for a new memory) in $VISUAL or
$EDITOR (default vi). When the editor exits, the text is saved with the
content_sha256 that was read, so a change made by another writer meanwhile is
never overwritten: edit then prints the diff from the store's content to
yours, keeps your text in a file it names, and exits 4.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withTree(cmd, args[0], writeStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				return c.edit(k, st, t, args[1])
			})
		},
	}
}

// edit opens the memory ref (a path or a mem_ ID; a missing path is a new
// memory) in the editor and saves the text conditionally (see editCmd).
func (c *clientCmd) edit(k *conn, st *trove.Store, t *storetree.Tree, ref string) error {
	p := memPath(ref)
	if strings.HasPrefix(ref, trove.PrefixMemory) {
		p = ref
	}
	m, err := lookup(k, st, t, p, trove.ViewFull)
	if err != nil && (trove.ErrorCode(err) != trove.ENOTFOUND || strings.HasPrefix(p, trove.PrefixMemory)) {
		return err
	}
	old := ""
	if m != nil {
		old, p = *m.Content, m.Path
	}
	dir, err := os.MkdirTemp("", "trove-edit-")
	if err != nil {
		return err
	}
	file := filepath.Join(dir, storetree.Base(p))
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	if err := os.WriteFile(file, []byte(old), 0o600); err != nil {
		return err
	}
	if err := runEditor(c.e, file); err != nil {
		keep = true
		return fmt.Errorf("%w; nothing was saved, your text is in %s", err, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	mine := string(b)
	if m != nil && mine == old {
		fmt.Fprintf(c.e.stdout, "%s unchanged\n", p)
		return nil
	}
	var saved *trove.Memory
	verb := "updated"
	if m == nil {
		saved, err = t.Create(k.ctx, p, mine)
		verb = "created"
	} else {
		saved, err = t.Update(k.ctx, m.ID, trove.UpdateMemoryParams{Content: &mine, PreconditionSHA256: m.SHA256})
	}
	if err == nil {
		return c.showWrite(verb, saved)
	}
	keep = true
	return c.editRefused(k, st, t, err, p, m == nil, mine, file)
}

// editRefused explains a save edit could not make: for a change by another
// writer, the diff from the store's text to mine and how to merge (exit
// 4); either way, where mine was kept.
func (c *clientCmd) editRefused(k *conn, st *trove.Store, t *storetree.Tree, err error, p string, created bool, mine, file string) error {
	code := trove.ErrorCode(err)
	if code != trove.EPRECONDITION && code != trove.EPATHCONFLICT && code != trove.ENOTFOUND {
		return fmt.Errorf("%w; your text is in %s", err, file)
	}
	theirs := ""
	if cur, lerr := t.Lookup(k.ctx, p, trove.ViewFull); lerr == nil && cur != nil {
		theirs = *cur.Content
	}
	fmt.Fprint(c.e.stdout, unifiedDiff(p+" (store)", p+" (yours)", theirs, mine))
	what := "another writer changed " + p + " since you opened it"
	if created {
		what = "another writer created " + p + " since you opened it"
	} else if code == trove.ENOTFOUND {
		what = "another writer deleted or moved " + p + " since you opened it"
	}
	return &exitError{code: exitConflict, err: fmt.Errorf("%s; nothing was saved (the diff above goes from the store's text to yours); your text is in %s: merge it and run trove memories write %s %s %s", what, file, shellQuote(st.Name), p, shellQuote(file))}
}

// runEditor runs $VISUAL, else $EDITOR, else vi (notepad on Windows) on
// file, through the shell (cmd on Windows) so that an editor with arguments
// ("code --wait") works.
func runEditor(e *env, file string) error {
	ed := os.Getenv("VISUAL")
	if ed == "" {
		ed = os.Getenv("EDITOR")
	}
	if ed == "" {
		ed = "vi"
		if runtime.GOOS == "windows" {
			ed = "notepad"
		}
	}
	cmd := exec.CommandContext(e.ctx, "/bin/sh", "-c", ed+` "$1"`, "sh", file)
	if runtime.GOOS == "windows" {
		cmd = exec.CommandContext(e.ctx, "cmd", "/c", ed+` "`+file+`"`)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	if f, ok := e.stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the editor (%s) failed: %v", ed, err)
	}
	return nil
}

func (c *clientCmd) mvCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mv STORE FROM TO",
		Short: "Move a memory, or a directory with everything below it (atomically)",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withTree(cmd, args[0], writeStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				from, to := memPath(args[1]), memPath(args[2])
				m, err := memoryOrDir(k, st, t, from)
				if err != nil {
					return err
				}
				if m != nil {
					u, err := t.Update(k.ctx, m.ID, trove.UpdateMemoryParams{Path: &to})
					if err != nil {
						return err
					}
					if c.json() {
						return c.printJSON(httpapi.WireMemory(u))
					}
					fmt.Fprintf(c.e.stdout, "moved %s to %s\n", from, to)
					return nil
				}
				moved, err := t.RenameDir(k.ctx, from, to)
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(wirePage(moved, func(m trove.Memory) any { return httpapi.WireMemory(&m) }))
				}
				fmt.Fprintf(c.e.stdout, "moved %s/ to %s/ (%d %s)\n", from, to, len(moved), plural(len(moved), "memory", "memories"))
				return nil
			})
		},
	}
}

// memoryOrDir looks p up in st: the memory at p, or nil when p is a
// directory (some memory lies below it). Neither is ENOTFOUND naming both.
func memoryOrDir(k *conn, st *trove.Store, t *storetree.Tree, p string) (*trove.Memory, error) {
	m, err := t.Lookup(k.ctx, p, trove.ViewBasic)
	if err != nil || m != nil {
		return m, err
	}
	has, err := t.HasChildren(k.ctx, p)
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, trove.Errorf(trove.ENOTFOUND, "no memory or directory at %s in store %q", p, st.Name)
	}
	return nil, nil
}

func (c *clientCmd) rmCmd() *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "rm STORE PATH [-r]",
		Short: "Delete a memory, or with -r a directory with everything below it (atomically)",
		Long:  "rm deletes a memory (a version records the deletion; its history stays), or with -r every memory below a directory.",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withTree(cmd, args[0], writeStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				p := memPath(args[1])
				m, err := memoryOrDir(k, st, t, p)
				if err != nil {
					return err
				}
				if m != nil {
					if err := t.Delete(k.ctx, m.ID, ""); err != nil {
						return err
					}
					if c.json() {
						return c.printJSON(httpapi.WireDeleted(m.ID, "memory_deleted"))
					}
					fmt.Fprintf(c.e.stdout, "deleted %s (%s)\n", p, m.ID)
					return nil
				}
				if !recursive {
					return usageError("%s is a directory: add -r to delete every memory below it", p)
				}
				gone, err := t.DeleteDir(k.ctx, p)
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(wirePage(gone, func(m trove.Memory) any { return httpapi.WireDeleted(m.ID, "memory_deleted") }))
				}
				fmt.Fprintf(c.e.stdout, "deleted %s/ (%d %s)\n", p, len(gone), plural(len(gone), "memory", "memories"))
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "delete a directory and everything below it")
	return cmd
}

func (c *clientCmd) historyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "history STORE PATH",
		Short: "List a memory's versions, newest first (PATH may be a mem_ ID; a deleted path shows the versions of the memory last there)",
		Long: `history lists a memory's versions, newest first. SEQ ("seq" with -o json) is
the version's number in the store's history: a moment for --as-of, diff, fork
and rollback --since.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withTree(cmd, args[0], readStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				id, gone, err := memoryID(k, st, t, args[1])
				if err != nil {
					return err
				}
				vs, err := listVersions(k, st.ID, trove.ListVersionsParams{MemoryID: id})
				if err != nil {
					return err
				}
				if len(vs) == 0 {
					return trove.Errorf(trove.ENOTFOUND, "no versions of memory %s in store %q", id, st.Name)
				}
				if c.json() {
					return c.printJSON(wirePage(vs, func(v trove.MemoryVersion) any { return httpapi.WireHistVersion(&v) }))
				}
				if gone != nil {
					fmt.Fprintf(c.e.stdout, "%s was deleted (version %s, %s); the versions of memory %s, which was there:\n",
						memPath(args[1]), gone.ID, fmtTime(gone.CreatedAt), id)
				}
				return c.versionTable(vs)
			})
		},
	}
}

// memoryID returns the ID of the memory ref names: a mem_ ID as it is, else
// the live memory at the path, else the memory that was last at the path
// (deleted, or moved away), with the version that ended its time there.
// ENOTFOUND when no memory was ever at the path.
func memoryID(k *conn, st *trove.Store, t *storetree.Tree, ref string) (id string, gone *trove.MemoryVersion, err error) {
	if strings.HasPrefix(ref, trove.PrefixMemory) {
		return ref, nil, nil
	}
	m, err := lookup(k, st, t, ref, trove.ViewBasic)
	if err == nil || trove.ErrorCode(err) != trove.ENOTFOUND {
		if err != nil {
			return "", nil, err
		}
		return m.ID, nil, nil
	}
	p := memPath(ref)
	last, err := lastAtPath(k, st.ID, p)
	if err != nil {
		return "", nil, err
	}
	if last == nil {
		return "", nil, trove.Errorf(trove.ENOTFOUND, "no memory was ever at %s in store %q (see trove memories ls %s)", p, st.Name, shellQuote(st.Name))
	}
	return last.MemoryID, last, nil
}

// lastAtPath returns the newest version of the store recorded at path p
// (the deletion or the move away of the memory last there), or nil when no
// version names p. It reads the store's history newest first, page by page,
// until it finds one.
func lastAtPath(k *conn, storeID, p string) (*trove.MemoryVersion, error) {
	for v, err := range trove.Items(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		return k.svc.ListVersions(ctx, storeID, trove.ListVersionsParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return nil, err
		}
		if v.Path != nil && *v.Path == p {
			return &v, nil
		}
	}
	return nil, nil
}

// listVersions lists every version matching p, newest first.
func listVersions(k *conn, storeID string, p trove.ListVersionsParams) ([]trove.MemoryVersion, error) {
	p.Limit = 100
	list := k.svc.ListVersions
	if s, ok := k.svc.(interface {
		ListVersionsWithSeq(context.Context, string, trove.ListVersionsParams) (*trove.Page[trove.MemoryVersion], error)
	}); ok {
		list = s.ListVersionsWithSeq // a server's /v1 versions carry no seq
	}
	return trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		p.Cursor = cursor
		return list(ctx, storeID, p)
	})
}

// versionTable prints versions as a table.
func (c *clientCmd) versionTable(vs []trove.MemoryVersion) error {
	rows := make([][]string, len(vs))
	for i, v := range vs {
		path, size, sha := "-", "-", "-"
		if v.Path != nil {
			path = *v.Path
		}
		if v.SizeBytes != nil {
			size = sizeText(*v.SizeBytes)
		}
		if v.SHA256 != nil {
			sha = (*v.SHA256)[:12]
		}
		op := string(v.Operation)
		if v.RedactedAt != nil {
			op += " (redacted)"
		}
		seq := "-"
		if v.Seq != 0 {
			seq = strconv.FormatInt(v.Seq, 10)
		}
		rows[i] = []string{seq, v.ID, op, path, size, sha, actorText(v.CreatedBy), fmtTime(v.CreatedAt)}
	}
	return c.table([]string{"SEQ", "VERSION", "OPERATION", "PATH", "SIZE", "SHA256", "BY", "CREATED"}, rows)
}

func actorText(a *trove.Actor) string {
	if a == nil {
		return "-"
	}
	id, _ := a.ID()
	return orDash(id)
}

func (c *clientCmd) diffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff STORE (PATH [FROM [TO]] | VERSION [VERSION2])",
		Short: "Show what changed in a memory: between two moments, or between two versions",
		Long: `diff prints a unified diff of one memory's content.

With PATH (or a mem_ ID): from the memory as of FROM to the memory as of TO
(default now); without FROM, what its last change did (its previous version
to its current content). FROM and TO are moments: a time, a version ID or a
version number, or "now".

With VERSION (memver_…): from that version to VERSION2, or without VERSION2
to the memory's current content (empty when the memory is deleted; a
redacted version counts as empty).

With -o json it prints {"from", "to", "diff"}: the two labels and the
unified diff text.`,
		Args: cobra.RangeArgs(2, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.HasPrefix(args[1], trove.PrefixVersion) {
				if len(args) > 3 {
					return commandUsageError(cmd, "memories diff: give VERSION [VERSION2], or PATH [FROM [TO]]")
				}
				return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
					return c.diffVersions(k, st, args[1:])
				})
			}
			return c.withTree(cmd, args[0], readStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				return c.diffPath(k, st, t, args[1], args[2:])
			})
		},
	}
}

// diffVersions diffs ids[0] to ids[1], or to the memory's current content.
func (c *clientCmd) diffVersions(k *conn, st *trove.Store, ids []string) error {
	a, err := getVersion(k, st, ids[0])
	if err != nil {
		return err
	}
	from := diffSide{versionText(a), versionLabel(a)}
	var to diffSide
	if len(ids) == 2 {
		b, err := getVersion(k, st, ids[1])
		if err != nil {
			return err
		}
		to = diffSide{versionText(b), versionLabel(b)}
	} else {
		m, err := k.svc.GetMemory(k.ctx, st.ID, a.MemoryID, trove.ViewFull)
		switch {
		case trove.ErrorCode(err) == trove.ENOTFOUND:
			to.label = "(deleted)"
		case err != nil:
			return err
		default:
			to = diffSide{*m.Content, m.Path + " (current)"}
		}
	}
	return c.printDiff(from, to)
}

// diffSide is one side of a diff: the text and its label.
type diffSide struct{ text, label string }

// diffPath diffs the memory ref (a path or a mem_ ID) between two moments
// (moments[0], default its previous version; moments[1], default now).
func (c *clientCmd) diffPath(k *conn, st *trove.Store, t *storetree.Tree, ref string, moments []string) error {
	if !strings.HasPrefix(ref, trove.PrefixMemory) {
		ref = memPath(ref)
	}
	if len(moments) == 0 {
		id, _, err := memoryID(k, st, t, ref)
		if err != nil {
			return err
		}
		vs, err := listVersions(k, st.ID, trove.ListVersionsParams{MemoryID: id})
		if err != nil {
			return err
		}
		if len(vs) < 2 {
			return fmt.Errorf("%s has one version, nothing to compare it with; give FROM (a moment) or see trove memories history", ref)
		}
		return c.diffVersions(k, st, []string{vs[1].ID, vs[0].ID})
	}
	from, err := c.sideAsOf(k, st, ref, "FROM", moments[0])
	if err != nil {
		return err
	}
	toMoment := "now"
	if len(moments) == 2 {
		toMoment = moments[1]
	}
	to, err := c.sideAsOf(k, st, ref, "TO", toMoment)
	if err != nil {
		return err
	}
	return c.printDiff(from, to)
}

// sideAsOf is the memory ref as of the moment s: its content and a label
// naming the moment; empty, labelled "(absent)", when it did not exist then.
func (c *clientCmd) sideAsOf(k *conn, st *trove.Store, ref, name, s string) (diffSide, error) {
	v, err := c.memoryAsOf(k, st, ref, name, s)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return diffSide{label: ref + " as of " + s + " (absent)"}, nil
	}
	if err != nil {
		return diffSide{}, err
	}
	return diffSide{versionText(v), ref + " as of " + s + " (" + v.ID + ")"}, nil
}

// memoryAsOf reads the version of the memory ref that was current at the
// moment s (the argument name); ENOTFOUND when it did not exist then.
func (c *clientCmd) memoryAsOf(k *conn, st *trove.Store, ref, name, s string) (*trove.MemoryVersion, error) {
	at, err := parseMoment(c.e.stderr, name, s)
	if err != nil {
		return nil, err
	}
	h, err := k.history()
	if err != nil {
		return nil, err
	}
	v, err := h.GetMemoryAsOf(k.ctx, st.ID, at, ref, trove.ViewFull)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, trove.Errorf(trove.ENOTFOUND, "no memory at %s in store %q as of %s", ref, st.Name, s)
	}
	return v, err
}

// printDiff prints the unified diff from one side to the other, or its
// JSON.
func (c *clientCmd) printDiff(from, to diffSide) error {
	d := unifiedDiff(from.label, to.label, from.text, to.text)
	if c.json() {
		return c.printJSON(map[string]string{"from": from.label, "to": to.label, "diff": d})
	}
	_, err := io.WriteString(c.e.stdout, d)
	return err
}

func (c *clientCmd) restoreCmd() *cobra.Command {
	var ifSHA string
	cmd := &cobra.Command{
		Use:   "restore STORE PATH VERSION [--if-sha256 HASH]",
		Short: "Bring back a memory's content from a version: a new version with the old content",
		Long: `restore writes the content VERSION held to PATH as a new version (history is
never rewritten). VERSION is a version ID (memver_…), or a moment (a time or a
version number): the memory at PATH as of then. A deleted memory is created
again at PATH.

The write is conditional: it happens only if PATH still holds what restore
read (or, with --if-sha256, content with that hash), and only if nothing was
created at a deleted PATH meanwhile; otherwise nothing is written (exit 4).`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withTree(cmd, args[0], writeStore, func(k *conn, st *trove.Store, t *storetree.Tree) error {
				return c.restore(k, st, t, memPath(args[1]), args[2], ifSHA)
			})
		},
	}
	cmd.Flags().StringVar(&ifSHA, "if-sha256", "", "restore only while the memory's content has this SHA-256")
	return cmd
}

// restore writes the content of version ref (an ID, or a moment of p) to
// p, conditionally (see restoreCmd).
func (c *clientCmd) restore(k *conn, st *trove.Store, t *storetree.Tree, p, ref, ifSHA string) error {
	var v *trove.MemoryVersion
	var err error
	if strings.HasPrefix(ref, trove.PrefixVersion) {
		v, err = getVersion(k, st, ref)
	} else {
		v, err = c.memoryAsOf(k, st, p, "VERSION", ref)
	}
	if err != nil {
		return err
	}
	switch {
	case v.RedactedAt != nil:
		return fmt.Errorf("version %s was redacted: its content is gone and cannot be restored", v.ID)
	case v.Content == nil:
		return fmt.Errorf("version %s records the memory's deletion; restore an earlier version (see trove memories history %s %s)", v.ID, shellQuote(st.Name), p)
	}
	m, err := t.Lookup(k.ctx, p, trove.ViewBasic)
	if err != nil {
		return err
	}
	if m == nil {
		if ifSHA != "" {
			return trove.Errorf(trove.EPRECONDITION, "no memory at %s in store %q to hold --if-sha256 %s", p, st.Name, ifSHA)
		}
		if m, err = t.Create(k.ctx, p, *v.Content); err != nil {
			return err
		}
		return c.showWrite("restored "+v.ID+" as", m)
	}
	if ifSHA == "" {
		ifSHA = m.SHA256
	}
	if m, err = t.Update(k.ctx, m.ID, trove.UpdateMemoryParams{Content: v.Content, PreconditionSHA256: ifSHA}); err != nil {
		return err
	}
	return c.showWrite("restored "+v.ID+" to", m)
}

// getVersion reads a version with its content; ENOTFOUND names the store.
func getVersion(k *conn, st *trove.Store, id string) (*trove.MemoryVersion, error) {
	v, err := k.svc.GetVersion(k.ctx, st.ID, id, trove.ViewFull)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, trove.Errorf(trove.ENOTFOUND, "no version %s in store %q (see trove memories history)", id, st.Name)
	}
	return v, err
}

func versionText(v *trove.MemoryVersion) string {
	if v.Content == nil {
		return ""
	}
	return *v.Content
}

func versionLabel(v *trove.MemoryVersion) string {
	switch {
	case v.RedactedAt != nil:
		return v.ID + " (redacted)"
	case v.Operation == trove.OpDeleted:
		return v.ID + " (deleted)"
	case v.Path != nil:
		return *v.Path + " " + v.ID
	}
	return v.ID
}
