package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/memtool"
)

func init() { register(newToolCmd) }

func newToolCmd(e *env) *cobra.Command {
	var root string
	var overwrite bool
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
stops at the end of the input. /memories is the directory given by --root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if root == "" {
				return &exitError{code: 2, err: errors.New("tool: --root DIR is required")}
			}
			fsys, err := memtool.NewDirFS(root)
			if err != nil {
				return fmt.Errorf("tool: opening --root: %w", err)
			}
			defer fsys.Close()
			tool := memtool.New(fsys, memtool.Options{Overwrite: overwrite})
			return runToolLines(e, tool)
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "host directory that /memories maps to (created if missing)")
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "let create replace existing files instead of failing")
	return cmd
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
