//go:build unix

package sessionrun

import (
	"os"
	"syscall"
)

// stopChild asks the agent to stop (SIGTERM); Run kills it after waitDelay.
func stopChild(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
