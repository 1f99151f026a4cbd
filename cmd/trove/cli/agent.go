package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/claude"
	"github.com/trovehq/trove/sessionrun"
)

func newAgentCmd(e *env) *cobra.Command {
	var (
		root     string
		model    string
		maxTurns int
		system   string
		guards   guardFlags
		store    agentStore // --store: /memories is a memory store (agent_store.go)
	)
	cmd := &cobra.Command{
		Use:   `agent (--root DIR | --store NAME_OR_ID) [--model M] [--max-turns N] "prompt"`,
		Short: "Run Claude with the memory tool over a local directory",
		Long:  agentLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
				return &exitError{code: exitUsage, err: errors.New(`agent: give exactly one prompt argument, e.g. trove agent --root ./mem "remember that I like tea"`)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agentChecks(root, &store, &guards, maxTurns); err != nil {
				return err
			}
			tool, closeTool, err := agentTool(e, cmd, root, &store, &guards)
			if err != nil {
				return err
			}
			defer closeTool()
			if err := guards.sweep(e, tool); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			rec := sessionRecorder(e)
			if rec != nil {
				rec.Prompt(e.ctx, args[0])
			}
			r := agentRunner(e, tool, rec, model, system, maxTurns)
			_, _, err = r.Run(e.ctx, []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(args[0]))})
			err = agentRunError(e, rec, err, maxTurns)
			// Sweep again whatever the outcome: files the run left unread
			// for the whole period go, files it used were touched.
			if sweepErr := guards.sweep(e, tool); sweepErr != nil {
				err = errors.Join(err, fmt.Errorf("agent: %w", sweepErr))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "host directory that /memories maps to (created if missing)")
	store.register(cmd)
	cmd.Flags().StringVar(&model, "model", trove.ModelFromEnv(trove.AgentModelEnv, trove.DefaultAgentModel), "Claude model (env "+trove.AgentModelEnv+")")
	cmd.Flags().IntVar(&maxTurns, "max-turns", 20, "maximum number of requests to the Messages API")
	cmd.Flags().StringVar(&system, "system", "", "optional system prompt")
	guards.register(cmd)
	return cmd
}

// agentRunError warns when rec (nil outside a session) missed part of
// the conversation and returns the run's error err as agent's: a run
// stopped by --max-turns says so.
func agentRunError(e *env, rec *claude.Recorder, err error, maxTurns int) error {
	if rec != nil && rec.Err() != nil {
		fmt.Fprintf(e.stderr, "trove: the conversation was not fully recorded in session %s: %s\n", os.Getenv("TROVE_SESSION_ID"), trove.ErrorMessage(rec.Err()))
	}
	if errors.Is(err, claude.ErrMaxTurns) {
		return fmt.Errorf("agent: stopped after %s (raise --max-turns)", count(maxTurns, "turn", "turns"))
	} else if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// agentLong is agent's help text.
const agentLong = `Send the prompt to Claude with the memory tool enabled and execute its
memory operations on the directory given by --root (/memories maps to it),
or on the memory store given by --store (on the server or database every client
command uses, see trove status; every write is a version), until Claude stops asking for tools. Claude's text goes to standard output,
one line per memory call to standard error.

With --expire-after (--root only), files not read for that long are deleted
before the first request and again after the run, one "[expire] deleted
PATH" line each on standard error.

Needs ANTHROPIC_API_KEY in the environment (ANTHROPIC_BASE_URL is honoured).

Run inside a session on a server (trove sessions run sets
TROVE_SESSION_EVENTS_URL, TROVE_SESSION_ID and the session's TROVE_API_KEY),
the agent records its whole conversation in the session's transcript, where
a dream can read it.`

// agentChecks refuses flags of trove agent that cannot work, as usage
// errors.
func agentChecks(root string, store *agentStore, guards *guardFlags, maxTurns int) error {
	if (root == "") == !store.enabled() {
		return &exitError{code: exitUsage, err: errors.New("agent: give exactly one of --root DIR and --store NAME_OR_ID")}
	}
	if err := guards.validate("agent"); err != nil {
		return err
	}
	if store.enabled() && guards.expireAfter > 0 {
		return &exitError{code: exitUsage, err: errors.New("agent: --expire-after needs access times, which a memory store does not track; use it with --root")}
	}
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		return &exitError{code: exitUsage, err: errors.New("agent: ANTHROPIC_API_KEY is not set; export your Anthropic API key to run the agent (trove tool works offline)")}
	}
	if maxTurns < 1 {
		return &exitError{code: exitUsage, err: errors.New("agent: --max-turns must be at least 1")}
	}
	return nil
}

// agentTool is the memory tool over --store or --root, with the function
// that releases what it opened.
func agentTool(e *env, cmd *cobra.Command, root string, store *agentStore, guards *guardFlags) (*memtool.Tool, func(), error) {
	if store.enabled() {
		tool, closeStore, err := store.open(e.ctx, cmd, guards.options())
		if err != nil {
			return nil, nil, fmt.Errorf("agent: %w", err)
		}
		return tool, func() { closeStore() }, nil
	}
	fsys, err := memtool.NewDirFS(root)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: opening --root: %w", err)
	}
	return memtool.New(fsys, guards.options()), func() { fsys.Close() }, nil
}

// agentRunner is the Claude loop of trove agent over tool: Claude's text
// to stdout, one line per memory call to stderr, everything to the session
// recorder rec when there is one.
func agentRunner(e *env, tool *memtool.Tool, rec *claude.Recorder, model, system string, maxTurns int) *claude.Runner {
	var stderrMu sync.Mutex
	client := anthropic.NewClient() // reads ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
	return &claude.Runner{
		Client:   &client,
		Tool:     tool,
		Model:    anthropic.Model(model),
		MaxTurns: maxTurns,
		System:   system,
		OnMessage: func(m *anthropic.Message) {
			if rec != nil {
				rec.Message(e.ctx, m)
			}
			for _, b := range m.Content {
				if b.Type == "text" {
					fmt.Fprintln(e.stdout, b.AsText().Text)
				}
			}
		},
		OnToolResult: func(u anthropic.ToolUseBlock, res memtool.Result) {
			if rec != nil {
				rec.ToolResult(e.ctx, u, res)
			}
			status := "ok"
			if res.IsError {
				status = "error: " + firstLine(res.Text())
			}
			// The calls of one turn report concurrently.
			stderrMu.Lock()
			defer stderrMu.Unlock()
			fmt.Fprintf(e.stderr, "[memory] %s -> %s\n", describeCall(u.Input), status)
		},
	}
}

// sessionRecorder returns a recorder of the conversation into the session
// trove session run started this agent in (TROVE_SESSION_EVENTS_URL, with
// TROVE_SESSION_ID and the session's TROVE_API_KEY), or nil outside one.
func sessionRecorder(e *env) *claude.Recorder {
	url, id, key := os.Getenv(sessionrun.EventsURLEnv), os.Getenv("TROVE_SESSION_ID"), os.Getenv("TROVE_API_KEY")
	if url == "" || id == "" || key == "" {
		return nil
	}
	base, ok := strings.CutSuffix(url, "/trove/v1/sessions/"+id+"/events")
	if !ok {
		fmt.Fprintf(e.stderr, "trove: %s=%s is not session %s's events endpoint; the conversation is not recorded\n", sessionrun.EventsURLEnv, url, id)
		return nil
	}
	c := httpapi.NewClient(base, key)
	return &claude.Recorder{Append: func(ctx context.Context, evs []trove.NewSessionEvent) ([]trove.SessionEvent, error) {
		return c.AppendEvents(ctx, id, evs)
	}}
}

// describeCall renders a memory tool input briefly, e.g. "view /memories".
func describeCall(input []byte) string {
	var in struct {
		Command string `json:"command"`
		Path    string `json:"path"`
		OldPath string `json:"old_path"`
		NewPath string `json:"new_path"`
	}
	_ = json.Unmarshal(input, &in)
	if in.Command == "rename" {
		return fmt.Sprintf("rename %s %s", in.OldPath, in.NewPath)
	}
	return strings.TrimSpace(in.Command + " " + in.Path)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
