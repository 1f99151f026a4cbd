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

// storeTree opens the target and the store ref as a storetree.Tree.
func (c *clientCmd) storeTree(cmd *cobra.Command, ref string) (*conn, *trove.Store, *storetree.Tree, error) {
	k, st, err := c.openStore(cmd, ref)
	if err != nil {
		return nil, nil, nil, err
	}
	return k, st, storetree.New(k.svc, st.ID, trove.Limits{}), nil
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
	cmd.AddCommand(c.lsCmd(), c.catCmd(), c.writeCmd(), c.editCmd(), c.mvCmd(), c.rmCmd(), c.historyCmd(), c.diffCmd())
	return cmd
}

func (c *clientCmd) lsCmd() *cobra.Command {
	var prefix, asOf string
	var depth int
	cmd := &cobra.Command{
		Use:   "ls STORE [--prefix DIR] [--depth N] [--as-of MOMENT]",
		Short: "Show a store's memories as a tree",
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
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
			dir := memPath(prefix)
			var mems []trove.Memory
			var redacted []string
			if asOf != "" {
				page, err := c.listAsOf(k, st, dir, at)
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireAsOfPage(page))
				}
				fmt.Fprintf(c.e.stdout, "store %q as of version %d\n", st.Name, page.Seq)
				for _, v := range page.Data {
					if v.Path == nil {
						redacted = append(redacted, v.MemoryID)
						continue
					}
					mems = append(mems, trove.Memory{ID: v.MemoryID, Path: *v.Path, SizeBytes: *v.SizeBytes, VersionID: v.ID})
				}
			} else if err := t.List(k.ctx, dir, 0, trove.ViewBasic, func(it trove.MemoryListItem) bool {
				if it.Memory != nil {
					mems = append(mems, *it.Memory)
				}
				return true
			}); err != nil {
				return err
			}
			for _, id := range redacted {
				fmt.Fprintf(c.e.stdout, "(redacted: memory %s; its path and content are gone)\n", id)
			}
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
			if len(mems) == 0 {
				if dir == "/" {
					fmt.Fprintf(c.e.stdout, "store %q is empty\n", st.Name)
				} else {
					fmt.Fprintf(c.e.stdout, "no memories below %s in store %q\n", dir, st.Name)
				}
				return nil
			}
			printTree(c.e.stdout, base, items, folded)
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "/", "directory to list")
	cmd.Flags().IntVar(&depth, "depth", 0, "levels to show; deeper directories are folded (0: every level)")
	cmd.Flags().StringVar(&asOf, "as-of", "", "show the store as it was at this moment (5m, 2h ago, 2026-11-30, 2026-11-30 12:00, RFC 3339, a version ID or number)")
	return cmd
}

// listAsOf lists every memory below dir as of a moment, following pages;
// the result's Seq is the moment the first page resolved to.
func (c *clientCmd) listAsOf(k *conn, st *trove.Store, dir string, at trove.Moment) (*trove.AsOfPage, error) {
	h, err := k.history()
	if err != nil {
		return nil, err
	}
	out := &trove.AsOfPage{Data: []trove.MemoryVersion{}}
	p := trove.ListMemoriesParams{PathPrefix: storetree.Prefix(dir), Limit: 1000}
	for {
		page, err := h.ListMemoriesAsOf(k.ctx, st.ID, at, p)
		if err != nil {
			return nil, err
		}
		if p.Cursor == "" {
			out.Seq = page.Seq
		}
		out.Data = append(out.Data, page.Data...)
		if page.NextPage == "" {
			return out, nil
		}
		p.Cursor = page.NextPage
	}
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
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
			m, err := lookup(k, st, t, args[1], trove.ViewFull)
			if err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(httpapi.WireMemory(m))
			}
			_, err = io.WriteString(c.e.stdout, *m.Content)
			return err
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
	k, st, err := c.openStore(cmd, storeRef)
	if err != nil {
		return err
	}
	defer k.close()
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
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
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
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
			p := memPath(args[1])
			if strings.HasPrefix(args[1], trove.PrefixMemory) {
				p = args[1]
			}
			m, err := lookup(k, st, t, p, trove.ViewFull)
			if err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
				return err
			}
			if m == nil && strings.HasPrefix(p, trove.PrefixMemory) {
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
			switch code := trove.ErrorCode(err); code {
			case "":
				return c.showWrite(verb, saved)
			case trove.EPRECONDITION, trove.EPATHCONFLICT, trove.ENOTFOUND:
				keep = true
				theirs := ""
				if cur, lerr := t.Lookup(k.ctx, p, trove.ViewFull); lerr == nil && cur != nil {
					theirs = *cur.Content
				}
				fmt.Fprint(c.e.stdout, unifiedDiff(p+" (store)", p+" (yours)", theirs, mine))
				what := "another writer changed " + p + " since you opened it"
				if m == nil {
					what = "another writer created " + p + " since you opened it"
				} else if code == trove.ENOTFOUND {
					what = "another writer deleted or moved " + p + " since you opened it"
				}
				return &exitError{code: exitConflict, err: fmt.Errorf("%s; nothing was saved (the diff above goes from the store's text to yours); your text is in %s: merge it and run trove memories write %s %s %s", what, file, shellQuote(st.Name), p, shellQuote(file))}
			}
			keep = true
			return fmt.Errorf("%w; your text is in %s", err, file)
		},
	}
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
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
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
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
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
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "delete a directory and everything below it")
	return cmd
}

func (c *clientCmd) historyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "history STORE PATH",
		Short: "List a memory's versions, newest first (PATH may be a mem_ ID, also of a deleted memory)",
		Long: `history lists a memory's versions, newest first. SEQ ("seq" with -o json) is
the version's number in the store's history: a moment for --as-of, diff, fork
and rollback --since.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, st, t, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
			id := args[1]
			if !strings.HasPrefix(id, trove.PrefixMemory) {
				m, err := lookup(k, st, t, id, trove.ViewBasic)
				if err != nil {
					return err
				}
				id = m.ID
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
			return c.versionTable(vs)
		},
	}
}

// listVersions lists every version matching p, newest first.
func listVersions(k *conn, storeID string, p trove.ListVersionsParams) ([]trove.MemoryVersion, error) {
	var all []trove.MemoryVersion
	p.Limit = 100
	list := k.svc.ListVersions
	if s, ok := k.svc.(interface {
		ListVersionsWithSeq(context.Context, string, trove.ListVersionsParams) (*trove.Page[trove.MemoryVersion], error)
	}); ok {
		list = s.ListVersionsWithSeq // a server's /v1 versions carry no seq
	}
	for {
		page, err := list(k.ctx, storeID, p)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if page.NextPage == "" {
			return all, nil
		}
		p.Cursor = page.NextPage
	}
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
		Use:   "diff STORE VERSION [VERSION2]",
		Short: "Show what changed between two versions, or from a version to the memory's current content",
		Long: `diff prints a unified diff from VERSION to VERSION2, or without VERSION2 to
the memory's current content (empty when the memory is deleted; a redacted
version counts as empty). With -o json it prints {"from", "to", "diff"}: the
two labels and the unified diff text.`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, st, _, err := c.storeTree(cmd, args[0])
			if err != nil {
				return err
			}
			defer k.close()
			a, err := getVersion(k, st, args[1])
			if err != nil {
				return err
			}
			oldText, oldLabel := versionText(a), versionLabel(a)
			var newText, newLabel string
			if len(args) == 3 {
				b, err := getVersion(k, st, args[2])
				if err != nil {
					return err
				}
				newText, newLabel = versionText(b), versionLabel(b)
			} else {
				m, err := k.svc.GetMemory(k.ctx, st.ID, a.MemoryID, trove.ViewFull)
				switch {
				case trove.ErrorCode(err) == trove.ENOTFOUND:
					newLabel = "(deleted)"
				case err != nil:
					return err
				default:
					newText, newLabel = *m.Content, m.Path+" (current)"
				}
			}
			if c.json() {
				return c.printJSON(map[string]string{"from": oldLabel, "to": newLabel, "diff": unifiedDiff(oldLabel, newLabel, oldText, newText)})
			}
			fmt.Fprint(c.e.stdout, unifiedDiff(oldLabel, newLabel, oldText, newText))
			return nil
		},
	}
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
