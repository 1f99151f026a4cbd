//go:build !unix

package sessionrun

import "os"

// stopChild stops the agent: where there is no SIGTERM (Windows), it is
// killed at once.
func stopChild(p *os.Process) error { return p.Kill() }
