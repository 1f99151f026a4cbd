package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/memtool"
)

func newToolCmd(e *env) *cobra.Command {
	var root string
	var guards guardFlags
	cmd := &cobra.Command{
		Use:   "tool --root DIR",
		Short: "Execute memory tool calls read as JSON lines on stdin",
		Long: `Execute Claude memory tool (memory_20250818) calls against a local directory.

Each line of standard input is one tool input, e.g.
  {"command":"view","path":"/memories"}
(a whole tool_use block {"type":"tool_use","input":{...}} is accepted too).
For each non-blank line one JSON line is written to standard output:
  {"is_error":false,"content":"..."}
where content is a string for text results and an array of content blocks
for images. A malformed line gets an is_error result; the command only
stops at the end of the input. /memories is the directory given by --root.

With --expire-after, files not read for that long are deleted before the
first line is read, one "[expire] deleted PATH" line each on standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if root == "" {
				return &exitError{code: exitUsage, err: errors.New("tool: --root DIR is required")}
			}
			if err := guards.validate("tool"); err != nil {
				return err
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
			return runToolLines(e, tool)
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "host directory that /memories maps to (created if missing)")
	guards.register(cmd)
	return cmd
}

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

// runToolLines executes one tool call per input line until EOF.
func runToolLines(e *env, tool *memtool.Tool) error {
	in := bufio.NewReader(e.stdin)
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if encErr := enc.Encode(tool.Execute(e.ctx, toolInput(line))); encErr != nil {
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
