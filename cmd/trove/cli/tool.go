package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/mcpserver"
	"github.com/trovehq/trove/memtool"
)

func newToolCmd(e *env) *cobra.Command {
	var root string
	var guards guardFlags
	var sf storeFlags
	var storeRefs []string
	var sessionID string
	cmd := &cobra.Command{
		Use:   "tool (--root DIR | --store NAME_OR_ID [--store ...] | --session ID)",
		Short: "Execute memory tool calls read as JSON lines on stdin",
		Long:  toolLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			modes := 0
			for _, set := range []bool{root != "", len(storeRefs) > 0, sessionID != ""} {
				if set {
					modes++
				}
			}
			if modes != 1 {
				return &exitError{code: exitUsage, err: errors.New("tool: give exactly one of --root DIR (a local directory), --store NAME_OR_ID (memory stores) or --session ID (a session's stores)")}
			}
			if err := guards.validate("tool"); err != nil {
				return err
			}
			if root == "" {
				if guards.expireAfter > 0 {
					return &exitError{code: exitUsage, err: errors.New("tool: --expire-after works only with --root; a store keeps every version, so nothing is swept from it")}
				}
				srv, _, closeSvc, err := openMCPServer(e, cmd, &sf, storeRefs, sessionID, mcpserver.Options{Tool: guards.options(), Version: Version()})
				if err != nil {
					return err
				}
				defer closeSvc()
				return runToolLines(e, toolLineMax(guards.maxFileSize), srv.Execute)
			}
			fsys, err := memtool.NewDirFS(root)
			if err != nil {
				return fmt.Errorf("tool: opening --root: %w", err)
			}
			defer fsys.Close()
			tool := memtool.New(fsys, guards.options())
			if err := guards.sweep(e, tool); err != nil {
				return fmt.Errorf("tool: %w", err)
			}
			return runToolLines(e, toolLineMax(guards.maxFileSize), tool.Execute)
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "host directory that /memories maps to (created if missing)")
	cmd.Flags().StringArrayVar(&storeRefs, "store", nil, "memory store that /memories maps to, by name or ID; repeat for several stores")
	cmd.Flags().StringVar(&sessionID, "session", "", "the stores attached to this session (sesn_…) at /memories/<slug>/, with the session's access")
	sf.register(cmd)
	guards.register(cmd)
	return cmd
}

// toolLong is tool's help text.
const toolLong = `Execute Claude memory tool (memory_20250818) calls against a local directory
(--root) or memory stores (--store, --session).

Each line of standard input is one tool input, e.g.
  {"command":"view","path":"/memories"}
(a whole tool_use block {"type":"tool_use","input":{...}} is accepted too).
For each non-blank line one JSON line is written to standard output:
  {"is_error":false,"content":"..."}
where content is a string for text results and an array of content blocks
for images. A malformed line gets an is_error result; the command only
stops at the end of the input. /memories is the directory given by --root.

With --store, /memories is the memory store (several --store flags: each
store at /memories/<slug>/), and every write is a version in it, as with
trove mcp; --session serves a session's stores at their mount names, acting
as the session. Stores are on the target every client command uses (see
trove status). This is the bridge for the SDKs' own memory tool helpers
(docs/integrations.md): one long-lived process, one line in, one line out.

With --expire-after, files not read for that long are deleted before the
first line is read, one "[expire] deleted PATH" line each on standard error.`

// guardFlags are the engine's guards that trove tool and trove agent expose:
// --max-file-size, --no-secret-filter, --overwrite and --expire-after.
type guardFlags struct {
	maxFileSize    int64
	noSecretFilter bool
	overwrite      bool
	expireAfter    time.Duration
}

// register adds the flags to cmd.
func (g *guardFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&g.maxFileSize, "max-file-size", memtool.DefaultMaxFileSize, "largest file, in bytes, that create, str_replace or insert may write")
	f.BoolVar(&g.noSecretFilter, "no-secret-filter", false, "let writes through that contain private keys or API keys (refused by default)")
	f.BoolVar(&g.overwrite, "overwrite", false, "let create replace existing files instead of failing")
	f.DurationVar(&g.expireAfter, "expire-after", 0, "delete files not read for this long (e.g. 720h) when the command starts; off when 0")
}

// validate returns a usage error (exit code 2) for a non-positive
// --max-file-size or a negative --expire-after; cmd names the command in
// the message.
func (g *guardFlags) validate(cmd string) error {
	if g.maxFileSize < 1 {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: --max-file-size must be at least 1 byte, got %d", cmd, g.maxFileSize)}
	}
	if g.expireAfter < 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: --expire-after must be a positive duration such as 720h, got %s", cmd, g.expireAfter)}
	}
	return nil
}

// options returns the engine options the flags describe.
func (g *guardFlags) options() memtool.Options {
	opt := memtool.Options{MaxFileSize: g.maxFileSize, Overwrite: g.overwrite}
	if g.noSecretFilter {
		opt.SecretFilter = memtool.AllowSecrets
	}
	return opt
}

// sweep runs tool.Sweep when --expire-after is set, writing one
// "[expire] deleted PATH (not read for D)" line per deleted file to
// e.stderr, and returns the error that stopped it (the files deleted before
// it are still reported). It does nothing when --expire-after is unset.
func (g *guardFlags) sweep(e *env, tool *memtool.Tool) error {
	if g.expireAfter <= 0 {
		return nil
	}
	deleted, err := tool.Sweep(e.ctx, g.expireAfter)
	for _, p := range deleted {
		fmt.Fprintf(e.stderr, "[expire] deleted %s (not read for %s)\n", p, g.expireAfter)
	}
	if err != nil {
		return fmt.Errorf("--expire-after: %w", err)
	}
	return nil
}

// runToolLines executes one tool call per input line with exec until EOF.
// A line longer than maxLine bytes is answered with an error result and
// skipped, so memory stays bounded whatever arrives on stdin.
func runToolLines(e *env, maxLine int, exec func(context.Context, []byte) memtool.Result) error {
	in := bufio.NewReader(e.stdin)
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, tooLong, err := readToolLine(in, maxLine)
		if tooLong || len(bytes.TrimSpace(line)) > 0 {
			res := memtool.Result{IsError: true, Content: []memtool.Block{{Type: memtool.BlockText,
				Text: fmt.Sprintf("Error: the input line is over %d bytes; nothing was done. Raise --max-file-size for larger files.", maxLine)}}}
			if !tooLong {
				res = exec(e.ctx, toolInput(line))
			}
			if encErr := enc.Encode(res); encErr != nil {
				return encErr
			}
			if flushErr := out.Flush(); flushErr != nil {
				return flushErr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tool: reading stdin: %w", err)
		}
	}
}

// toolLineMax is the longest input line runToolLines takes for a
// --max-file-size: the file text JSON-escaped (at most 6 bytes a byte, as
// \u00XX) plus room for the other members.
func toolLineMax(maxFileSize int64) int {
	const room = 64 << 10
	if maxFileSize > (1<<40)/6 {
		return 1 << 40
	}
	return int(maxFileSize)*6 + room
}

// readToolLine reads one line of at most max bytes (its newline included).
// A longer line is read to its end and dropped: tooLong is true.
func readToolLine(in *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := in.ReadSlice('\n')
		if !tooLong && len(line)+len(frag) <= max {
			line = append(line, frag...)
		} else {
			tooLong, line = true, nil
		}
		if err != bufio.ErrBufferFull {
			return line, tooLong, err
		}
	}
}

// toolInput unwraps a tool_use block to its input; anything else is passed
// through for the engine to judge.
func toolInput(line []byte) []byte {
	var block struct {
		Type    string          `json:"type"`
		Command json.RawMessage `json:"command"`
		Input   json.RawMessage `json:"input"`
	}
	if json.Unmarshal(line, &block) == nil && block.Command == nil && block.Type == "tool_use" && len(block.Input) > 0 {
		return block.Input
	}
	return line
}
