// Package cli holds the trove command tree. Each subcommand lives in its own
// file and registers itself with register in an init function, so that
// subcommands can be added without touching this file.
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

var registry []func(*env) *cobra.Command

// register adds a subcommand constructor; call it from an init function.
func register(f func(*env) *cobra.Command) { registry = append(registry, f) }

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
	for _, f := range registry {
		root.AddCommand(f(e))
	}
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
