package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// confirm guards an irreversible command: with --yes it goes ahead; on a
// terminal it asks, and goes ahead only on "y" or "yes"; without a
// terminal and without --yes it refuses (a usage error, exit 2) saying to
// pass --yes. what says what would be lost.
func confirm(e *env, cmd *cobra.Command, yes bool, what string) error {
	if yes {
		return nil
	}
	in, ok := e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return commandUsageError(cmd, fmt.Sprintf("%s: %s; add --yes to confirm", commandName(cmd), what))
	}
	fmt.Fprintf(e.stderr, "%s.\nContinue? [y/N] ", what)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: not confirmed; nothing was changed", commandName(cmd))}
}

// commandName is cmd's path without the program name ("stores delete").
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// nameArg returns the name a create command was given, as its one
// positional argument or as --name (the same value twice is fine); neither,
// or two different names, is a usage error.
func nameArg(cmd *cobra.Command, args []string, flag string) (string, error) {
	byFlag := cmd.Flags().Changed("name")
	switch {
	case len(args) == 1 && byFlag && args[0] != flag:
		return "", commandUsageError(cmd, fmt.Sprintf("%s: the name is given twice (%q and --name %q): give it once", commandName(cmd), args[0], flag))
	case len(args) == 1:
		return args[0], nil
	case byFlag && flag != "":
		return flag, nil
	}
	return "", commandUsageError(cmd, commandName(cmd)+": give the name, as NAME or --name NAME")
}
