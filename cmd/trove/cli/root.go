// Package cli holds the trove command tree: it parses flags and wires the
// packages that do the work. Each subcommand lives in its own file; the
// one list of them is commands, in this file.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
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
		newKeysCmd(e),
		newMigrateCmd(e),
		newToolCmd(e),
		newAgentCmd(e),
		newMCPCmd(e),
		newSyncCmd(e),
		newMountCmd(e),
		newSessionCmd(e),
		newExportCmd(e),
		newImportCmd(e),
		newApplyCmd(e),
	}
}

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main runs the trove command line with args (without the program name) and
// returns the process exit code: 0 on success, 2 on a usage error, 1 otherwise.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdin, stdout, stderr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "trove",
		Short:         "Self-hosted memory for AI agents",
		Long:          "Trove is a self-hosted memory layer for AI agents: the Claude memory tool engine, a memory stores API server, sessions, sync and mounts.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(commands(e)...)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "trove:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}
