// Command trove is the self-hosted memory layer for AI agents.
package main

import (
	"os"

	"github.com/trovehq/trove/cmd/trove/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
