//go:build !linux

package pgtest

import "os/exec"

// postmasterAttr: only Linux has a parent-death signal; elsewhere a
// postmaster outlives a test process that dies without calling Main's
// cleanup.
func postmasterAttr(*exec.Cmd) {}
