// Package cli holds the trove command tree: it parses flags and wires the
// packages that do the work. Each subcommand lives in its own file; the
// one list of them is commands, in this file.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
)

// env is what every subcommand receives: the process's standard streams and
// a context cancelled on SIGINT/SIGTERM.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// commands returns every subcommand of trove: adding one means adding its
// constructor here.
func commands(e *env) []*cobra.Command {
	return []*cobra.Command{
		newServeCmd(e),
		newLoginCmd(e),
		newLogoutCmd(e),
		newStatusCmd(e),
		newStoresCmd(e),
		newMemoriesCmd(e),
		newSearchCmd(e),
		newVersionsCmd(e),
		newSessionsCmd(e),
		newDreamsCmd(e),
		newAgentsCmd(e),
		newEnvironmentsCmd(e),
		newWebhooksCmd(e),
		newKeysCmd(e),
		newMigrateCmd(e),
		newToolCmd(e),
		newAgentCmd(e),
		newMCPCmd(e),
		newSyncCmd(e),
		newMountCmd(e),
		newExportCmd(e),
		newImportCmd(e),
		newApplyCmd(e),
		newVersionCmd(e),
		newHealthcheckCmd(e),
		newDiffCmd(e),
		newRollbackCmd(e),
		newAuditCmd(e),
		newWorkerCmd(e),
		newBackupCmd(e),
		newRestoreCmd(e),
	}
}

// Exit codes, stated once in the root help.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
	exitConflict = 4
)

const exitCodesHelp = `Exit codes: 0 success, 1 error, 2 usage (bad flags or arguments, no target),
3 not found, 4 conflict (the content changed since it was read, or the path is
taken).`

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a usage error (exit code 2).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// commandUsageError is a usage error (exit 2) with cmd's usage line.
func commandUsageError(cmd *cobra.Command, msg string) error {
	return &exitError{code: exitUsage, err: withUsage(cmd, msg)}
}

// Main runs the trove command line with args (without the program name) and
// returns the process exit code (see exitCodesHelp).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdin, stdout, stderr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "trove",
		Short: "Self-hosted memory for AI agents",
		Long: "Trove is a self-hosted memory layer for AI agents: the Claude memory tool engine, a memory stores API server, sessions, sync and mounts.\n\n" +
			"Start a server with trove serve, point the client at it with trove login URL, then\n" +
			"use trove stores, trove memories, trove versions and trove sessions.\n\n" +
			targetRule + "\n\n" + exitCodesHelp,
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          unknownCommand,
		RunE:          helpRun,
	}
	root.SetVersionTemplate("trove {{.Version}}\n")
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(commands(e)...)
	suggestSingulars(root)
	suggestSubcommands(root)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: withUsage(cmd, err.Error())}
	})
	wrapArgs(root)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	msg := errorText(err)
	if t := targetOf(cmd); t != nil {
		msg = withTarget(msg, err, t)
	}
	fmt.Fprintln(stderr, "trove: "+msg)
	return code
}

// wrapArgs makes every argument-count error of cmd and its subcommands a
// usage error that shows the command's usage line.
func wrapArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				msg := err.Error()
				if strings.HasPrefix(msg, "accepts ") || strings.HasPrefix(msg, "requires ") || strings.HasPrefix(msg, "received ") {
					msg = fmt.Sprintf("%s: wrong number of arguments (%d given)", c.CommandPath(), len(args))
				}
				return &exitError{code: exitUsage, err: withUsage(c, msg)}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		wrapArgs(sub)
	}
}

// withUsage adds cmd's usage line and where to read more to msg.
func withUsage(cmd *cobra.Command, msg string) error {
	return fmt.Errorf("%s\nusage: %s\nrun %q for more", msg, cmd.UseLine(), cmd.CommandPath()+" --help")
}

// exitCode maps err to the process exit code.
func exitCode(err error) int {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag") {
		return exitUsage
	}
	switch trove.ErrorCode(err) {
	case trove.ENOTFOUND:
		return exitNotFound
	case trove.EPRECONDITION, trove.EPATHCONFLICT, trove.ECONFLICT:
		return exitConflict
	}
	return exitFailed
}

// errorText renders err for a person: the message of a *trove.Error without
// its code name, internal causes only where they help (an unreachable
// server, a local failure), and no repeated "trove:" prefix.
func errorText(err error) string {
	s := err.Error()
	if te, ok := errors.AsType[*trove.Error](err); ok {
		repl := te.Message
		if te.Err != nil && (te.Code == trove.EUNAVAILABLE || te.Code == trove.EINTERNAL) {
			cause := te.Err.Error()
			if oe, ok := errors.AsType[*net.OpError](te.Err); ok {
				cause = oe.Error()
			}
			repl += ": " + cause
		}
		s = strings.Replace(s, te.Error(), repl, 1)
	}
	for strings.HasPrefix(s, "trove: ") {
		s = strings.TrimPrefix(s, "trove: ")
	}
	return s
}

// withTarget adds the target to the message of an error that depends on
// it: an unreachable server or database, a refused credential.
func withTarget(msg string, err error, t *target) string {
	switch trove.ErrorCode(err) {
	case trove.EUNAVAILABLE:
		if t.remote() {
			return fmt.Sprintf("cannot reach the %s: %s; start it with trove serve, or point the client elsewhere (trove login URL)", t, msg)
		}
		return fmt.Sprintf("%s: %s", t, msg)
	case trove.EUNAUTHENTICATED:
		if t.remote() {
			return fmt.Sprintf("the %s refused the API key from %s: %s; run trove login %s with a valid key", t, t.keyFrom, msg, t.url)
		}
	}
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return fmt.Sprintf("%s (on %s)", msg, t.where())
	}
	return msg
}

// unknownCommand is the Args of the root and of every group: a word that names no command is
// refused with cobra's "did you mean" suggestions, which cobra.NoArgs
// leaves out.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := slices.Compact(cmd.SuggestionsFor(args[0])); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return errors.New(msg)
}

// suggestSubcommands makes every command group (a command with
// subcommands takes no arguments of its own) refuse an unknown
// subcommand with suggestions (unknownCommand), within cobra's usual edit
// distance of 2 ("stores lst", "memories lis", "sesions").
func suggestSubcommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() {
		cmd.SuggestionsMinimumDistance = 2
		cmd.Args = unknownCommand
	}
	for _, sub := range cmd.Commands() {
		suggestSubcommands(sub)
	}
}

// suggestSingulars makes each plural noun command (stores, memories,
// sessions…) the suggestion for its singular, which is further from it
// than cobra's edit distance reaches for "memory".
func suggestSingulars(root *cobra.Command) {
	for _, c := range root.Commands() {
		name := c.Name()
		switch {
		case strings.HasSuffix(name, "ies"):
			c.SuggestFor = append(c.SuggestFor, strings.TrimSuffix(name, "ies")+"y")
		case strings.HasSuffix(name, "s") && len(name) > 2:
			c.SuggestFor = append(c.SuggestFor, strings.TrimSuffix(name, "s"))
		}
	}
}
